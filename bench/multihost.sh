#!/usr/bin/env bash
# What coordinating ranks under MPI costs (docs/multihost.md): one job file of NGROUPS
# stonewall groups of tiny null-engine jobs, run by one storbench without mpirun, by one
# rank under mpirun and by RANKS ranks under mpirun, ROUNDS rounds in turn. Prints each
# way's median wall time, the ratios to the run without mpirun with the 95% interval of
# their geometric mean, and the added time per group (the issue's goal: under 20 ms per
# group with 4 ranks).
#
#   bench/multihost.sh
#
# Environment: NGROUPS (default 20), RANKS (default 3), ROUNDS (default 5), STORBENCH (the
# binary, default: a release build of this checkout with --features mpi).
set -euo pipefail
cd "$(dirname "$0")/.."

NGROUPS=${NGROUPS:-20}
RANKS=${RANKS:-3}
ROUNDS=${ROUNDS:-5}
command -v mpirun >/dev/null || { echo "bench/multihost.sh: mpirun not installed (apt-get install openmpi-bin)" >&2; exit 2; }
if [ -z "${STORBENCH:-}" ]; then
    CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target} cargo build --release -q -p storbench --features mpi
    STORBENCH=${CARGO_TARGET_DIR:-target}/release/storbench
fi

WORK=$(mktemp -d /tmp/storbench-bench-multihost.XXXXXX)
trap 'rm -rf "$WORK"' EXIT INT TERM
JOB=$WORK/groups.fio
{
    printf '[global]\nioengine=null\nrw=write\nbs=4k\nsize=1m\n'
    for g in $(seq 1 "$NGROUPS"); do printf '[g%d]\nstonewall\n' "$g"; done
} >"$JOB"

MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none)
now_ms() { date +%s%3N; }
# Wall time of one run in ms; the run's own output is discarded, a failure ends the bench.
timed() {
    local t0 t1
    t0=$(now_ms)
    "$@" fio "$JOB" --no-save >/dev/null
    t1=$(now_ms)
    echo $((t1 - t0))
}

for r in $(seq 1 "$ROUNDS"); do
    alone=$(timed "$STORBENCH")
    one=$(timed "${MPIRUN[@]}" -np 1 "$STORBENCH")
    many=$(timed "${MPIRUN[@]}" -np "$RANKS" "$STORBENCH")
    echo "$r $alone $one $many"
done | awk -v groups="$NGROUPS" -v ranks="$RANKS" '
function median(list,   k, a, i, j, t) {
    k = split(list, a, " ")
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (k % 2) ? a[(k + 1) / 2] + 0 : (a[k / 2] + a[k / 2 + 1]) / 2
}
function tq(df,   t) {
    if (df >= 30) return 2.04
    split("12.71 4.30 3.18 2.78 2.57 2.45 2.36 2.31 2.26 2.23 2.20 2.18 2.16 2.14 2.13 2.12 2.11 2.10 2.09 2.09 2.08 2.07 2.07 2.06 2.06 2.06 2.05 2.05 2.05", t, " ")
    return t[df]
}
# "median ratio [lo, hi]": the 95% interval of the geometric mean of the ratios.
function ratio(list,   k, a, i, sum, sq, mean, sd, half) {
    k = split(list, a, " "); sum = 0; sq = 0
    for (i = 1; i <= k; i++) { sum += log(a[i]); sq += log(a[i]) ^ 2 }
    mean = sum / k; half = 0
    if (k > 1) { sd = (sq - k * mean ^ 2) / (k - 1); sd = sd > 0 ? sqrt(sd) : 0; half = tq(k - 1) * sd / sqrt(k) }
    return sprintf("%.2f [%.2f, %.2f]", median(list), exp(mean - half), exp(mean + half))
}
{ a = a " " $2; o = o " " $3; m = m " " $4; ro = ro " " $3 / $2; rm = rm " " $4 / $2
  print "round " $1 ": alone " $2 " ms, mpirun -np 1 " $3 " ms, mpirun -np " ranks " " $4 " ms" }
END {
    printf "median wall time: alone %d ms, 1 rank %d ms, %d ranks %d ms (%d groups)\n", median(a), median(o), ranks, median(m), groups
    print "1 rank under mpirun / alone: " ratio(ro)
    print ranks " ranks under mpirun / alone: " ratio(rm)
    printf "added per group with %d ranks (medians, launch included): %.1f ms\n", ranks, (median(m) - median(a)) / groups
    printf "added per group by %d ranks over 1 rank, both under mpirun: %.1f ms\n", ranks, (median(m) - median(o)) / groups
}'
