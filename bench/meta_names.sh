#!/bin/sh
# What checking each name of the name-relative metadata calls (`create_empty_in`, `stat_in`,
# `unlink_in` with a `RelPath`) costs bonnie's local file tests: two builds of the
# `meta_cost` example (crates/engines/examples/meta_cost.rs), before and after, run in
# turns (A B, B A, ...). Each run times the engine's calls against the bare libc calls in
# the same process, so a round's figure is the engine's rate as a share of libc's; the
# script prints, per operation, the median of the rounds' after/before ratios of that share
# and the 95 % interval of their geometric mean (1.00: no change).
#
# usage: bench/meta_names.sh BEFORE AFTER [DIR] [FILES] [ROUNDS]
#   BEFORE, AFTER: meta_cost binaries, e.g. built at two commits with
#     cargo build --release -p storbench-engines --example meta_cost
#     cp target/release/examples/meta_cost /tmp/meta_cost_after
#   DIR: where the files go (default /dev/shm: tmpfs, where the engine's share is largest)
#   FILES per run (default 50000), ROUNDS (default 6). Six rounds take about a minute.
#   SIDE=path in the environment compares the path calls (`create`, `stat`, `unlink` with
#   a `MetaPath`: the directory as root, each name a `RelPath` below it) instead.
set -eu
[ $# -ge 2 ] || { sed -n '2,18p' "$0"; exit 2; }
SIDE=${SIDE:-name}
case $SIDE in name | path) ;; *) echo "SIDE must be name or path" >&2; exit 2 ;; esac
BEFORE=$1 AFTER=$2 DIR=${3:-/dev/shm} FILES=${4:-50000} ROUNDS=${5:-6}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "$DIR/meta_names.XXXXXX")
OUT=$(mktemp)
trap 'rm -rf "$WORK" "$OUT"' EXIT INT TERM HUP

# The by-name (or by-path) rates (share of libc's) of one run: "create stat unlink".
rates() {
    "$1" "$WORK" "$FILES" 1 | awk -v side="$SIDE" '/rate vs libc/ {
        sub(/.*rate vs libc: /, ""); sub(".*by " side " ", ""); sub(/[,;].*/, "")
        printf "%s ", $0 } END { print "" }'
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
r=1
while [ "$r" -le "$ROUNDS" ]; do
    if [ $((r % 2)) -eq 1 ]; then
        a=$(rates "$BEFORE"); b=$(rates "$AFTER")
    else
        b=$(rates "$AFTER"); a=$(rates "$BEFORE")
    fi
    echo "$r $a $b" >>"$OUT"
    r=$((r + 1))
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for op in create:2 stat:3 unlink:4; do
    name=${op%:*} col=${op#*:}
    awk -v n="$name" -v c="$col" -v side="$SIDE" -f "$ROOT/bench/meta_names.awk" "$OUT"
done
