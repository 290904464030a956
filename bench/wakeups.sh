#!/usr/bin/env bash
# System calls, context switches and wake-ups sent to another CPU per IO of fio and
# storbench, counted by `perf stat` over the whole process tree (helper threads and fio's job
# processes included): how often each tool sleeps and wakes, and how many of those wake-ups
# cross to the other CPU (an inter-processor interrupt, `ipi:ipi_send_cpu`; on a VM each is
# a trip through the hypervisor), which timings on a shared machine hide.
#
#   bench/wakeups.sh                         # posixaio 4k randread QD32, 1 job, /dev/shm
#   bench/wakeups.sh --ioengine=posixaio --iodepth=1       # arguments replace the engine's
#   BASE=/path/to/older/storbench bench/wakeups.sh          # a third column: before a change
#
# Each tool runs ROUNDS times (default 5, RUNTIME s each, default 2), interleaved; printed
# per tool: the medians of IOPS, and of futex calls, context switches, IPIs and CPU
# (task-clock) per IO.
# CPU here includes start-up (fio's is about 0.17 s), as bench/engines.sh's does.
#
# Environment: STORBENCH (default: built here with cargo --release), BASE, ROUNDS, RUNTIME;
# CPUS, a taskset CPU list both tools run on (CPUS=1: one CPU, so no wake-up crosses CPUs).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
ROUNDS=${ROUNDS:-5}
RUNTIME=${RUNTIME:-2}
SHM_FILE=/dev/shm/storbench-wakeups.$$
WORK=$(mktemp -d)
trap 'rm -f "$SHM_FILE"; rm -rf "$WORK"' EXIT

for tool in perf fio jq; do
    command -v "$tool" >/dev/null || { echo "wakeups.sh: $tool is missing" >&2; exit 2; }
done
if [ -z "${STORBENCH:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p storbench)
    STORBENCH="$CARGO_TARGET_DIR/release/storbench"
fi
fio --name=layout --filename="$SHM_FILE" --rw=write --bs=1m --size=1g --ioengine=psync \
    --output=/dev/null >/dev/null

args=(--name=shm "--filename=$SHM_FILE" --rw=randread --bs=4k --time_based "--runtime=$RUNTIME"
    --group_reporting)
if [ $# -gt 0 ]; then args+=("$@"); else args+=(--ioengine=posixaio --iodepth=32); fi

# one TOOL: "futex/IO cs/IO cpu_ns/IO ipi/IO iops" of one run (TOOL: fio, sb or base).
one() {
    local cmd
    case $1 in
        fio) cmd=(fio --output-format=json) ;;
        sb) cmd=("$STORBENCH" fio --no-save --output-format=json) ;;
        base) cmd=("$BASE" fio --no-save --output-format=json) ;;
    esac
    perf stat -x, -e syscalls:sys_enter_futex,context-switches,task-clock,ipi:ipi_send_cpu \
        -o "$WORK/perf" ${CPUS:+taskset -c "$CPUS"} setsid "${cmd[@]}" "${args[@]}" \
        >"$WORK/json" 2>"$WORK/err" || {
        echo "wakeups.sh: failed: ${cmd[*]} ${args[*]}" >&2; cat "$WORK/err" >&2; return 1; }
    local ios iops
    read -r ios iops < <(sed -n '/^{/,$p' "$WORK/json" |
        jq -r '[.jobs[] | .read.total_ios + .write.total_ios] as $n
               | [.jobs[] | .read.iops + .write.iops] as $i | "\($n | add) \($i | add)"')
    awk -F, -v n="$ios" -v iops="$iops" '!/^#/ && NF > 2 { v[$3] = $1 }
        END { printf "%.3f %.3f %.0f %.3f %.0f\n", v["syscalls:sys_enter_futex"] / n,
              v["context-switches"] / n, v["task-clock"] * 1e6 / n,
              v["ipi:ipi_send_cpu"] / n, iops }' "$WORK/perf"
}

tools=(fio sb)
[ -n "${BASE:-}" ] && tools+=(base)
echo "# $(nproc) CPUs, $(uname -r), $(fio --version); ${ROUNDS} interleaved rounds of ${RUNTIME} s;" \
    "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# arguments: ${args[*]}${CPUS:+; both tools on CPUs $CPUS (taskset)}"
for r in $(seq "$ROUNDS"); do
    # The order rotates, so no tool always runs first.
    for i in $(seq 0 $((${#tools[@]} - 1))); do
        t=${tools[$(((i + r) % ${#tools[@]}))]}
        echo "$t $(one "$t")" >>"$WORK/rounds"
    done
done
awk '
function median(list,   k, a, i, j, t) {
    k = split(list, a, " ")
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{ f[$1] = f[$1] " " $2; c[$1] = c[$1] " " $3; u[$1] = u[$1] " " $4; p[$1] = p[$1] " " $5
  o[$1] = o[$1] " " $6 }
END {
    printf "%-10s %10s %10s %12s %10s %10s\n", "tool", "IOPS", "futex/IO", "switches/IO", "IPIs/IO", "CPU ns/IO"
    n = split("fio sb base", order, " ")
    for (i = 1; i <= n; i++) if (order[i] in f)
        printf "%-10s %10d %10.2f %12.2f %10.2f %10d\n", order[i], median(o[order[i]]), median(f[order[i]]),
            median(c[order[i]]), median(p[order[i]]), median(u[order[i]])
}' "$WORK/rounds"
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
