#!/usr/bin/env bash
# User-space instructions per IO of fio and storbench, counted by valgrind's callgrind: a
# load-independent figure where timings on a shared machine scatter.
#
#   bench/instructions.sh                      # the engine matrix at iodepth 1 and 32
#   ENGINES="posixaio" DEPTHS=32 bench/instructions.sh
#   ARTICLE=1 bench/instructions.sh            # the article's posixaio command instead
#
# Each tool runs twice under callgrind (every thread and, for fio, every forked job
# process), with io_size SMALL and LARGE per job; the difference in instructions over the
# difference in IOs is the cost of one IO, without start-up, lay-out and buffer filling.
# Kernel work (the system calls themselves) is not counted: compare it with strace or perf.
#
# Environment: STORBENCH (default: built here with cargo --release), ENGINES (default sync
# psync pvsync2 io_uring libaio posixaio mmap), DEPTHS (default "1 32"), SMALL and LARGE
# (default 32m and 96m), EXT4_DIR for the article (default /var/tmp).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
ENGINES=${ENGINES:-sync psync pvsync2 io_uring libaio posixaio mmap}
DEPTHS=${DEPTHS:-1 32}
SMALL=${SMALL:-32m}
LARGE=${LARGE:-96m}
EXT4_DIR=${EXT4_DIR:-/var/tmp}
SHM_FILE=/dev/shm/storbench-instructions.$$
WORK=$(mktemp -d)
ART_DIR=""
cleanup() { rm -f "$SHM_FILE"; rm -rf "$WORK"; [ -z "$ART_DIR" ] || rm -rf "$ART_DIR"; }
trap cleanup EXIT

for tool in valgrind fio jq; do
    command -v "$tool" >/dev/null || { echo "instructions.sh: $tool is missing (apt-get install $tool)" >&2; exit 2; }
done
if [ -z "${STORBENCH:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p storbench)
    STORBENCH="$CARGO_TARGET_DIR/release/storbench"
fi

# count TOOL IO_SIZE ARGS...: "ios instructions" of one run under callgrind.
count() {
    local tool=$1 size=$2 out
    shift 2
    out="$WORK/$tool.$size"
    rm -f "$out".cg.*
    local cmd=(fio --output-format=json)
    [ "$tool" = sb ] && cmd=("$STORBENCH" fio --no-save --output-format=json)
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$out.cg.%p" \
        "${cmd[@]}" "$@" "--io_size=$size" >"$out.json" 2>"$out.err" || {
        echo "instructions.sh: failed: ${cmd[*]} $*" >&2
        tail -5 "$out.err" >&2
        return 1
    }
    local ios ir
    ios=$(sed -n '/^{/,$p' "$out.json" | jq '[.jobs[] | .read.total_ios + .write.total_ios] | add')
    ir=$(cat "$out".cg.* | awk '/^summary:/ { s += $2 } END { print s }')
    echo "$ios $ir"
}

row() {
    local name=$1 f s
    shift
    f=$(per_io_args fio "$@") && s=$(per_io_args sb "$@") || return 1
    # fio's parent polls its jobs over time, so a slower LARGE run can even count less:
    # such a row says so instead of printing a ratio.
    awk -v n="$name" -v f="$f" -v s="$s" 'BEGIN {
        if (f <= 0 || s <= 0) printf "%-30s %12d %12d  n/a (noise above the IOs: rerun or raise LARGE)\n", n, f, s
        else printf "%-30s %12d %12d %6.2fx\n", n, f, s, s / f
    }'
}

# per_io_args TOOL ARGS...: as per_io, the job's arguments given before the size.
per_io_args() {
    local tool=$1 a b
    shift
    a=$(count "$tool" "$SMALL" "$@") || return 1
    b=$(count "$tool" "$LARGE" "$@") || return 1
    echo "$a $b" | awk '{ printf "%.0f\n", ($4 - $2) / ($3 - $1 > 0 ? $3 - $1 : 1) }'
}

echo "# user-space instructions per IO (callgrind), $(fio --version), $("$STORBENCH" --version | head -1)"
printf '%-30s %12s %12s %7s\n' workload "fio" "storbench" ratio
if [ "${ARTICLE:-0}" = 1 ]; then
    ART_DIR=$(mktemp -d -p "$EXT4_DIR" storbench-article.XXXXXX)
    row "article randrw 12 jobs" --directory="$ART_DIR" --bs=128k --direct=1 --gtod_reduce=1 \
        --ioengine=posixaio --iodepth=32 --group_reporting --name=randrw --numjobs=12 \
        --rw=randrw --size=256M
    exit 0
fi
fio --name=layout --filename="$SHM_FILE" --rw=write --bs=1m --size=1g --ioengine=psync \
    --output=/dev/null >/dev/null
for eng in $ENGINES; do
    for qd in $DEPTHS; do
        row "$eng qd$qd shm" --name=shm --filename="$SHM_FILE" --size=1g --bs=4k \
            --rw=randread "--ioengine=$eng" "--iodepth=$qd"
    done
done
