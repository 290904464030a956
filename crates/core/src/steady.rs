//! fio's steady state (`steadystate.c`): once a second a job's (or, under
//! group_reporting, its group's) IOPS and bandwidth over the last second go into a window
//! of `ss_dur` samples; when the window is full, the criterion is computed over it (the
//! largest deviation from the window's mean, or the slope of a least-squares line, either
//! absolute or in percent of the mean) and the job ends as soon as it is under the limit.
//!
//! The series functions ([`slope`], [`max_deviation`]) are plain functions over samples,
//! so other judgements of a run's stability can use the same arithmetic.

use std::collections::VecDeque;

use storbench_job::{SteadyMetric, SteadyState};

use storbench_model::result::SteadyResult;

/// fio's interval between steady-state samples.
pub const SAMPLE_MS: u64 = 1000;

/// Slope of the least-squares line through `y` at x = 0, 1, 2, … (units of y per
/// sample), with fio's arithmetic: integer sums, then `(Σxy − Σx·Σy/n) / (Σx² − (Σx)²/n)`
/// in doubles. 0 for fewer than two samples.
pub fn slope(y: &[u64]) -> f64 {
    let n = y.len() as u64;
    if n < 2 {
        return 0.0;
    }
    let sum_x = n * (n - 1) / 2;
    let sum_x_sq = (n - 1) * n * (2 * n - 1) / 6;
    let sum_y: u64 = y.iter().sum();
    let sum_xy: u64 = y.iter().enumerate().map(|(i, v)| i as u64 * v).sum();
    (sum_xy as f64 - sum_x as f64 * sum_y as f64 / n as f64)
        / (sum_x_sq as f64 - sum_x as f64 * sum_x as f64 / n as f64)
}

/// Largest absolute difference between a sample and the mean of `y`.
pub fn max_deviation(y: &[u64]) -> f64 {
    if y.is_empty() {
        return 0.0;
    }
    let mean = y.iter().sum::<u64>() as f64 / y.len() as f64;
    y.iter()
        .map(|&v| (v as f64 - mean).abs())
        .fold(0.0, f64::max)
}

/// One steady-state window and its last verdict.
pub struct SteadyWindow {
    cfg: SteadyState,
    /// (iops, bytes/s) per second, oldest first; at most `dur_s` of them.
    samples: VecDeque<(u64, u64)>,
    slope: f64,
    deviation: f64,
    criterion: f64,
    attained: bool,
}

impl SteadyWindow {
    pub fn new(cfg: SteadyState) -> Self {
        SteadyWindow {
            cfg,
            samples: VecDeque::with_capacity(cfg.dur_s as usize),
            slope: 0.0,
            deviation: 0.0,
            criterion: 0.0,
            attained: false,
        }
    }

    pub fn attained(&self) -> bool {
        self.attained
    }

    /// Adds one second's IOPS and bandwidth; true when the window now meets the criterion.
    pub fn push(&mut self, iops: u64, bw: u64) -> bool {
        if self.attained {
            return true;
        }
        let dur = self.cfg.dur_s.max(1) as usize;
        if self.samples.len() == dur {
            self.samples.pop_front();
        }
        self.samples.push_back((iops, bw));
        if self.samples.len() < dur {
            return false;
        }
        let y: Vec<u64> = self
            .samples
            .iter()
            .map(|&(i, b)| match self.cfg.metric {
                SteadyMetric::Iops => i,
                SteadyMetric::Bw => b,
            })
            .collect();
        let sum_y: u64 = y.iter().sum();
        if self.cfg.slope {
            self.slope = slope(&y);
            // fio divides the sum by the window in whole numbers here.
            let mean = (sum_y / dur as u64) as f64;
            self.criterion = if self.cfg.percent {
                100.0 * self.slope / mean
            } else {
                self.slope
            };
            self.attained = self.criterion.abs() < self.cfg.limit;
        } else {
            self.deviation = max_deviation(&y);
            let mean = sum_y as f64 / dur as f64;
            self.criterion = if self.cfg.percent {
                100.0 * self.deviation / mean
            } else {
                self.deviation
            };
            self.attained = self.criterion < self.cfg.limit;
        }
        self.attained
    }

    /// The window as fio reports it: samples oldest first, padded with zeros to its size
    /// when it never filled.
    pub fn result(&self) -> SteadyResult {
        let dur = self.cfg.dur_s as usize;
        let pad = dur.saturating_sub(self.samples.len());
        let series = |f: fn(&(u64, u64)) -> u64| -> Vec<u64> {
            self.samples
                .iter()
                .map(f)
                .chain(std::iter::repeat_n(0, pad))
                .collect()
        };
        SteadyResult {
            ss: self.cfg.fio_name(),
            duration_s: self.cfg.dur_s,
            attained: self.attained,
            criterion: self.criterion,
            percent: self.cfg.percent,
            iops: self.cfg.metric == SteadyMetric::Iops,
            slope_based: self.cfg.slope,
            max_deviation: self.deviation,
            slope: self.slope,
            bw_data: series(|s| s.1),
            iops_data: series(|s| s.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(metric: SteadyMetric, slope: bool, limit: f64, percent: bool) -> SteadyState {
        SteadyState {
            metric,
            slope,
            limit,
            percent,
            dur_s: 4,
            ..SteadyState::default()
        }
    }

    #[test]
    fn series_arithmetic() {
        assert_eq!(slope(&[10, 20, 30, 40]), 10.0);
        assert_eq!(slope(&[5, 5, 5]), 0.0);
        assert_eq!(slope(&[7]), 0.0);
        assert_eq!(max_deviation(&[10, 20, 30, 40]), 15.0);
        assert_eq!(max_deviation(&[]), 0.0);
    }

    #[test]
    fn slope_window_attains_when_flat() {
        let mut w = SteadyWindow::new(cfg(SteadyMetric::Iops, true, 1.0, true));
        for v in [100, 200, 300] {
            assert!(!w.push(v, 0), "the window is not full yet");
        }
        // 100..400: slope 100 per second over a mean of 250: 40%.
        assert!(!w.push(400, 0));
        assert!((w.result().criterion - 40.0).abs() < 1e-9);
        for _ in 0..3 {
            w.push(1000, 0);
        }
        // 400, 1000, 1000, 1000: still rising.
        assert!(!w.attained());
        assert!(w.push(1000, 0), "four equal seconds are steady");
        let r = w.result();
        assert_eq!(r.iops_data, [1000; 4]);
        assert_eq!((r.ss.as_str(), r.attained), ("iops_slope:1.000000%", true));
    }

    #[test]
    fn deviation_window_in_absolute_bandwidth() {
        let mut w = SteadyWindow::new(cfg(SteadyMetric::Bw, false, 50.0, false));
        for v in [1000, 1040, 980, 1100] {
            w.push(0, v);
        }
        // Mean 1030: the largest deviation is 70.
        assert!(!w.attained());
        assert_eq!(w.result().max_deviation, 70.0);
        // The outlier leaves the window with the third steady second (1100 against a
        // mean of 1047.5 is still 52.5 off).
        for _ in 0..3 {
            assert!(!w.push(0, 1030));
        }
        assert!(w.push(0, 1030));
    }

    #[test]
    fn an_unfilled_window_is_padded() {
        let mut w = SteadyWindow::new(cfg(SteadyMetric::Iops, true, 0.01, true));
        w.push(5, 50);
        let r = w.result();
        assert_eq!(
            (r.iops_data, r.bw_data),
            (vec![5, 0, 0, 0], vec![50, 0, 0, 0])
        );
        assert!(!r.attained);
    }
}
