//! The live bar of `storbench bonnie` on a terminal: one bar per test with the current rate
//! and the ETA of the whole suite, drawn by the same [`LiveBar`] as quick's (fitted to the
//! terminal at each redraw, in place, no colour under NO_COLOR). bonnie++'s own progress
//! lines (`Writing intelligently...done`) are printed above it as each test ends, so the
//! screen keeps what bonnie++ shows. Off a terminal (or with `-q`) there is no bar and the
//! plain bonnie++ lines are printed as they are.
//!
//! The suite runs on the calling thread and reports only starts and ends; a thread of its
//! own redraws four times a second from the suite's operation count
//! ([`storbench_bonnie::progress::ops_done`]), never per operation.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use storbench_bonnie::progress::{Planned, ops_done};
use storbench_bonnie::{Event, start_message};
use storbench_model::result::BonnieTestId;
use storbench_report::live::status::{BarLine, eta_text};
use storbench_report::numfmt::num;

use crate::live::LiveBar;

/// How often the bar is redrawn.
const REDRAW: Duration = Duration::from_millis(250);

/// The bar's thread; dropped (or [`BonnieLive::finish`]ed), it clears the bar.
pub struct BonnieLive {
    tx: Sender<Msg>,
    thread: Option<JoinHandle<()>>,
}

enum Msg {
    Started(BonnieTestId),
    Finished(BonnieTestId),
}

impl BonnieLive {
    /// Starts the bar for a suite that will run `plan`.
    pub fn start(plan: Vec<Planned>) -> BonnieLive {
        let (tx, rx) = channel();
        let thread = std::thread::Builder::new()
            .name("bonnie-live".into())
            .spawn(move || draw_loop(&plan, &rx))
            .ok();
        BonnieLive { tx, thread }
    }

    /// A test started or ended.
    pub fn event(&self, e: &Event) {
        let _ = self.tx.send(match e {
            Event::Started(id) => Msg::Started(*id),
            Event::Finished(t) => Msg::Finished(t.id),
        });
    }

    /// Clears the bar; what is printed next starts on a clean line.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        // Closing the channel ends the loop, which clears the bar.
        let (tx, _) = channel();
        drop(std::mem::replace(&mut self.tx, tx));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for BonnieLive {
    fn drop(&mut self) {
        self.stop();
    }
}

fn draw_loop(plan: &[Planned], rx: &Receiver<Msg>) {
    let mut bar = LiveBar::new();
    let mut state = SuiteState::new(plan);
    loop {
        match rx.recv_timeout(REDRAW) {
            Ok(Msg::Started(id)) => state.started(id, Instant::now(), ops_done()),
            Ok(Msg::Finished(id)) => {
                state.finished(id, Instant::now(), ops_done());
                bar.suspend(|| eprintln!("{}done", start_message(id)));
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if let Some(line) = state.line(Instant::now(), ops_done()) {
            bar.show(&line);
        }
    }
    bar.clear();
}

/// What the bar knows of the suite: the plan, the test running, the rates measured.
struct SuiteState<'a> {
    plan: &'a [Planned],
    /// Index in the plan of the test running, when it started and the count then.
    current: Option<(usize, Instant, u64)>,
    /// The last redraw's time and count, for the current rate.
    last: Option<(Instant, u64)>,
    /// Units (bytes, seeks, files) per second of each kind of test, as last measured.
    rates: [Option<f64>; 4],
}

/// Tests whose speeds are alike: per-char IO, block IO, seeks, file operations.
fn kind(id: BonnieTestId) -> usize {
    use BonnieTestId::*;
    match id {
        Putc | Getc => 0,
        PutBlock | Rewrite | GetBlock => 1,
        Seeks => 2,
        _ => 3,
    }
}

/// Short names for the bar's head.
fn name(id: BonnieTestId) -> &'static str {
    use BonnieTestId::*;
    match id {
        Putc => "per-char write",
        PutBlock => "block write",
        Rewrite => "rewrite",
        Getc => "per-char read",
        GetBlock => "block read",
        Seeks => "random seeks",
        SeqCreate => "sequential create",
        SeqStat => "sequential stat",
        SeqDel => "sequential delete",
        RanCreate => "random create",
        RanStat => "random stat",
        RanDel => "random delete",
    }
}

/// A test's work in the units its rate is given in: bytes for IO, operations otherwise.
fn units(p: &Planned, ops: u64) -> f64 {
    (ops * p.bytes_per_op.unwrap_or(1)) as f64
}

impl<'a> SuiteState<'a> {
    fn new(plan: &'a [Planned]) -> Self {
        SuiteState {
            plan,
            current: None,
            last: None,
            rates: [None; 4],
        }
    }

    fn index(&self, id: BonnieTestId) -> Option<usize> {
        let from = self.current.map_or(0, |c| c.0);
        (from..self.plan.len())
            .find(|&i| self.plan[i].id == id)
            .or_else(|| self.plan.iter().position(|p| p.id == id))
    }

    fn started(&mut self, id: BonnieTestId, now: Instant, count: u64) {
        self.current = self.index(id).map(|i| (i, now, count));
        self.last = Some((now, count));
    }

    fn finished(&mut self, id: BonnieTestId, now: Instant, count: u64) {
        if let Some((i, t0, c0)) = self.current.filter(|c| self.plan[c.0].id == id) {
            let secs = now.duration_since(t0).as_secs_f64();
            let p = &self.plan[i];
            if secs > 0.0 {
                self.rates[kind(id)] = Some(units(p, count.saturating_sub(c0)) / secs);
            }
        }
    }

    /// The bar's line now; None before the first test.
    fn line(&mut self, now: Instant, count: u64) -> Option<BarLine> {
        let (i, t0, c0) = self.current?;
        let p = self.plan[i];
        let done = count.saturating_sub(c0).min(p.ops);
        let (lt, lc) = self.last.unwrap_or((t0, c0));
        let dt = now.duration_since(lt).as_secs_f64();
        let current = if dt > 0.0 {
            units(&p, count.saturating_sub(lc)) / dt
        } else {
            0.0
        };
        self.last = Some((now, count));
        let since = now.duration_since(t0).as_secs_f64();
        let average = (since > 0.2).then(|| units(&p, done) / since);
        let (eta, complete) = self.eta(i, done, average);
        let figure = match (p.bytes_per_op, p.id) {
            (Some(_), _) => format!("{} MB/s", num(current / 1e6)),
            (None, BonnieTestId::Seeks) => format!("{} seeks/s", num(current)),
            (None, _) => format!("{} files/s", num(current)),
        };
        Some(BarLine {
            head: format!("[{}/{}] {}", i + 1, self.plan.len(), name(p.id)),
            fraction: done as f64 / p.ops.max(1) as f64,
            figures: vec![figure],
            // A `>` when a later test's speed is not known yet: the ETA is a lower bound.
            eta: format!(
                "eta {}{}",
                if complete || eta.is_none() { "" } else { ">" },
                eta_text(eta)
            ),
        })
    }

    /// Seconds left in the whole suite (None until the current test has a rate), and
    /// whether every later test could be estimated from a measured rate of its kind.
    fn eta(&self, i: usize, done: u64, average: Option<f64>) -> (Option<u64>, bool) {
        let p = self.plan[i];
        let Some(rate) = average.filter(|r| *r > 0.0) else {
            return (None, false);
        };
        let mut secs = units(&p, p.ops.saturating_sub(done)) / rate;
        let mut complete = true;
        for later in &self.plan[i + 1..] {
            let k = kind(later.id);
            let known = if k == kind(p.id) {
                Some(rate)
            } else {
                self.rates[k]
            };
            match known.filter(|r| *r > 0.0) {
                Some(r) => secs += units(later, later.ops) / r,
                None => complete = false,
            }
        }
        (Some(secs.round() as u64), complete)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(id: BonnieTestId, ops: u64, bytes: Option<u64>) -> Planned {
        Planned {
            id,
            ops,
            bytes_per_op: bytes,
        }
    }

    #[test]
    fn the_bar_shows_the_test_its_rate_and_the_suites_eta() {
        let plan = [
            planned(BonnieTestId::PutBlock, 1000, Some(1_000_000)),
            planned(BonnieTestId::GetBlock, 1000, Some(1_000_000)),
            planned(BonnieTestId::Seeks, 8000, None),
        ];
        let mut s = SuiteState::new(&plan);
        let t0 = Instant::now();
        assert!(s.line(t0, 0).is_none());
        s.started(BonnieTestId::PutBlock, t0, 0);
        // 250 of 1000 MB in one second: 250 MB/s, 3 s left of this test, 4 s of the
        // next (same kind), the seeks unknown: a lower bound.
        let l = s.line(t0 + Duration::from_secs(1), 250).unwrap();
        assert_eq!(l.head, "[1/3] block write");
        assert!((l.fraction - 0.25).abs() < 1e-9);
        assert_eq!(l.figures, ["250.0 MB/s"]);
        assert_eq!(l.eta, "eta >00m:07s");
        s.finished(BonnieTestId::PutBlock, t0 + Duration::from_secs(4), 1000);
        s.started(BonnieTestId::GetBlock, t0 + Duration::from_secs(4), 1000);
        s.finished(BonnieTestId::GetBlock, t0 + Duration::from_secs(6), 2000);
        s.started(BonnieTestId::Seeks, t0 + Duration::from_secs(6), 2000);
        // The last test: 2000 of 8000 seeks in 2 s, 6 s left, nothing unknown.
        let l = s.line(t0 + Duration::from_secs(8), 4000).unwrap();
        assert_eq!(l.head, "[3/3] random seeks");
        assert_eq!(l.figures, ["1,000 seeks/s"]);
        assert_eq!(l.eta, "eta 00m:06s");
    }
}
