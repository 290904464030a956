//! Confidence intervals and tests of difference for repeated measurements: Student's t
//! interval of a mean, a seeded percentile bootstrap, Welch's t-test, and batch means for
//! autocorrelated per-second series. Pure arithmetic on a few values (rounds, seconds),
//! never on the IO path. docs/statistics.md says what each figure means.
//!
//! The t distribution is computed here rather than taken from a crate: it is one regularized
//! incomplete beta function (a continued fraction) and a bisection, checked against table
//! values below, where a statistics crate would bring a linear-algebra stack along.

use serde::{Deserialize, Serialize};

use crate::rng::Rng;

/// The confidence level of every interval and test: 95%.
pub const LEVEL: f64 = 0.95;

/// Resamples of the bootstrap: enough for the 2.5% and 97.5% quantiles to settle to a few
/// tenths of a percent, cheap for the few values a run has.
const BOOTSTRAP_RESAMPLES: usize = 4000;

/// The bootstrap's fixed seed ("STBR"): the same rounds always give the same interval.
const BOOTSTRAP_SEED: u64 = 0x5354_4252;

/// How an interval was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Student's t interval of the mean of the rounds.
    T,
    /// Percentile bootstrap of the mean of the rounds (for latency percentiles, whose
    /// spread across rounds is skewed).
    Bootstrap,
}

/// A mean with its 95% interval `[low, high]`, over `n` values.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub mean: f64,
    pub low: f64,
    pub high: f64,
    pub n: usize,
    pub method: Method,
}

impl Interval {
    /// Half the interval's width: the `37` of `1,412 ± 37` (for a bootstrap interval, which
    /// need not be symmetric, the larger side).
    pub fn half_width(&self) -> f64 {
        (self.mean - self.low).max(self.high - self.mean)
    }
}

/// Mean, sample variance (n − 1) and count of some values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub mean: f64,
    pub var: f64,
    pub n: usize,
}

impl Summary {
    /// None for fewer than two values or any that is not finite.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.len() < 2 || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        Some(Summary {
            mean,
            var,
            n: values.len(),
        })
    }
}

/// Student's t interval of the mean: mean ± t(0.975, n−1) · s/√n. None below two values.
pub fn t_interval(values: &[f64]) -> Option<Interval> {
    let s = Summary::of(values)?;
    let half = t_quantile(0.5 + LEVEL / 2.0, (s.n - 1) as f64) * (s.var / s.n as f64).sqrt();
    Some(Interval {
        mean: s.mean,
        low: s.mean - half,
        high: s.mean + half,
        n: s.n,
        method: Method::T,
    })
}

/// Percentile bootstrap of the mean: the 2.5% and 97.5% quantiles of the means of
/// resamples (with replacement), from a fixed seed. None below two values.
pub fn bootstrap_interval(values: &[f64]) -> Option<Interval> {
    let s = Summary::of(values)?;
    let mut rng = Rng::seeded(BOOTSTRAP_SEED);
    let n = values.len();
    let mut means: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            (0..n)
                .map(|_| values[rng.below(n as u64) as usize])
                .sum::<f64>()
                / n as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((q * (BOOTSTRAP_RESAMPLES - 1) as f64).round()) as usize];
    let tail = (1.0 - LEVEL) / 2.0;
    Some(Interval {
        mean: s.mean,
        low: at(tail),
        high: at(1.0 - tail),
        n,
        method: Method::Bootstrap,
    })
}

/// Welch's unequal-variance t-test of two means.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Welch {
    pub t: f64,
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

impl Welch {
    /// The difference is real at the 95% level.
    pub fn significant(&self) -> bool {
        self.p < 1.0 - LEVEL
    }
}

/// Welch's t-test of `a` against `b`. Two sets without any spread differ for certain when
/// their means differ (p = 0) and not at all when they are equal (p = 1).
pub fn welch(a: &Summary, b: &Summary) -> Welch {
    let (va, vb) = (a.var / a.n as f64, b.var / b.n as f64);
    let se2 = va + vb;
    let diff = b.mean - a.mean;
    if se2 <= 0.0 {
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        return Welch {
            t: if diff == 0.0 {
                0.0
            } else {
                diff.signum() * f64::INFINITY
            },
            df: (a.n + b.n - 2) as f64,
            p,
        };
    }
    let t = diff / se2.sqrt();
    let df = se2 * se2
        / (va * va / (a.n as f64 - 1.0) + vb * vb / (b.n as f64 - 1.0)).max(f64::MIN_POSITIVE);
    let p = 2.0 * (1.0 - t_cdf(t.abs(), df));
    Welch {
        t,
        df,
        p: p.clamp(0.0, 1.0),
    }
}

/// The 95% interval of `b.mean − a.mean` that goes with [`welch`]: the difference ± the
/// t quantile at Welch's degrees of freedom times its standard error.
pub fn welch_difference_interval(a: &Summary, b: &Summary) -> (f64, f64) {
    let w = welch(a, b);
    let diff = b.mean - a.mean;
    let se = (a.var / a.n as f64 + b.var / b.n as f64).sqrt();
    if se == 0.0 {
        return (diff, diff);
    }
    let half = t_quantile(0.5 + LEVEL / 2.0, w.df) * se;
    (diff - half, diff + half)
}

/// Benjamini–Hochberg adjusted p-values ("q-values") of a family of tests, in the order
/// given: calling every test with q < α a discovery keeps the expected share of false
/// discoveries among them at most α (for independent or positively dependent tests), and
/// when no difference is real, the chance of any discovery at all at most α.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let mut q = vec![1.0; m];
    let mut running = 1.0f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        let scaled = p[i] * m as f64 / (rank + 1) as f64;
        running = running.min(scaled);
        q[i] = running.clamp(0.0, 1.0);
    }
    q
}

/// Batch means of an autocorrelated series (per-second rates): consecutive seconds are
/// not independent (a cache filling, a device's garbage collection), so the series is cut
/// into ⌊√m⌋-long batches whose means are closer to independent, and the summary is over
/// those means. None below four values (two batches of two).
pub fn batch_means(series: &[f64]) -> Option<Summary> {
    let m = series.len();
    if m < 4 {
        return None;
    }
    let size = (m as f64).sqrt().floor() as usize;
    let batches = m / size;
    // The first seconds are dropped when the batches do not fill the series: the warm-up,
    // not the steady end, is what to leave out.
    let skip = m - batches * size;
    let means: Vec<f64> = series[skip..]
        .chunks(size)
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect();
    Summary::of(&means)
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom (df > 0, not necessarily whole).
pub fn t_cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return if t > 0.0 { 1.0 } else { 0.0 };
    }
    let x = df / (df + t * t);
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, x);
    if t >= 0.0 { 1.0 - tail } else { tail }
}

/// The `p` quantile of Student's t with `df` degrees of freedom, by bisection of
/// [`t_cdf`] to full double precision.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) || df <= 0.0 {
        return f64::NAN;
    }
    if p == 0.5 {
        return 0.0;
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    let mut hi = 1.0;
    while t_cdf(hi, df) < p {
        hi *= 2.0;
        if hi > 1e300 {
            return f64::INFINITY;
        }
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-15 * hi {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// The regularized incomplete beta function I_x(a, b), by its continued fraction
/// (Lentz's method), using the symmetry I_x(a,b) = 1 − I_{1−x}(b,a) where that converges
/// faster.
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_fraction(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let tiny = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / tiny(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..1000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        d = 1.0 / tiny(1.0 + even * d);
        c = tiny(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        d = 1.0 / tiny(1.0 + odd * d);
        c = tiny(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9: about 15 significant digits).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        // Two-sided 95% critical values (0.975 quantiles), as printed in every t table.
        let table = [
            (1.0, 12.7062),
            (2.0, 4.3027),
            (3.0, 3.1824),
            (4.0, 2.7764),
            (5.0, 2.5706),
            (9.0, 2.2622),
            (10.0, 2.2281),
            (20.0, 2.0860),
            (30.0, 2.0423),
            (120.0, 1.9799),
        ];
        for (df, want) in table {
            let got = t_quantile(0.975, df);
            assert!(close(got, want, 5e-4), "df {df}: {got} != {want}");
        }
        // 0.995 quantiles (99% two-sided) and one lower tail.
        assert!(close(t_quantile(0.995, 1.0), 63.6567, 5e-3));
        assert!(close(t_quantile(0.995, 5.0), 4.0321, 5e-4));
        assert!(close(t_quantile(0.025, 4.0), -2.7764, 5e-4));
        // Large df tends to the normal's 1.95996.
        assert!(close(t_quantile(0.975, 1e7), 1.95996, 1e-4));
    }

    #[test]
    fn t_cdf_known_values() {
        // df = 1 is the Cauchy distribution: CDF(1) = 3/4.
        assert!(close(t_cdf(1.0, 1.0), 0.75, 1e-12));
        // df = 2 has a closed form: 1/2 + t / (2 √(t² + 2)).
        let t: f64 = 1.5;
        assert!(close(
            t_cdf(t, 2.0),
            0.5 + t / (2.0 * (t * t + 2.0).sqrt()),
            1e-12
        ));
        assert!(close(t_cdf(0.0, 7.0), 0.5, 1e-15));
        assert!(close(t_cdf(-2.0, 3.0) + t_cdf(2.0, 3.0), 1.0, 1e-14));
    }

    #[test]
    fn ln_gamma_known_values() {
        assert!(close(ln_gamma(1.0), 0.0, 1e-14));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-13
        ));
        assert!(close(ln_gamma(10.0), 362_880f64.ln(), 1e-12));
    }

    #[test]
    fn t_interval_by_hand() {
        // mean 10, s = 1 (values 9, 10, 11), n = 3: half width 4.3027 / √3 = 2.4841.
        let i = t_interval(&[9.0, 10.0, 11.0]).unwrap();
        assert!(close(i.mean, 10.0, 1e-12));
        assert!(close(i.half_width(), 2.4841, 1e-3), "{i:?}");
        assert!(close(i.low, 10.0 - 2.4841, 1e-3) && close(i.high, 10.0 + 2.4841, 1e-3));
        assert_eq!((i.n, i.method), (3, Method::T));
        assert!(t_interval(&[5.0]).is_none());
        assert!(t_interval(&[1.0, f64::NAN]).is_none());
        let same = t_interval(&[4.0, 4.0, 4.0]).unwrap();
        assert_eq!((same.low, same.high), (4.0, 4.0));
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_mean() {
        let v = [100.0, 120.0, 95.0, 400.0, 110.0];
        let a = bootstrap_interval(&v).unwrap();
        let b = bootstrap_interval(&v).unwrap();
        assert_eq!(a, b, "the same rounds give the same interval");
        assert!(a.low < a.mean && a.mean < a.high, "{a:?}");
        assert!(a.low >= 95.0 && a.high <= 400.0, "{a:?}");
        // Skewed: the outlier stretches the upper side more than the lower.
        assert!(a.high - a.mean > a.mean - a.low, "{a:?}");
        assert_eq!(a.method, Method::Bootstrap);
    }

    #[test]
    fn welch_known_example() {
        // Two samples, worked by hand: means 20 and 22, variances 4 and 9, n 10 and 12.
        // t = 2 / √(0.4 + 0.75) = 1.8650; Welch–Satterthwaite df below.
        let a = Summary {
            mean: 20.0,
            var: 4.0,
            n: 10,
        };
        let b = Summary {
            mean: 22.0,
            var: 9.0,
            n: 12,
        };
        let w = welch(&a, &b);
        assert!(close(w.t, 1.8650, 1e-4), "{w:?}");
        let df = 1.15f64.powi(2) / (0.4f64.powi(2) / 9.0 + 0.75f64.powi(2) / 11.0);
        assert!(close(w.df, df, 1e-9), "{w:?}");
        // p between the 0.05 and 0.10 two-sided critical values at ~19 df (2.09, 1.73).
        assert!(w.p > 0.05 && w.p < 0.10, "{w:?}");
        assert!(!w.significant());
        let far = Summary { mean: 40.0, ..b };
        assert!(welch(&a, &far).significant());
        let flat = Summary {
            mean: 5.0,
            var: 0.0,
            n: 3,
        };
        assert_eq!(welch(&flat, &flat).p, 1.0);
        assert_eq!(welch(&flat, &Summary { mean: 6.0, ..flat }).p, 0.0);
    }

    #[test]
    fn welch_difference_interval_by_hand() {
        // Means 20 and 22, standard errors² 0.4 and 0.75: half width t(0.975, df) · √1.15.
        let a = Summary {
            mean: 20.0,
            var: 4.0,
            n: 10,
        };
        let b = Summary {
            mean: 22.0,
            var: 9.0,
            n: 12,
        };
        let (lo, hi) = welch_difference_interval(&a, &b);
        let half = t_quantile(0.975, welch(&a, &b).df) * 1.15f64.sqrt();
        assert!(close(lo, 2.0 - half, 1e-12) && close(hi, 2.0 + half, 1e-12));
        // Not significant at 95%: the interval holds 0.
        assert!(lo < 0.0 && hi > 0.0);
        let flat = Summary {
            mean: 5.0,
            var: 0.0,
            n: 3,
        };
        assert_eq!(welch_difference_interval(&flat, &flat), (0.0, 0.0));
    }

    #[test]
    fn benjamini_hochberg_by_hand() {
        // p sorted 0.01, 0.02, 0.03, 0.5 of m = 4: p·m/rank = 0.04, 0.04, 0.04, 0.5, then
        // the running minimum from the top.
        let q = benjamini_hochberg(&[0.03, 0.5, 0.01, 0.02]);
        let want = [0.04, 0.5, 0.04, 0.04];
        for (g, w) in q.iter().zip(want) {
            assert!(close(*g, w, 1e-12), "{q:?}");
        }
        // One test: its own p. None: nothing.
        assert_eq!(benjamini_hochberg(&[0.047]), vec![0.047]);
        assert!(benjamini_hochberg(&[]).is_empty());
        // Three of forty at 0.047 and the rest above: none below 0.05 after adjustment.
        let mut p = vec![0.047; 3];
        p.extend((0..37).map(|i| 0.1 + f64::from(i) * 0.02));
        assert!(benjamini_hochberg(&p).iter().all(|q| *q >= 0.05));
    }

    #[test]
    fn batch_means_cut_into_root_m_batches() {
        // 10 values: batches of 3, the first value (warm-up) left out.
        let s: Vec<f64> = (0..10).map(f64::from).collect();
        let b = batch_means(&s).unwrap();
        assert_eq!(b.n, 3);
        assert!(close(b.mean, 5.0, 1e-12), "{b:?}"); // means 2, 5, 8 of 1..=9
        assert!(batch_means(&[1.0, 2.0, 3.0]).is_none());
    }
}
