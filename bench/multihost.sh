#!/usr/bin/env bash
# What coordinating ranks under MPI costs (docs/multihost.md). Job files of 1 and of NGROUPS
# stonewall groups of tiny null-engine jobs, each run by one storbench without mpirun and by
# RANKS ranks under mpirun, ROUNDS rounds with the four runs interleaved in each. Prints:
#   - the cost per group: what the NGROUPS-1 extra groups add with RANKS ranks, minus what
#     they add alone, divided by NGROUPS-1 (the per-group barrier and everything else a
#     group does on every rank); median and 95% interval over the rounds;
#   - the launch: mpirun starting RANKS ranks and MPI's initialisation, the clock check and
#     the final gather of the results (the 1-group run under mpirun minus the one alone);
#   - the issue's own figure, launch included: (RANKS ranks - alone) / NGROUPS for the
#     NGROUPS-group file (goal: under 20 ms per group with 4 ranks).
#
#   bench/multihost.sh                      # about a minute on a quiet 2-CPU machine
#
# Environment: NGROUPS (default 20), RANKS (default 4), ROUNDS (default 10), STORBENCH (the
# binary, default: a release build of this checkout with --features mpi), MPIRUN_ARGS (more
# mpirun options, e.g. "--mca pml ob1").
set -euo pipefail
cd "$(dirname "$0")/.."

NGROUPS=${NGROUPS:-20}
RANKS=${RANKS:-4}
ROUNDS=${ROUNDS:-10}
command -v mpirun >/dev/null || { echo "bench/multihost.sh: mpirun not installed (apt-get install openmpi-bin)" >&2; exit 2; }
[ "$NGROUPS" -ge 2 ] || { echo "bench/multihost.sh: NGROUPS must be at least 2" >&2; exit 2; }
if [ -z "${STORBENCH:-}" ]; then
    CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target} cargo build --release -q -p storbench --features mpi
    STORBENCH=${CARGO_TARGET_DIR:-target}/release/storbench
fi

WORK=$(mktemp -d /tmp/storbench-bench-multihost.XXXXXX)
trap 'rm -rf "$WORK"' EXIT INT TERM
jobfile() {
    printf '[global]\nioengine=null\nrw=write\nbs=4k\nsize=1m\n'
    for g in $(seq 1 "$1"); do printf '[g%d]\nstonewall\n' "$g"; done
}
jobfile 1 >"$WORK/one.fio"
jobfile "$NGROUPS" >"$WORK/many.fio"

# shellcheck disable=SC2206
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none ${MPIRUN_ARGS:-} -np "$RANKS")
now_us() { date +%s%6N; }
# Wall time of one run in µs; the run's own output is discarded, a failure ends the bench.
timed() {
    local job=$1 t0 t1
    shift
    t0=$(now_us)
    "$@" fio "$job" --no-save >/dev/null
    t1=$(now_us)
    echo $((t1 - t0))
}

echo "load before: $(uptime)"
for r in $(seq 1 "$ROUNDS"); do
    a1=$(timed "$WORK/one.fio" "$STORBENCH")
    m1=$(timed "$WORK/one.fio" "${MPIRUN[@]}" "$STORBENCH")
    an=$(timed "$WORK/many.fio" "$STORBENCH")
    mn=$(timed "$WORK/many.fio" "${MPIRUN[@]}" "$STORBENCH")
    echo "$r $a1 $an $m1 $mn"
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
# "median ms [lo, hi]": the 95% t interval of the mean of the rounds (values in ms).
function interval(list,   k, a, i, sum, sq, mean, sd, half) {
    k = split(list, a, " "); sum = 0; sq = 0
    for (i = 1; i <= k; i++) { sum += a[i]; sq += a[i] ^ 2 }
    mean = sum / k; half = 0
    if (k > 1) { sd = (sq - k * mean ^ 2) / (k - 1); sd = sd > 0 ? sqrt(sd) : 0; half = tq(k - 1) * sd / sqrt(k) }
    return sprintf("%.1f ms [%.1f, %.1f]", median(list), mean - half, mean + half)
}
{
    pg = (($5 - $4) - ($3 - $2)) / (groups - 1) / 1000
    launch = ($4 - $2) / 1000
    whole = ($5 - $3) / groups / 1000
    per = per " " pg; lau = lau " " launch; who = who " " whole
    printf "round %d: alone %.0f / %.0f ms, %d ranks %.0f / %.0f ms (1 / %d groups); per group %.1f ms\n", $1, $2 / 1000, $3 / 1000, ranks, $4 / 1000, $5 / 1000, groups, pg
}
END {
    print "cost per group, " ranks " ranks over alone (launch excluded): " interval(per)
    print "launch of " ranks " ranks (mpirun, MPI init, clock check, gather): " interval(lau)
    print "issue figure, " groups " groups, launch included, per group: " interval(who)
}'
echo "load after: $(uptime)"
