#!/usr/bin/env bash
# Engine speed goals, checked side by side against Debian's fio in one run, printed as ratios.
#
#   bench/engines.sh                       # every workload, 7 rounds of 5 s each
#   ROUNDS=3 RUNTIME=1 bench/engines.sh matrix   # a quick smoke run of the engine matrix
#   ENGINES="io_uring posixaio" bench/engines.sh matrix
#
# Workloads (issue #2 and #24 speed goals):
#   null    4k randread, ioengine=null, iodepth 1 and 32, numjobs 1 and 2   IOPS >= 1.5x fio
#   matrix  4k randread of a 1 GiB file in /dev/shm (page cache), each of ENGINES (default
#           sync psync pvsync2 io_uring libaio posixaio mmap) at iodepth 1 and 32, numjobs 1
#           and 2; then io_uring O_DIRECT on ext4 (EXT4_DIR) the same four ways
#                                                                         IOPS >= 1.0x, CPU/IO <= fio
#   psync   the matrix's psync QD1 1-job row alone                        IOPS >= 1.0x, CPU/IO <= fio
#   uring   the matrix's io_uring QD32 1-job row alone                    IOPS >= 1.0x, CPU/IO <= fio
#   direct  4k randread O_DIRECT, io_uring QD32, 1 GiB file on ext4, with the disk's own count
#                                                                         IOPS >= 1.0x, CPU/IO <= fio
#   verify  1 MiB sequential write + verify of a file in /dev/shm, verify=crc32c, md5,
#           sha256 (VERIFY_SIZE, default 1g); rate over the whole run   >= 1.0x fio
#   nbd     4k randread QD32 of nbdkit's memory plugin (1 GiB, written once by fio) on
#           127.0.0.1, --ioengine=nbd --uri=nbd://… (fio: libnbd)            IOPS >= 1.0x fio
#   article the TrueNAS article's randrw command (12 jobs x 256 MiB, posixaio QD32, O_DIRECT)
#           in EXT4_DIR, ramp ART_RAMP s, runtime ART_RUNTIME s
#                                             IOPS >= 1.0x, CPU/IO <= fio, peak Pss <= 0.5x fio
#
# Each workload runs ROUNDS times per tool, interleaved (fio, storbench, storbench, fio, ...:
# the order alternates, so neither always meets a cache the other warmed or the same moment
# of another process's load). Printed per workload: each tool's median IOPS, CPU per IO and
# peak Pss, and the median of the same-round ratios storbench/fio with the 95 % interval of
# their geometric mean (t interval of the log ratios): rounds taken at the same moment share
# the machine's load, so their ratio is steadier than the ratio of the medians. A goal is met
# ("ok") when the median ratio is on the goal's side, or "equal" when the interval holds
# 1.0 (not told apart from fio by the rounds' scatter); else "MISSED".
# Each run goes through bench/peakmem.py: CPU is user+sys of the whole process tree (every
# thread, io_uring workers, AIO helpers and fio's forked jobs included, start-up too, for both
# tools alike) divided by the IOs done; memory is the peak summed Pss of the process tree
# (fio forks one process per job, so /usr/bin/time's largest-process RSS would leave most of
# fio out).
#
# Environment:
#   RUNTIME     seconds per run (default 5)
#   ROUNDS      runs per tool and workload (default 7)
#   ENGINES     the matrix's engines (default: sync psync pvsync2 io_uring libaio posixaio mmap)
#   DEPTHS, JOBS  the matrix's iodepths and numjobs (default "1 32" and "1 2")
#   ROUNDS_LOG  file to append every round's figures to ("workload tool round iops ns/IO pss")
#   MARKDOWN    file the table is also written to as markdown, with the date, machine and
#               load at the start and the end, ready for docs/BENCHMARKS.md
#               (default /tmp/storbench-engines-DATE.md)
#   STORBENCH   storbench binary (default: built here with cargo --release)
#   EXT4_DIR    directory on ext4 for the O_DIRECT workloads (default /var/tmp)
#   ART_RAMP, ART_RUNTIME  the article's ramp_time and runtime (default 10 and 10)
#   CPUS        a taskset CPU list both tools run on, e.g. CPUS=1: on one CPU no wake-up
#               between a job and its helper threads crosses CPUs, so a row then compares
#               the tools' work without the scheduler's placement and the cost of an
#               inter-processor interrupt (on a VM, a trip through the hypervisor)
#   NBD_PORT    port for the nbd workload's nbdkit (default 10809)
#   FIO_EXTRA   extra arguments for fio only, e.g. FIO_EXTRA=--thread: fio's jobs then run as
#               threads of one process, as storbench's do (what sharing one process, and with
#               posixaio one glibc AIO pool, costs either tool)
#   ENGINE_LOOP=1  use crates/engines/examples/engine_loop instead of `storbench fio` (engine
#               overhead only, without the runner; for use before the CLI exists)
set -euo pipefail

RUNTIME=${RUNTIME:-5}
ROUNDS=${ROUNDS:-7}
ENGINES=${ENGINES:-sync psync pvsync2 io_uring libaio posixaio mmap}
DEPTHS=${DEPTHS:-1 32}
JOBS=${JOBS:-1 2}
EXT4_DIR=${EXT4_DIR:-/var/tmp}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
SHM_FILE=/dev/shm/storbench-engines-bench.$$
EXT4_FILE=$EXT4_DIR/storbench-engines-bench.$$
WORK=$(mktemp -d)
FAILED=0
MARKDOWN=${MARKDOWN:-/tmp/storbench-engines-$(date -u +%Y%m%dT%H%M%SZ).md}

cleanup() { rm -f "$SHM_FILE" "$EXT4_FILE"; rm -rf "$WORK"; }
trap cleanup EXIT

need() { command -v "$1" >/dev/null || { echo "engines.sh: $1 is missing (apt-get install $2)" >&2; exit 2; }; }
need fio fio
need jq jq
need python3 python3
PEAKMEM="$ROOT/bench/peakmem.py"

if [ "${ENGINE_LOOP:-0}" = 1 ]; then
    (cd "$ROOT" && cargo build --release -q -p storbench-engines --example engine_loop)
    LOOP="$CARGO_TARGET_DIR/release/examples/engine_loop"
    echo "# storbench side: engine_loop example (engine only, no runner, no histograms)"
else
    if [ -z "${STORBENCH:-}" ]; then
        (cd "$ROOT" && cargo build --release -q -p storbench)
        STORBENCH="$CARGO_TARGET_DIR/release/storbench"
    fi
    "$STORBENCH" fio --version >/dev/null 2>&1 || "$STORBENCH" fio --help >/dev/null 2>&1 || {
        echo "engines.sh: '$STORBENCH fio' does not run; try ENGINE_LOOP=1" >&2
        exit 2
    }
fi

# make_file PATH: 1 GiB of incompressible data, laid out once and read by both tools; synced
# so the first O_DIRECT round does not wait for the lay-out's writeback (which made the first
# tool's first round on ext4 a thousand times slower).
make_file() {
    [ -s "$1" ] && return
    fio --name=layout --filename="$1" --rw=write --bs=1m --size=1g --ioengine=psync \
        --end_fsync=1 --output=/dev/null >/dev/null
    # On a disk, one unmeasured second of O_DIRECT random reads, so the first measured round
    # does not meet a colder disk (or host cache) than the others.
    [ "$(stat -f -c %T "$(dirname "$1")")" = tmpfs ] ||
        fio --name=warm --filename="$1" --rw=randread --bs=4k --direct=1 --ioengine=psync \
            --runtime=1 --time_based --output=/dev/null >/dev/null
}

# timed OUT_PREFIX CMD...: runs CMD, JSON to OUT_PREFIX.json, "elapsed user sys pss_kb" to .time
timed() {
    local out=$1
    shift
    # setsid: each run its own session, so with autogroup scheduling storbench gets a CPU
    # share of its own like each of fio's forked jobs, not part of this script's.
    "$PEAKMEM" "$out.time" ${CPUS:+taskset -c "$CPUS"} setsid "$@" >"$out.json" 2>"$out.err" || {
        echo "engines.sh: failed: $*" >&2
        cat "$out.err" >&2
        return 1
    }
}

# json_ios FILE: total IOs (reads and writes) and IOPS over all jobs ("ios iops"). fio's
# nbd engine prints "fio: connected to NBD server" before the document: skipped.
json_ios() {
    sed -n '/^{/,$p' "$1" | jq -r '[.jobs[] | .read.total_ios + .write.total_ios] as $n
           | [.jobs[] | .read.iops + .write.iops] as $i | "\($n | add) \($i | add)"'
}

# measure TOOL NAME ARGS...: prints "iops cpu_ns_per_io rss_kb"
measure() {
    local tool=$1 name=$2
    shift 2
    local out="$WORK/$tool-${name//[^A-Za-z0-9]/_}"
    if [ "$tool" = fio ]; then
        # shellcheck disable=SC2086 # FIO_EXTRA is a list of words
        timed "$out" fio --output-format=json ${FIO_EXTRA:-} "$@" || return 1
    elif [ -n "${LOOP:-}" ]; then
        timed "$out" "$LOOP" "${LOOP_ARGS[@]}" || return 1
        sed -n 's/^iops=\([0-9]*\).* ios=\([0-9]*\).*/{"jobs":[{"read":{"iops":\1,"total_ios":\2}}]}/p' \
            "$out.json" >"$out.j2" && mv "$out.j2" "$out.json"
    else
        timed "$out" "$STORBENCH" fio --no-save --output-format=json "$@" || return 1
    fi
    read -r ios iops < <(json_ios "$out.json")
    read -r elapsed user sys rss <"$out.time"
    if [ "${WALL_RATE:-0}" = 1 ]; then
        # Write then read-back phases: the IOs over the whole run's wall time, the same
        # measure for both tools whatever each counts as a direction's runtime.
        iops=$(awk -v n="$ios" -v e="$elapsed" 'BEGIN { printf "%.0f", n / (e > 0 ? e : 1) }')
    fi
    awk -v ios="$ios" -v iops="$iops" -v u="$user" -v s="$sys" -v rss="$rss" \
        'BEGIN { printf "%.0f %.0f %d\n", iops, (u + s) * 1e9 / (ios > 0 ? ios : 1), rss }'
}

echo "# $(nproc) CPUs, $(uname -r), $(fio --version), $("${STORBENCH:-$LOOP}" --version 2>/dev/null | head -1)"
echo "# medians of $ROUNDS interleaved runs per tool, ${RUNTIME}s each; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "${FIO_EXTRA:-}" ] && echo "# fio runs with $FIO_EXTRA"
[ -n "${CPUS:-}" ] && echo "# both tools run on CPUs $CPUS (taskset)"
# fio forks each job into a process that calls setsid(), so with autogroup scheduling every
# fio job is a scheduling group of its own, while storbench's jobs are threads of one
# process in one group (each run starts in a session of its own, see `timed`). On an idle machine that changes nothing; on one kept busy by other
# processes' groups, N fio jobs get up to N shares of the CPUs against storbench's one.
if [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ]; then
    echo "# autogroup scheduling is on: under other load, fio's N job processes get N CPU shares" \
        "to storbench's one (multi-job IOPS then compare shares; CPU/IO still compares work)"
fi
printf '%-30s %10s %10s %-19s %8s %8s %-19s %7s %7s  %s\n' workload "fio IOPS" "sb IOPS" \
    "ratio [95% CI]" "fio ns" "sb ns" "CPU/IO [95% CI]" "fio PSS" "sb PSS" verdict
{
    echo "$(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) CPUs, kernel $(uname -r), $(fio --version)," \
        "medians of $ROUNDS interleaved rounds per tool, ${RUNTIME} s each; load average at" \
        "the start: $(cut -d' ' -f1-3 /proc/loadavg). Command: \`$(basename "$0") $*\`" \
        "(ROUNDS=$ROUNDS RUNTIME=$RUNTIME${FIO_EXTRA:+ FIO_EXTRA=$FIO_EXTRA}${CPUS:+ CPUS=$CPUS})."
    echo
    echo "| workload | fio IOPS | storbench IOPS | ratio [95 % interval] | fio CPU/IO | storbench CPU/IO | CPU ratio [95 %] | fio Pss | storbench Pss | verdict |"
    echo "|---|---:|---:|---|---:|---:|---|---:|---:|---|"
} >"$MARKDOWN"

# run_rounds NAME ARGS...: ROUNDS measurements per tool into RESULTS[tool,round]; fio goes
# first in odd rounds, storbench in even ones.
declare -A RESULTS
run_rounds() {
    local name=$1
    shift
    local r
    for r in $(seq "$ROUNDS"); do
        if [ $((r % 2)) = 1 ]; then
            RESULTS[fio,$r]=$(measure fio "$name" "$@") || return 1
            RESULTS[sb,$r]=$(measure sb "$name" "$@") || return 1
        else
            RESULTS[sb,$r]=$(measure sb "$name" "$@") || return 1
            RESULTS[fio,$r]=$(measure fio "$name" "$@") || return 1
        fi
    done
}
# md_name NAME: a workload's name as the markdown table spells it ("posixaio qd32 jobs2 shm"
# -> "posixaio QD32, 2 jobs, /dev/shm").
md_name() {
    sed -E 's/ qd([0-9]+)/ QD\1,/; s/ jobs1( |$)/ 1 job,\1/; s/ jobs([0-9]+)/ \1 jobs,/;
            s/ shm$/ \/dev\/shm/; s/ direct ext4$/ O_DIRECT ext4/; s/,$//' <<<"$1"
}
# compare NAME GOAL ARGS...: GOAL is "min_iops_ratio|- max_cpu_ratio|- band|- max_rss_ratio|-"
compare() {
    local name=$1 goals="$2 $3 $4 $5" r
    shift 5
    run_rounds "$name" "$@" || { FAILED=1; return; }
    for r in $(seq "$ROUNDS"); do
        echo "$r ${RESULTS[fio,$r]} ${RESULTS[sb,$r]}"
        # An `if`, not `&&`: under pipefail a last test that fails would fail the loop.
        if [ -n "${ROUNDS_LOG:-}" ]; then
            echo "$name|fio $r ${RESULTS[fio,$r]}|sb $r ${RESULTS[sb,$r]}" >>"$ROUNDS_LOG"
        fi
    done | awk -v n="$name" -v goals="$goals" -v md="$MARKDOWN" -v mdname="$(md_name "$name")" \
        -f "$ROOT/bench/ratios.awk" || FAILED=1
}

common=(--rw=randread --bs=4k --time_based "--runtime=$RUNTIME" --group_reporting)
SELECTED=("$@")
selected() { [ ${#SELECTED[@]} -eq 0 ] || [[ " ${SELECTED[*]} " == *" $1 "* ]]; }

if selected null; then
    for qd in 1 32; do
        for nj in 1 2; do
            # engine_loop runs one thread: no numjobs comparison in that mode.
            [ -n "${LOOP:-}" ] && [ "$nj" = 2 ] && continue
            LOOP_ARGS=(null /dev/null 1073741824 4096 "$qd" "$RUNTIME" rand)
            compare "null qd$qd jobs$nj" 1.5 - - - --name=null --ioengine=null --size=1g \
                "--iodepth=$qd" "--numjobs=$nj" "${common[@]}"
        done
    done
fi

if selected psync || selected uring || selected matrix; then
    make_file "$SHM_FILE"
    if selected psync; then
        LOOP_ARGS=(psync "$SHM_FILE" 1073741824 4096 1 "$RUNTIME" rand)
        compare "psync qd1 /dev/shm" 1.0 1.0 - - --name=shm --filename="$SHM_FILE" \
            --ioengine=psync --iodepth=1 "${common[@]}"
    fi
    if selected uring; then
        LOOP_ARGS=(io_uring "$SHM_FILE" 1073741824 4096 32 "$RUNTIME" rand)
        compare "io_uring qd32 /dev/shm" 1.0 1.0 - - --name=shm --filename="$SHM_FILE" \
            --ioengine=io_uring --iodepth=32 "${common[@]}"
    fi
fi

# The engine matrix: every local engine on the page cache (/dev/shm), then io_uring with
# O_DIRECT on ext4; iodepth 1 and 32, numjobs 1 and 2 (the clones read the same file).
if selected matrix && [ -z "${LOOP:-}" ]; then
    for eng in $ENGINES; do
        for qd in $DEPTHS; do
            for nj in $JOBS; do
                compare "$eng qd$qd jobs$nj shm" 1.0 1.0 - - --name=shm --filename="$SHM_FILE" \
                    "--ioengine=$eng" "--iodepth=$qd" "--numjobs=$nj" "${common[@]}"
            done
        done
    done
    if [ "$(stat -f -c %T "$EXT4_DIR")" != "ext2/ext3" ]; then
        echo "skip io_uring O_DIRECT rows: $EXT4_DIR is not ext4 (set EXT4_DIR)"
    else
        make_file "$EXT4_FILE"
        for qd in $DEPTHS; do
            for nj in $JOBS; do
                compare "io_uring qd$qd jobs$nj direct ext4" 1.0 1.0 - - --name=ext4 \
                    --filename="$EXT4_FILE" --ioengine=io_uring "--iodepth=$qd" "--numjobs=$nj" \
                    --direct=1 "${common[@]}"
            done
        done
    fi
fi

if selected direct; then
    fstype=$(stat -f -c %T "$EXT4_DIR")
    if [ "$fstype" != "ext2/ext3" ]; then
        echo "skip direct: $EXT4_DIR is $fstype, not ext4 (set EXT4_DIR)"
    else
        make_file "$EXT4_FILE"
        LOOP_ARGS=(io_uring "$EXT4_FILE" 1073741824 4096 32 "$RUNTIME" direct rand)
        compare "io_uring qd32 direct ext4" 1.0 1.0 - - --name=ext4 --filename="$EXT4_FILE" \
            --ioengine=io_uring --iodepth=32 --direct=1 "${common[@]}"
        # Honesty check independent of the other tool: the reads the kernel's disk statistics
        # counted during the last run, against the IOs the tool reported.
        for tool in fio sb; do
            jq -r --arg t "$tool" '"  \($t): reported \(.jobs[0].read.total_ios) reads, the disk counted \(.disk_util[0].read_ios // "n/a") (\(.disk_util[0].name // "no disk"))"' \
                "$WORK/$tool-io_uring_qd32_direct_ext4.json"
        done
    fi
fi

if selected verify; then
    VERIFY_FILE=/dev/shm/storbench-verify-bench.$$
    trap 'cleanup; rm -f "$VERIFY_FILE"' EXIT
    make_file "$VERIFY_FILE"
    WALL_RATE=1
    for t in crc32c md5 sha256; do
        compare "verify $t 1m seq /dev/shm" 1.0 - - - --name=verify --filename="$VERIFY_FILE" \
            --rw=write --bs=1m "--size=${VERIFY_SIZE:-1g}" --ioengine=psync "--verify=$t"
    done
    WALL_RATE=0
fi

if selected nbd; then
    need nbdkit nbdkit
    NBD_PORT=${NBD_PORT:-10809}
    nbdkit -f -i 127.0.0.1 -p "$NBD_PORT" memory 1G &
    NBDKIT_PID=$!
    # Stopped by its PID on every exit path.
    trap 'cleanup; kill "$NBDKIT_PID" 2>/dev/null || true' EXIT
    uri=nbd://127.0.0.1:$NBD_PORT/
    # Written once, so reads return data rather than the plugin's holes; retried until
    # nbdkit listens.
    for _ in $(seq 50); do
        fio --name=nbdfill --ioengine=nbd "--uri=$uri" --rw=write --bs=1M --size=1G \
            --iodepth=8 --output=/dev/null >/dev/null 2>&1 && break
        sleep 0.1
    done
    compare "nbd qd32 nbdkit memory" 1.0 - - - --name=nbd --ioengine=nbd "--uri=$uri" \
        --size=1g --iodepth=32 "${common[@]}"
    kill "$NBDKIT_PID" 2>/dev/null || true
    wait "$NBDKIT_PID" 2>/dev/null || true
fi

if selected article; then
    # Both tools use the same files (randrw.N.0 in ART_DIR), laid out by the first run.
    ART_DIR=$(mktemp -d -p "$EXT4_DIR" storbench-article.XXXXXX)
    trap 'cleanup; rm -rf "$ART_DIR"' EXIT
    compare "article randrw 12 jobs" 1.0 1.0 - 0.5 --directory="$ART_DIR" --bs=128k --direct=1 \
        --gtod_reduce=1 --ioengine=posixaio --iodepth=32 --group_reporting --name=randrw \
        --numjobs=12 "--ramp_time=${ART_RAMP:-10}" "--runtime=${ART_RUNTIME:-10}" --rw=randrw \
        --size=256M --time_based
fi

echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); markdown table: $MARKDOWN"
echo >>"$MARKDOWN"
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)." >>"$MARKDOWN"
exit $FAILED
