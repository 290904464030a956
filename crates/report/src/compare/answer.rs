//! The answer a comparison gives first: how many differences are real changes, how many
//! within the noise and how many the runs cannot tell, the largest change as "N× faster"
//! with its interval, and advice when the runs vary too much to decide.

use super::noise::{Call, NOISE_MARGIN_PCT, Verdict};
use super::{Better, Comparison, MetricRow, TestTable};

/// One line: `answer: 2 real changes, 40 within noise, 3 cannot tell (of 45 differences);
/// largest: SEQ1M Q8T1 read bandwidth 4.1× faster [3.8–4.4]`. None when nothing was judged.
pub fn summary(c: &Comparison) -> Option<String> {
    let judged: Vec<(&TestTable, &MetricRow, Verdict)> = c
        .tests
        .iter()
        .flat_map(|t| t.rows.iter().map(move |r| (t, r)))
        .flat_map(|(t, r)| r.verdicts.iter().flatten().map(move |v| (t, r, *v)))
        .collect();
    if judged.is_empty() {
        return None;
    }
    let count = |call: Call| judged.iter().filter(|(_, _, v)| v.call == call).count();
    let (real, noise, unsure) = (
        count(Call::Real),
        count(Call::Noise),
        count(Call::CannotTell),
    );
    let mut line = format!(
        "answer: {real} real {}, {noise} within noise, {unsure} cannot tell (of {} differences)",
        if real == 1 { "change" } else { "changes" },
        judged.len()
    );
    let largest = judged
        .iter()
        .filter(|(_, _, v)| v.call == Call::Real)
        // The first of equal changes (bandwidth before IOPS, which carry one measurement).
        .fold(
            None,
            |best: Option<&(&TestTable, &MetricRow, Verdict)>, x| match best {
                Some(b) if log_ratio(&x.2) <= log_ratio(&b.2) + 1e-3 => Some(b),
                _ => Some(x),
            },
        );
    match largest {
        Some((t, r, v)) => line.push_str(&format!(
            "; largest: {} {} {}",
            t.test,
            r.metric.label(),
            speed(v, r.better)
        )),
        None => line.push_str("; no change beyond the noise"),
    }
    Some(line)
}

/// Advice when differences cannot be told from noise: what would narrow the intervals.
pub fn advice(c: &Comparison) -> Option<String> {
    let unsure = c
        .tests
        .iter()
        .flat_map(|t| &t.rows)
        .flat_map(|r| r.verdicts.iter().flatten())
        .filter(|v| v.call == Call::CannotTell)
        .count();
    if unsure == 0 {
        return None;
    }
    let few_rounds = c.runs.iter().any(|r| r.rounds < 5);
    Some(format!(
        "advice: {unsure} {} cannot be told from noise (a change of {NOISE_MARGIN_PCT}% or more is \
         neither shown nor ruled out): {}",
        if unsure == 1 {
            "difference"
        } else {
            "differences"
        },
        if few_rounds {
            "run more rounds (--repeat 5 or more) and a longer runtime (--runtime)"
        } else {
            "run a longer runtime (--runtime) or more rounds (--repeat)"
        }
    ))
}

/// How far a change is from none, in either direction.
fn log_ratio(v: &Verdict) -> f64 {
    (1.0 + v.change_pct / 100.0)
        .max(f64::MIN_POSITIVE)
        .ln()
        .abs()
}

/// `4.1× faster [3.8–4.4]`, `2.0× slower [1.7–2.5]`: the change as a factor, better or worse
/// by the metric's direction, with its 95% interval.
pub fn speed(v: &Verdict, better: Better) -> String {
    let ratio = |pct: f64| 1.0 + pct / 100.0;
    let (r, lo, hi) = (
        ratio(v.change_pct),
        ratio(v.change_low_pct),
        ratio(v.change_high_pct),
    );
    let improved = (r > 1.0) == (better == Better::Higher);
    // The factor is at least 1: the ratio, or its inverse when the value fell.
    let (f, flo, fhi) = if r >= 1.0 {
        (r, lo, hi)
    } else {
        (1.0 / r, inverse(hi), inverse(lo))
    };
    format!(
        "{}× {} [{}–{}]",
        factor(f),
        if improved { "faster" } else { "slower" },
        factor(flo),
        factor(fhi)
    )
}

/// 1/x for a positive ratio; a bound at or below zero is a fall of 100% or more: no upper
/// factor.
fn inverse(x: f64) -> f64 {
    if x > 0.0 { 1.0 / x } else { f64::INFINITY }
}

fn factor(x: f64) -> String {
    if !x.is_finite() {
        "∞".to_string()
    } else if x < 10.0 {
        format!("{x:.2}")
    } else {
        crate::numfmt::num(x)
    }
}

#[cfg(test)]
mod tests {
    use super::super::noise::Basis;
    use super::*;

    fn v(pct: f64, lo: f64, hi: f64) -> Verdict {
        Verdict {
            call: Call::Real,
            significant: true,
            basis: Basis::Rounds,
            p: 0.001,
            q: 0.001,
            change_pct: pct,
            change_low_pct: lo,
            change_high_pct: hi,
        }
    }

    #[test]
    fn speed_reads_as_a_factor_in_the_metrics_direction() {
        assert_eq!(
            speed(&v(310.0, 280.0, 340.0), Better::Higher),
            "4.10× faster [3.80–4.40]"
        );
        assert_eq!(
            speed(&v(-50.0, -60.0, -40.0), Better::Higher),
            "2.00× slower [1.67–2.50]"
        );
        // Latency halved: faster.
        assert_eq!(
            speed(&v(-50.0, -60.0, -40.0), Better::Lower),
            "2.00× faster [1.67–2.50]"
        );
        assert_eq!(
            speed(&v(-50.0, -120.0, -10.0), Better::Higher),
            "2.00× slower [1.11–∞]"
        );
    }
}
