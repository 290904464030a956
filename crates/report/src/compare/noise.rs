//! Change or noise: whether a difference between two runs' figures is larger than their
//! own variation explains. From the runs' rounds where both have at least two (Welch's
//! t-test on the rounds' values); otherwise from the test's per-second rates (Welch's
//! t-test on batch means, which allow for consecutive seconds being alike), a weaker basis:
//! seconds of one run share its set-up, its file's placement and its cache state, so they
//! spread less than separate runs do. docs/statistics.md explains both.
//!
//! A difference under [`NOISE_FLOOR_PCT`] is noise even when the test finds it: a machine
//! drifts by that much between one run and the next (other load, the page cache, the
//! CPU's clock), which rounds taken back to back do not show, and such a change does not
//! matter to anyone choosing hardware.

use serde::Serialize;
use storbench_model::confidence::{Summary, Welch, batch_means, welch};

/// Differences smaller than this, in percent of the reference, are always noise.
pub const NOISE_FLOOR_PCT: f64 = 2.0;

/// What a verdict rests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Both runs' rounds (`--repeat`).
    Rounds,
    /// Both runs' per-second rates, in batch means (weaker: see the module's text).
    Seconds,
}

/// A difference against the reference run, judged.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Verdict {
    /// The difference is beyond the noise at the 95% level.
    pub significant: bool,
    pub basis: Basis,
    /// Welch's two-sided p-value.
    pub p: f64,
}

impl Verdict {
    /// The mark the tables print: `real` or `noise`, with `~` when from seconds.
    pub fn mark(&self) -> &'static str {
        match (self.significant, self.basis) {
            (true, Basis::Rounds) => "real",
            (false, Basis::Rounds) => "noise",
            (true, Basis::Seconds) => "real~",
            (false, Basis::Seconds) => "noise~",
        }
    }
}

/// One run's evidence for a metric of a test: its rounds' values, its per-second series.
#[derive(Clone, Debug, Default)]
pub struct Evidence {
    pub rounds: Vec<f64>,
    pub seconds: Option<Vec<f64>>,
}

/// Judges `b` against `a`; None where neither basis is there for both (fewer than two
/// rounds and under four seconds of rates, or a metric without a per-second series).
pub fn judge(a: &Evidence, b: &Evidence) -> Option<Verdict> {
    if let (Some(sa), Some(sb)) = (Summary::of(&a.rounds), Summary::of(&b.rounds)) {
        return Some(verdict(&sa, &sb, Basis::Rounds));
    }
    let sa = batch_means(a.seconds.as_deref()?)?;
    let sb = batch_means(b.seconds.as_deref()?)?;
    Some(verdict(&sa, &sb, Basis::Seconds))
}

fn verdict(a: &Summary, b: &Summary, basis: Basis) -> Verdict {
    let w: Welch = welch(a, b);
    let change_pct = if a.mean == 0.0 {
        f64::INFINITY
    } else {
        (b.mean - a.mean).abs() / a.mean.abs() * 100.0
    };
    Verdict {
        significant: w.significant() && change_pct >= NOISE_FLOOR_PCT,
        basis,
        p: w.p,
    }
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
