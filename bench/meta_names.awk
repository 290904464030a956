# One operation's line of bench/meta_names.sh: input lines "round b_create b_stat b_unlink
# a_create a_stat a_unlink" (before's and after's rate as a share of libc's); `c` is the
# before column of the operation (after's is c + 3). Prints the median after/before ratio
# and the 95 % interval of the geometric mean of the round ratios (t interval of logs).

function tq(df,   t) {
    if (df >= 30) return 2.04
    split("12.71 4.30 3.18 2.78 2.57 2.45 2.36 2.31 2.26 2.23 2.20 2.18 2.16 2.14 2.13", t, " ")
    return df <= 15 ? t[df] : 2.10
}

{ r[NR] = $(c + 3) / $c; before[NR] = $c; after[NR] = $(c + 3) }

END {
    k = NR
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
    med = (k % 2) ? r[(k + 1) / 2] : (r[k / 2] + r[k / 2 + 1]) / 2
    sum = 0; sq = 0
    for (i = 1; i <= k; i++) { sum += log(r[i]); sq += log(r[i]) ^ 2 }
    mean = sum / k; half = 0
    if (k > 1) { sd = (sq - k * mean ^ 2) / (k - 1); sd = sd > 0 ? sqrt(sd) : 0; half = tq(k - 1) * sd / sqrt(k) }
    printf "%-7s after/before (by-%s rate as a share of libc's): median %.3f, 95%% [%.3f..%.3f], %d rounds\n", n, side, med, exp(mean - half), exp(mean + half), k
}
