//! Change, noise or cannot tell: whether a difference between two runs' figures is larger
//! than their own variation explains. From the runs' rounds where both have at least two
//! (Welch's t-test on the rounds' values); otherwise from the test's per-second rates
//! (Welch's t-test on batch means, which allow for consecutive seconds being alike), a
//! weaker basis: seconds of one run share its set-up, its file's placement and its cache
//! state, so they spread less than separate runs do. docs/statistics.md explains both.
//!
//! One comparison judges many differences (every metric of every test), so a 5% test on
//! each would call some of them real by chance alone. The p-values of one comparison are
//! adjusted together ([`adjust`], Benjamini–Hochberg) and a difference is real when its
//! adjusted value is under [`FALSE_CHANGE_RATE`]. A difference that is not found real is
//! called noise only when its 95% interval rules out a change of [`NOISE_MARGIN_PCT`] or
//! more; otherwise the runs cannot tell (too few rounds or seconds, or too much spread).
//!
//! A difference under [`NOISE_FLOOR_PCT`] is noise even when the test finds it: a machine
//! drifts by that much between one run and the next (other load, the page cache, the
//! CPU's clock), which rounds taken back to back do not show, and such a change does not
//! matter to anyone choosing hardware.

use serde::Serialize;
use storbench_model::confidence::{
    Summary, batch_means, benjamini_hochberg, welch, welch_difference_interval,
};

/// Differences smaller than this, in percent of the reference, are always noise.
pub const NOISE_FLOOR_PCT: f64 = 2.0;

/// A difference is noise only when its 95% interval lies within ± this, in percent of the
/// reference: a change this large would matter, and "noise" says it did not happen.
pub const NOISE_MARGIN_PCT: f64 = 10.0;

/// The expected share of "real" calls that are not, over the differences of one
/// comparison; when none is real, the chance that any is called real.
pub const FALSE_CHANGE_RATE: f64 = 0.05;

/// What a verdict rests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Both runs' rounds (`--repeat`).
    Rounds,
    /// Both runs' per-second rates, in batch means (weaker: see the module's text).
    Seconds,
}

/// The answer for one difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// Beyond the noise, after adjustment for the comparison's other differences.
    Real,
    /// Within the noise: its interval rules out a change of [`NOISE_MARGIN_PCT`].
    Noise,
    /// Neither: the runs vary too much, or have too few rounds or seconds, to decide.
    CannotTell,
}

/// A difference against the reference run, judged.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub call: Call,
    /// `call` is [`Call::Real`].
    pub significant: bool,
    pub basis: Basis,
    /// Welch's two-sided p-value of this difference alone.
    pub p: f64,
    /// `p` adjusted over the comparison's differences (Benjamini–Hochberg).
    pub q: f64,
    /// The change in percent of the reference's mean, with its 95% interval.
    pub change_pct: f64,
    pub change_low_pct: f64,
    pub change_high_pct: f64,
}

impl Verdict {
    /// The mark the tables print: `real`, `noise` or `cannot tell`, with `~` when from
    /// seconds.
    pub fn mark(&self) -> &'static str {
        match (self.call, self.basis) {
            (Call::Real, Basis::Rounds) => "real",
            (Call::Noise, Basis::Rounds) => "noise",
            (Call::CannotTell, Basis::Rounds) => "cannot tell",
            (Call::Real, Basis::Seconds) => "real~",
            (Call::Noise, Basis::Seconds) => "noise~",
            (Call::CannotTell, Basis::Seconds) => "cannot tell~",
        }
    }

    /// Decides the call from the adjusted p-value `q` and the change's interval.
    fn decide(&mut self, q: f64) {
        self.q = q;
        let small = self.change_pct.abs() < NOISE_FLOOR_PCT;
        let narrow =
            self.change_low_pct > -NOISE_MARGIN_PCT && self.change_high_pct < NOISE_MARGIN_PCT;
        self.call = if q < FALSE_CHANGE_RATE && !small {
            Call::Real
        } else if narrow || (q < FALSE_CHANGE_RATE && small) {
            Call::Noise
        } else {
            Call::CannotTell
        };
        self.significant = self.call == Call::Real;
    }
}

/// One run's evidence for a metric of a test: its rounds' values, its per-second series.
#[derive(Clone, Debug, Default)]
pub struct Evidence {
    pub rounds: Vec<f64>,
    pub seconds: Option<Vec<f64>>,
}

/// Judges `b` against `a` as if it were the only difference compared ([`adjust`] then
/// accounts for the others); None where neither basis is there for both (fewer than two
/// rounds and under four seconds of rates, or a metric without a per-second series).
pub fn judge(a: &Evidence, b: &Evidence) -> Option<Verdict> {
    if let (Some(sa), Some(sb)) = (Summary::of(&a.rounds), Summary::of(&b.rounds)) {
        return Some(verdict(&sa, &sb, Basis::Rounds));
    }
    let sa = batch_means(a.seconds.as_deref()?)?;
    let sb = batch_means(b.seconds.as_deref()?)?;
    Some(verdict(&sa, &sb, Basis::Seconds))
}

/// Adjusts the verdicts of one comparison together: each difference's p-value becomes its
/// Benjamini–Hochberg q-value over all of them, and each call is decided again.
pub fn adjust(verdicts: &mut [&mut Verdict]) {
    let p: Vec<f64> = verdicts.iter().map(|v| v.p).collect();
    for (v, q) in verdicts.iter_mut().zip(benjamini_hochberg(&p)) {
        v.decide(q);
    }
}

fn verdict(a: &Summary, b: &Summary, basis: Basis) -> Verdict {
    let w = welch(a, b);
    let (lo, hi) = welch_difference_interval(a, b);
    let pct = |d: f64| {
        if d == 0.0 {
            0.0
        } else if a.mean == 0.0 {
            d.signum() * f64::INFINITY
        } else {
            d / a.mean.abs() * 100.0
        }
    };
    let mut v = Verdict {
        call: Call::CannotTell,
        significant: false,
        basis,
        p: w.p,
        q: w.p,
        change_pct: pct(b.mean - a.mean),
        change_low_pct: pct(lo),
        change_high_pct: pct(hi),
    };
    v.decide(w.p);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(v: &[f64]) -> Evidence {
        Evidence {
            rounds: v.to_vec(),
            seconds: None,
        }
    }

    #[test]
    fn rounds_come_first_and_decide() {
        let a = rounds(&[100.0, 104.0, 98.0]);
        let same = rounds(&[101.0, 97.0, 103.0]);
        let slower = rounds(&[50.0, 52.0, 49.0]);
        let v = judge(&a, &same).unwrap();
        assert_eq!(
            (v.significant, v.basis, v.mark()),
            (false, Basis::Rounds, "noise")
        );
        let v = judge(&a, &slower).unwrap();
        assert_eq!((v.significant, v.mark()), (true, "real"));
    }

    #[test]
    fn seconds_when_a_run_has_no_rounds() {
        let steady: Vec<f64> = (0..16).map(|i| 100.0 + (i % 3) as f64).collect();
        let halved: Vec<f64> = steady.iter().map(|v| v / 2.0).collect();
        let a = Evidence {
            rounds: vec![],
            seconds: Some(steady.clone()),
        };
        let b = Evidence {
            rounds: vec![1.0, 2.0],
            seconds: Some(halved),
        };
        let v = judge(&a, &b).unwrap();
        assert_eq!(
            (v.significant, v.basis, v.mark()),
            (true, Basis::Seconds, "real~")
        );
        let short = Evidence {
            rounds: vec![],
            seconds: Some(vec![1.0, 2.0, 3.0]),
        };
        assert!(judge(&a, &short).is_none());
        assert!(judge(&rounds(&[1.0]), &rounds(&[2.0])).is_none());
    }

    #[test]
    fn tiny_differences_are_noise_however_steady() {
        // 1% apart with almost no spread: significant to the test, noise to the reader.
        let a = rounds(&[100.0, 100.01, 99.99]);
        let b = rounds(&[101.0, 101.01, 100.99]);
        let v = judge(&a, &b).unwrap();
        assert!(v.p < 0.001 && !v.significant, "{v:?}");
        let c = rounds(&[103.0, 103.01, 102.99]);
        assert!(judge(&a, &c).unwrap().significant);
    }
}
