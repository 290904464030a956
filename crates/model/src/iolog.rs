//! What fio writes per IO while a job runs: the bandwidth, IOPS and latency logs with
//! `log_avg_msec=0` (a line per IO) and the completion latency histogram log
//! (`write_hist_log` with `log_hist_msec`).
//!
//! The IO thread neither formats, allocates nor locks per IO: it copies one fixed-size
//! [`IoRecord`] into a buffer allocated before the job started. A full buffer goes to the
//! batch's one writer thread over a bounded channel and an empty one comes back on the
//! clone's own channel; the writer turns records into fio's lines through the clone's
//! [`IoLogSink`] (the report crate's, which knows the files). A histogram line is a copy
//! of the direction's bins taken once per `log_hist_msec`, into one of a few snapshot
//! buffers that travel the same way.
//!
//! Memory is bounded: a clone owns [`BUFFERS`] buffers of [`RECORDS`] records (48 bytes
//! each: 384 KiB) and [`HIST_BUFFERS`] snapshots of 1856 bins (15 KiB each). When the
//! writer falls behind and none is free, the IO thread waits for one rather than grow,
//! and the time it waited is reported with the run ([`LogWriterReport`]).

use std::io;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::time::Instant;

use crate::histogram::PLAT_NR;

/// fio's log files of a job: each prefix is the one given, or the job's name when given
/// empty. With `log_avg_msec` of 1 ms or more the bandwidth, IOPS and latency logs hold a
/// line per window; with 0 (fio's default) a line per IO.
#[derive(Clone, Debug, PartialEq)]
pub struct LogSpec {
    pub bw: Option<String>,
    pub iops: Option<String>,
    pub lat: Option<String>,
    /// `write_hist_log`: the completion latency histogram log.
    pub hist: Option<String>,
    /// `log_avg_msec`; 0 when not given: a line per IO.
    pub avg_msec: u64,
    /// `log_hist_msec`: a histogram line per direction every this many ms (0: none).
    pub hist_msec: u64,
    /// `log_hist_coarseness`: each line sums 2^this adjacent bins of fio's 1856.
    pub hist_coarseness: u32,
    /// `log_max_value`: the window's maximum instead of its mean.
    pub max_value: bool,
    /// `per_job_logs`: `<prefix>_bw.<N>.log` (true) or one `<prefix>_bw.log` appended to.
    pub per_job: bool,
    /// `log_offset`: lines carry an offset column (0 in averaged lines, as fio's).
    pub offset: bool,
    /// `log_prio`: the priority column is the IO's priority value in hex (`0x0000`), not
    /// the 0/1 real-time flag.
    pub prio: bool,
}

impl Default for LogSpec {
    fn default() -> Self {
        LogSpec {
            bw: None,
            iops: None,
            lat: None,
            hist: None,
            avg_msec: 0,
            hist_msec: 0,
            hist_coarseness: 0,
            max_value: false,
            per_job: true,
            offset: false,
            prio: false,
        }
    }
}

impl LogSpec {
    /// Whether any bandwidth, IOPS or latency log is asked for.
    pub fn any(&self) -> bool {
        self.bw.is_some() || self.iops.is_some() || self.lat.is_some()
    }

    /// Whether those logs are averaged over `log_avg_msec` windows (kept by the sampler).
    pub fn averaged(&self) -> bool {
        self.any() && self.avg_msec > 0
    }

    /// Whether a log takes one line per IO, or the histogram log is asked for: what the
    /// worker hands to a log writer thread as it goes.
    pub fn streamed(&self) -> bool {
        (self.any() && self.avg_msec == 0) || self.hist.is_some()
    }
}

/// What a job's log files depend on: its log options and which of its figures it measures
/// (fio's `disable_lat`, `disable_slat`, `disable_clat`, `disable_bw`).
#[derive(Clone, Copy, Debug)]
pub struct LogJob<'a> {
    pub logs: &'a LogSpec,
    pub disable_lat: bool,
    pub disable_slat: bool,
    pub disable_clat: bool,
    pub disable_bw: bool,
}

/// Records per buffer.
pub const RECORDS: usize = 2048;
/// Record buffers per job clone.
pub const BUFFERS: usize = 4;
/// Histogram snapshots per job clone.
pub const HIST_BUFFERS: usize = 4;
/// What a logging clone holds: its record buffers, its snapshots in flight and the
/// worker's three previous snapshots (counted by the run's memory check).
pub const MEMORY_PER_CLONE: u64 =
    (BUFFERS * RECORDS * std::mem::size_of::<IoRecord>() + (HIST_BUFFERS + 3) * PLAT_NR * 8) as u64;

/// One completed read, write or trim, as fio's per-IO log lines need it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoRecord {
    /// Completion, ns since the clone started measuring (fio's job epoch).
    pub t_ns: u64,
    /// Issue to completion (fio's `clat`, which also gives the bandwidth of the IO).
    pub clat_ns: u64,
    /// Start to completion (fio's `lat`).
    pub lat_ns: u64,
    /// Start to issue; meaningful when `slat` is set.
    pub slat_ns: u64,
    pub offset: u64,
    /// Bytes completed.
    pub bytes: u32,
    /// 0 read, 1 write, 2 trim.
    pub ddir: u8,
    /// Whether the engine measured a submission latency for this IO.
    pub slat: bool,
    /// The IO's priority (`class << 13 | level`): its own (`cmdprio*`) or the job's.
    pub ioprio: u16,
}

/// One line of the histogram log: the bins of direction `ddir` that completed since its
/// previous line, at `t_ms` since the clone's epoch, with the block size of the IO that
/// closed the window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistLine {
    pub t_ms: u64,
    pub ddir: u8,
    pub bs: u32,
    pub bins: Box<[u64; PLAT_NR]>,
}

impl HistLine {
    fn empty() -> Self {
        HistLine {
            t_ms: 0,
            ddir: 0,
            bs: 0,
            bins: Box::new([0; PLAT_NR]),
        }
    }
}

/// Where one clone's records and histogram lines go (its log files), on the writer thread.
pub trait IoLogSink: Send {
    fn records(&mut self, recs: &[IoRecord]) -> io::Result<()>;
    fn hist(&mut self, line: &HistLine) -> io::Result<()>;
    /// The clone is done: write out what is buffered.
    fn finish(&mut self) -> io::Result<()>;
}

enum Msg {
    Io(usize, Vec<IoRecord>),
    Hist(usize, HistLine),
    /// The clone's logger ended, having waited this long for free buffers.
    Done(usize, u64),
}

/// The IO thread's end: the buffer being filled and the channels that exchange buffers.
pub struct IoLogger {
    clone: usize,
    cur: Vec<IoRecord>,
    full: SyncSender<Msg>,
    empty: Receiver<Vec<IoRecord>>,
    empty_hist: Receiver<HistLine>,
    waited_ns: u64,
    finished: bool,
}

impl IoLogger {
    /// Keeps one record; hands the buffer over when it is full.
    #[inline]
    pub fn push(&mut self, r: IoRecord) {
        self.cur.push(r);
        if self.cur.len() == self.cur.capacity() {
            self.hand_over();
        }
    }

    #[cold]
    fn hand_over(&mut self) {
        let next = self.wait(|l| l.empty.try_recv(), |l| l.empty.recv().ok());
        let Some(next) = next else {
            // The writer is gone (it failed to start): the records are dropped, not kept.
            self.cur.clear();
            return;
        };
        let full = std::mem::replace(&mut self.cur, next);
        let _ = self.full.send(Msg::Io(self.clone, full));
    }

    /// A free buffer now, or after waiting (counted); None when the writer is gone.
    fn wait<T>(
        &mut self,
        now: impl Fn(&Self) -> Result<T, TryRecvError>,
        block: impl Fn(&Self) -> Option<T>,
    ) -> Option<T> {
        match now(self) {
            Ok(b) => Some(b),
            Err(TryRecvError::Disconnected) => None,
            Err(TryRecvError::Empty) => {
                let t = Instant::now();
                let b = block(self);
                self.waited_ns += t.elapsed().as_nanos() as u64;
                b
            }
        }
    }

    /// A free histogram snapshot to fill, or None when the writer is gone.
    #[cold]
    pub fn hist_buffer(&mut self) -> Option<HistLine> {
        self.wait(|l| l.empty_hist.try_recv(), |l| l.empty_hist.recv().ok())
    }

    /// Sends a filled histogram line.
    pub fn send_hist(&mut self, line: HistLine) {
        let _ = self.full.send(Msg::Hist(self.clone, line));
    }

    /// Sends what is left and says the clone is done (once; dropping a logger does it).
    pub fn finish(&mut self) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        if !self.cur.is_empty() {
            let rest = std::mem::take(&mut self.cur);
            let _ = self.full.send(Msg::Io(self.clone, rest));
        }
        let _ = self.full.send(Msg::Done(self.clone, self.waited_ns));
    }
}

impl Drop for IoLogger {
    fn drop(&mut self) {
        self.finish();
    }
}

/// What the writer thread reports when the batch ends: failures and waits, one line each.
#[derive(Debug, Default)]
pub struct LogWriterReport {
    pub warnings: Vec<String>,
}

/// The writer thread's end: every clone's sink and its channels back.
pub struct LogWriter {
    rx: Receiver<Msg>,
    clones: Vec<WriterClone>,
}

struct WriterClone {
    name: String,
    sink: Option<Box<dyn IoLogSink>>,
    back: SyncSender<Vec<IoRecord>>,
    back_hist: SyncSender<HistLine>,
    error: Option<io::Error>,
    done: bool,
}

/// Builds the loggers of a batch: one per clone that logs, then the writer.
pub struct LogPipes {
    tx: SyncSender<Msg>,
    rx: Receiver<Msg>,
    clones: Vec<WriterClone>,
}

impl LogPipes {
    /// Room on the shared channel for every buffer of `clones` clones, so a send never
    /// waits.
    pub fn new(clones: usize) -> Self {
        let (tx, rx) = sync_channel(clones.max(1) * (BUFFERS + HIST_BUFFERS + 1));
        LogPipes {
            tx,
            rx,
            clones: Vec::new(),
        }
    }

    /// A logger writing through `sink`; `name` names the clone in warnings. Allocates the
    /// clone's buffers now, before any IO.
    pub fn add(&mut self, name: String, sink: Box<dyn IoLogSink>) -> IoLogger {
        let (back, empty) = sync_channel(BUFFERS);
        for _ in 1..BUFFERS {
            let _ = back.send(Vec::with_capacity(RECORDS));
        }
        let (back_hist, empty_hist) = sync_channel(HIST_BUFFERS);
        for _ in 0..HIST_BUFFERS {
            let _ = back_hist.send(HistLine::empty());
        }
        let clone = self.clones.len();
        self.clones.push(WriterClone {
            name,
            sink: Some(sink),
            back,
            back_hist,
            error: None,
            done: false,
        });
        IoLogger {
            clone,
            cur: Vec::with_capacity(RECORDS),
            full: self.tx.clone(),
            empty,
            empty_hist,
            waited_ns: 0,
            finished: false,
        }
    }

    /// The writer, once every logger is made (None when no clone logs).
    pub fn writer(self) -> Option<LogWriter> {
        (!self.clones.is_empty()).then_some(LogWriter {
            rx: self.rx,
            clones: self.clones,
        })
    }
}

/// Waits below which a clone's wait for free log buffers is not reported, ns.
const WAIT_REPORTED_NS: u64 = 1_000_000;

impl LogWriter {
    /// Writes until every logger has finished (or been dropped), then closes the sinks.
    pub fn run(mut self) -> LogWriterReport {
        let mut report = LogWriterReport::default();
        while let Ok(msg) = self.rx.recv() {
            match msg {
                Msg::Io(i, mut recs) => {
                    let c = &mut self.clones[i];
                    c.write(|s| s.records(&recs));
                    recs.clear();
                    let _ = c.back.try_send(recs);
                }
                Msg::Hist(i, line) => {
                    let c = &mut self.clones[i];
                    c.write(|s| s.hist(&line));
                    let _ = c.back_hist.try_send(line);
                }
                Msg::Done(i, waited_ns) => {
                    let c = &mut self.clones[i];
                    c.write(|s| s.finish());
                    c.sink = None;
                    c.done = true;
                    if waited_ns >= WAIT_REPORTED_NS {
                        report.warnings.push(format!(
                            "{}: the IO thread waited {} ms for the log writer (per-IO logs)",
                            c.name,
                            waited_ns / 1_000_000
                        ));
                    }
                }
            }
            // Every logger has sent its Done: no sender but ours would remain otherwise.
            if self.clones.iter().all(|c| c.done) {
                break;
            }
        }
        for c in &mut self.clones {
            c.write(|s| s.finish());
            if let Some(e) = c.error.take() {
                report.warnings.push(format!("{}: {e}", c.name));
            }
        }
        report
    }
}

impl WriterClone {
    /// Runs `f` on the sink unless it failed before; the first failure is kept and the
    /// sink dropped, so the job goes on without its logs.
    fn write(&mut self, f: impl FnOnce(&mut dyn IoLogSink) -> io::Result<()>) {
        if let Some(s) = self.sink.as_deref_mut()
            && let Err(e) = f(s)
        {
            self.error.get_or_insert(e);
            self.sink = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    struct Seen {
        recs: Vec<IoRecord>,
        hists: Vec<(u64, u64)>,
        finished: bool,
    }

    struct Sink(Arc<Mutex<Seen>>, bool);

    impl IoLogSink for Sink {
        fn records(&mut self, recs: &[IoRecord]) -> io::Result<()> {
            if self.1 {
                return Err(io::Error::other("disk full"));
            }
            self.0.lock().unwrap().recs.extend_from_slice(recs);
            Ok(())
        }
        fn hist(&mut self, line: &HistLine) -> io::Result<()> {
            self.0.lock().unwrap().hists.push((line.t_ms, line.bins[3]));
            Ok(())
        }
        fn finish(&mut self) -> io::Result<()> {
            self.0.lock().unwrap().finished = true;
            Ok(())
        }
    }

    /// Records cross buffers in order; histogram lines arrive; every sink is finished,
    /// and a failing sink is one warning while the others go on.
    #[test]
    fn records_reach_the_sinks_in_order() {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let bad = Arc::new(Mutex::new(Seen::default()));
        let mut pipes = LogPipes::new(2);
        let mut a = pipes.add("a".into(), Box::new(Sink(seen.clone(), false)));
        let mut b = pipes.add("b".into(), Box::new(Sink(bad.clone(), true)));
        let writer = pipes.writer().unwrap();
        let t = std::thread::spawn(move || writer.run());
        let n = RECORDS * (BUFFERS + 2) + 7;
        for i in 0..n {
            a.push(IoRecord {
                t_ns: i as u64,
                ..IoRecord::default()
            });
            b.push(IoRecord::default());
        }
        let mut h = a.hist_buffer().unwrap();
        h.t_ms = 42;
        h.bins[3] = 9;
        a.send_hist(h);
        a.finish();
        b.finish();
        let report = t.join().unwrap();
        let s = seen.lock().unwrap();
        assert_eq!(s.recs.len(), n);
        assert!(s.recs.iter().enumerate().all(|(i, r)| r.t_ns == i as u64));
        assert_eq!(s.hists, [(42, 9)]);
        assert!(s.finished);
        // Under load the IO thread may also have waited for buffers: that is its own line.
        let failed: Vec<_> = report
            .warnings
            .iter()
            .filter(|w| !w.contains("waited"))
            .collect();
        assert_eq!(failed.len(), 1, "{:?}", report.warnings);
        assert!(failed[0].starts_with("b: disk full"));
    }

    /// A logger whose writer is gone neither blocks nor panics.
    #[test]
    fn a_logger_without_its_writer_goes_on() {
        let mut pipes = LogPipes::new(1);
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mut a = pipes.add("a".into(), Box::new(Sink(seen, false)));
        drop(pipes);
        for _ in 0..RECORDS * (BUFFERS + 1) {
            a.push(IoRecord::default());
        }
        // The snapshots made at the start, then none.
        for _ in 0..HIST_BUFFERS {
            assert!(a.hist_buffer().is_some());
        }
        assert!(a.hist_buffer().is_none());
        a.finish();
    }
}
