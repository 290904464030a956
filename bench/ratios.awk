# One workload's rounds into one line of bench/engines.sh's table.
#
# Input, one line per round: "round fio_iops fio_ns_per_io fio_pss sb_iops sb_ns_per_io sb_pss".
# Variables: n (the workload's name), goals ("min_iops_ratio max_cpu_ratio band max_pss_ratio",
# "-" for none), md (optional: a file to append the same row to as a markdown table row,
# under the name mdname). Prints each tool's medians, the median of the same-round ratios
# with the 95 % interval of their geometric mean (t interval of the log ratios), and the
# verdict; exits 1 when a goal is missed.

# Two-sided 95 % Student t quantile for df degrees of freedom.
function tq(df,   t) {
    if (df >= 30) return 2.04
    split("12.71 4.30 3.18 2.78 2.57 2.45 2.36 2.31 2.26 2.23 2.20 2.18 2.16 2.14 2.13 2.12 2.11 2.10 2.09 2.09 2.08 2.07 2.07 2.06 2.06 2.06 2.05 2.05 2.05", t, " ")
    return t[df]
}
# 1234567 -> "1,234,567"
function thousands(x,   s, out) {
    s = sprintf("%d", x); out = ""
    while (length(s) > 3) { out = "," substr(s, length(s) - 2) out; s = substr(s, 1, length(s) - 3) }
    return s out
}
function median(list,   k, a, i, j, t) {
    k = split(list, a, " ")
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    if (k == 0) return 0
    return (k % 2) ? a[(k + 1) / 2] + 0 : (a[k / 2] + a[k / 2 + 1]) / 2
}
# Sets LO and HI to the 95 % interval of the geometric mean of the ratios in list.
function interval(list,   k, a, i, sum, sq, mean, sd, half) {
    k = split(list, a, " "); sum = 0; sq = 0
    for (i = 1; i <= k; i++) { sum += log(a[i]); sq += log(a[i]) ^ 2 }
    mean = sum / k; half = 0
    if (k > 1) {
        sd = (sq - k * mean ^ 2) / (k - 1); sd = sd > 0 ? sqrt(sd) : 0
        half = tq(k - 1) * sd / sqrt(k)
    }
    LO = exp(mean - half); HI = exp(mean + half)
}
{
    fi = fi " " $2; fc = fc " " $3; fr = fr " " $4
    si = si " " $5; sc = sc " " $6; sr = sr " " $7
    if ($2 > 0 && $5 > 0) ri = ri " " $5 / $2
    if ($3 > 0 && $6 > 0) rc = rc " " $6 / $3
}
END {
    split(goals, g, " ")
    min = g[1]; maxc = g[2]; band = g[3]; maxr = g[4]
    qi = median(ri); interval(ri); ilo = LO; ihi = HI
    qc = median(rc); interval(rc); clo = LO; chi = HI
    mr = median(fr); ms = median(sr)
    ok = 1; eq = 0; why = ""
    if (min != "-" && qi < min) {
        if (min == 1 && ilo <= 1 && ihi >= 1) eq = 1
        else { ok = 0; why = why sprintf(" IOPS<%.2fx", min) }
    }
    if (maxc != "-" && qc > maxc) {
        if (maxc == 1 && clo <= 1 && chi >= 1) eq = 1
        else { ok = 0; why = why " CPU/IO>fio" }
    }
    if (band != "-" && (qi < 1 - band || qi > 1 + band)) { ok = 0; why = why sprintf(" outside +-%d%%", band * 100) }
    if (maxr != "-" && ms > mr * maxr) { ok = 0; why = why sprintf(" PSS>%.1fx fio", maxr) }
    verdict = ok ? (eq ? "equal" : "ok") : "MISSED" why
    printf "%-30s %10d %10d %5.2fx [%4.2f..%4.2f] %8d %8d %5.2fx [%4.2f..%4.2f] %6.1fM %6.1fM  %s\n", n, median(fi), median(si), qi, ilo, ihi, median(fc), median(sc), qc, clo, chi, mr / 1024, ms / 1024, verdict
    if (md != "")
        printf "| %s | %s | %s | %.2f× [%.2f..%.2f] | %s ns | %s ns | %.2f× [%.2f..%.2f] | %.1f MiB | %.1f MiB | %s |\n", (mdname != "" ? mdname : n), thousands(median(fi)), thousands(median(si)), qi, ilo, ihi, thousands(median(fc)), thousands(median(sc)), qc, clo, chi, mr / 1024, ms / 1024, verdict >> md
    exit ok ? 0 : 1
}
