#!/usr/bin/env bash
# storbench bonnie beside bonnie++ 2.00a: the same flags on the same directory, one after
# the other, in one run; prints both CSV lines and the storbench/bonnie++ ratio per column.
#
#   bench/bonnie.sh [DIR]            DIR defaults to a new directory under /tmp
#
# Environment:
#   BONNIE_FLAGS   flags for both tools (default: -s 2g -r 1024 -n 64)
#   MEM_LIMIT      memory (MiB) each run may use, page cache included, through a memory
#                  cgroup (root only; default: the -r value). Without it a 2 GiB file lives
#                  in this VM's 24 GiB page cache and the "device-bound" tests measure
#                  memory copies; with it they hit the disk, as -r says they should.
#                  MEM_LIMIT=0 turns it off.
#   IMG_DIR        where the fresh file systems' image lives (default /var/tmp, on disk;
#                  /dev/shm keeps the host disk's own noise out of file-test-only runs)
#   FRESH_FS       1 (default as root without a DIR argument): every run gets a newly made
#                  ext4 on a loop device (direct IO to an image in IMG_DIR), so no run
#                  creates its files while ext4 still scans the inodes the previous run
#                  deleted ("recently deleted" inodes slow creates for up to 5 minutes,
#                  which otherwise decides the file-test figures); 0 uses DIR as it is.
#   ROUNDS         rounds of (bonnie++, storbench), alternating who goes first (default 4:
#                  even, because on ext4 the second run of a round creates its files while
#                  the first run's deleted inodes are still held back, which slows it);
#                  each round's two runs are paired (they ran minutes apart at most), and
#                  the ratio printed is the median of the rounds' ratios
#   STORBENCH      the storbench binary (default: a release build of this checkout)
#   AA=1           A/A calibration: bonnie++ in both places, to see how far two runs of the
#                  same tool differ on this machine
#   PIN_CPU        a CPU number: both tools run on that CPU only (taskset), so neither is
#                  moved between CPUs (and their slab and page caches) at phase boundaries.
#                  On this 2-vCPU VM it did not narrow the rounds' spread (0.7-1.4 either
#                  way); the host's own load decides that
#   STRICT=1       exit 1 when a goal is missed
#
# Goals (issue "storbench bonnie"): the file tests' files/s at least 1.0x bonnie++'s, the
# block tests (Block write, Rewrite, Block read) within +-10%: they are device-bound, so
# equal figures show honest measurement. storbench runs with --compressible here so both
# tools write the same (near-zero) data; its default incompressible data is the same work
# on file systems without compression.
set -euo pipefail
cd "$(dirname "$0")/.."

FLAGS=${BONNIE_FLAGS:--s 2g -r 1024 -n 64}
RAM_FLAG=$(sed -n 's/.*-r \([0-9]*\).*/\1/p' <<<"$FLAGS")
MEM_LIMIT=${MEM_LIMIT:-${RAM_FLAG:-0}}
ROUNDS=${ROUNDS:-4}
BONNIE=$(command -v bonnie++ || echo /usr/sbin/bonnie++)
[ -x "$BONNIE" ] || { echo "bench/bonnie.sh: bonnie++ not installed (apt-get install bonnie++)" >&2; exit 2; }

if [ -z "${STORBENCH:-}" ]; then
    CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target} cargo build --release -q -p storbench
    STORBENCH=${CARGO_TARGET_DIR:-target}/release/storbench
fi

if [ $# -ge 1 ]; then
    DIR=$1
    OWN_DIR=0
else
    DIR=$(mktemp -d /tmp/storbench-bench-bonnie.XXXXXX)
    OWN_DIR=1
fi
cleanup() { [ "$OWN_DIR" = 1 ] && rm -rf "$DIR"; true; }
trap cleanup EXIT

AS_ROOT=()
[ "$(id -u)" -eq 0 ] && AS_ROOT=(-u root)

RESULTS=$(mktemp /tmp/storbench-bench-bonnie.csv.XXXXXX)
CGROUP=
trap 'cleanup; rm -f "$RESULTS"; [ -n "$CGROUP" ] && rmdir "$CGROUP"' EXIT

# A memory cgroup of MEM_LIMIT MiB (v2, else v1) that each run is started in.
if [ "$MEM_LIMIT" -gt 0 ] && [ "$(id -u)" -eq 0 ]; then
    if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
        CGROUP=/sys/fs/cgroup/storbench-bench-bonnie.$$
        mkdir "$CGROUP" && echo "${MEM_LIMIT}M" >"$CGROUP/memory.max"
    elif [ -d /sys/fs/cgroup/memory ]; then
        CGROUP=/sys/fs/cgroup/memory/storbench-bench-bonnie.$$
        mkdir "$CGROUP" && echo "${MEM_LIMIT}M" >"$CGROUP/memory.limit_in_bytes"
    fi
fi
PIN=()
[ -n "${PIN_CPU:-}" ] && PIN=(taskset -c "$PIN_CPU")
# limited CMD...: runs CMD inside the cgroup, if there is one, on PIN_CPU if set.
limited() {
    if [ -n "$CGROUP" ]; then
        sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CGROUP" "${PIN[@]}" "$@"
    else
        "${PIN[@]}" "$@"
    fi
}

FRESH_FS=${FRESH_FS:-$([ "$(id -u)" -eq 0 ] && [ "$OWN_DIR" = 1 ] && echo 1 || echo 0)}
IMG= LOOP= MNT=
if [ "$FRESH_FS" = 1 ]; then
    IMG=$(mktemp "${IMG_DIR:-/var/tmp}"/storbench-bench-bonnie.img.XXXXXX)
    MNT="$DIR"
fi
# fresh_fs: a new ext4 mounted on DIR for the next run.
fresh_fs() {
    [ "$FRESH_FS" = 1 ] || return 0
    truncate -s 0 "$IMG" && truncate -s 6G "$IMG"
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$IMG"
    LOOP=$(losetup --direct-io=on -f --show "$IMG")
    mount "$LOOP" "$MNT"
}
drop_fs() {
    [ -n "$LOOP" ] || return 0
    umount "$MNT" && losetup -d "$LOOP" && LOOP=
}
trap 'drop_fs; cleanup; rm -f "$RESULTS" ${IMG:+"$IMG"}; [ -n "$CGROUP" ] && rmdir "$CGROUP"' EXIT

# one_run ROUND LABEL CMD...: CMD on a fresh file system; its CSV line, labelled, kept.
one_run() {
    local round=$1 label=$2
    shift 2
    fresh_fs
    limited "$@" -d "$DIR" -q -m "$label" 2>/dev/null | tail -n 1 | sed "s/^/$round $label /" >>"$RESULTS"
    drop_fs
}
# shellcheck disable=SC2086
run_bonnie() { one_run "$1" bonnie++ "$BONNIE" $FLAGS "${AS_ROOT[@]}"; }
run_storbench() {
    if [ "${AA:-0}" = 1 ]; then
        # shellcheck disable=SC2086
        one_run "$1" storbench "$BONNIE" $FLAGS "${AS_ROOT[@]}"
    else
        # shellcheck disable=SC2086
        one_run "$1" storbench "$STORBENCH" --no-save bonnie --compressible $FLAGS
    fi
}

echo "bench/bonnie.sh: $ROUNDS round(s) of bonnie++ and storbench bonnie with: $FLAGS on $DIR"
echo "  memory per run: $([ -n "$CGROUP" ] && echo "$MEM_LIMIT MiB (cgroup)" || echo "not limited"); CPU: ${PIN_CPU:-any}; fresh ext4 per run: $([ "$FRESH_FS" = 1 ] && echo "yes (loop, direct IO, image on $(df --output=source "$(dirname "$IMG")" | tail -1))" || echo no); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= ROUNDS; r++)); do
    if ((r % 2)); then run_bonnie "$r"; run_storbench "$r"; else run_storbench "$r"; run_bonnie "$r"; fi
    echo "  round $r done"
done
echo
sed 's/^[0-9]* [a-z+]* //' "$RESULTS"
echo

# Per column: each tool's median (a +++++ round counts as missing); the median of the
# rounds' own storbench/bonnie++ ratios, which cancels the machine's slow drifts (the goal
# is judged on it); their geometric mean with a 95 % confidence interval (t interval of the
# log ratios), which says whether a difference is larger than the rounds' scatter; and the
# lowest..highest round ratio with the number of rounds.
awk -F'[ ,]' -v strict="${STRICT:-0}" '
# Two-sided 95 % Student t quantile for df degrees of freedom.
function tq(df) {
    if (df >= 30) return 2.04
    split("12.71 4.30 3.18 2.78 2.57 2.45 2.36 2.31 2.26 2.23 2.20 2.18 2.16 2.14 2.13 2.12 2.11 2.10 2.09 2.09 2.08 2.07 2.07 2.06 2.06 2.06 2.05 2.05 2.05", t, " ")
    return t[df]
}
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    if (n == 0) return ""
    return (n % 2) ? a[(n + 1) / 2] + 0 : (a[n / 2] + a[n / 2 + 1]) / 2
}
BEGIN {
    split("putc put_block rewrite getc get_block seeks seq_create seq_stat seq_del ran_create ran_stat ran_del", names, " ")
    split("9 11 13 15 17 19 26 28 30 32 34 36", cols, " ")    # 0-based CSV field of each rate
    split("- block block - block - meta meta meta meta meta meta", goal, " ")
}
{
    round = $1; tool = $2; rounds[round] = 1
    for (i = 1; i <= 12; i++) {
        v = $(cols[i] + 3)
        if (v ~ /^[0-9.]+$/) { vals[tool, i] = vals[tool, i] " " v; by[tool, i, round] = v }
        else if (v == "+++++") fast[tool, i] = 1
    }
}
END {
    printf "%-11s %10s %10s %8s  %-22s %-18s %s\n", "column", "bonnie++", "storbench", "ratio", "geomean [95% CI]", "rounds", "goal"
    missed = 0
    for (i = 1; i <= 12; i++) {
        b = median(vals["bonnie++", i]); s = median(vals["storbench", i])
        ratios = ""
        for (r in rounds) if ((("bonnie++", i, r) in by) && (("storbench", i, r) in by) && by["bonnie++", i, r] > 0)
            ratios = ratios " " by["storbench", i, r] / by["bonnie++", i, r]
        q = median(ratios)
        spread = ""; geo = ""
        if (q != "") {
            n = split(ratios, rs, " "); lo = rs[1]; hi = rs[1]; sum = 0; sq = 0
            for (k = 1; k <= n; k++) {
                if (rs[k] < lo) lo = rs[k]; if (rs[k] > hi) hi = rs[k]
                sum += log(rs[k]); sq += log(rs[k]) ^ 2
            }
            spread = sprintf("%.2f..%.2f (%d)", lo, hi, n)
            mean = sum / n; geo = sprintf("%.2fx", exp(mean))
            if (n > 1) {
                sd = sqrt((sq - n * mean ^ 2) / (n - 1)); half = tq(n - 1) * sd / sqrt(n)
                geo = sprintf("%.2fx [%.2f..%.2f]", exp(mean), exp(mean - half), exp(mean + half))
            }
        }
        ratio = "n/a"; verdict = ""
        if (q != "") {
            # Three decimals: the goal is judged on this value, so 0.998 must not print as 1.00.
            ratio = sprintf("%.3fx", q)
            if (goal[i] == "block") verdict = (q >= 0.9 && q <= 1.1) ? "ok (within 10%)" : "MISSED (within 10%)"
            else if (goal[i] == "meta") verdict = (q >= 1.0) ? "ok (>= 1.0x)" : "MISSED (>= 1.0x)"
            else verdict = "-"
            if (verdict ~ /MISSED/) missed++
        } else if (fast["bonnie++", i] || fast["storbench", i]) {
            verdict = "+++++ in some rounds (under 0.5 s: use more files or a bigger -s)"
        }
        printf "%-11s %10s %10s %8s  %-22s %-18s %s\n", names[i], (b == "" ? "-" : sprintf("%.0f", b)), (s == "" ? "-" : sprintf("%.0f", s)), ratio, geo, spread, verdict
    }
    if (missed) printf "\n%d goal(s) missed\n", missed
    exit (strict && missed) ? 1 : 0
}' "$RESULTS"
