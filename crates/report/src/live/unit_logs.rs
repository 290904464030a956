//! fio 3.33's per-IO log lines (`log_avg_msec=0`) and its latency histogram log
//! (`write_hist_log`), written on the runner's log writer thread from the records the IO
//! threads hand over (`storbench_model::iolog`).
//!
//! Facts from fio 3.33's source:
//! - per IO (io_u.c `account_io_completion`, stat.c `add_*_sample`): the lat and clat
//!   logs get the IO's latency in ns, the bandwidth log `bytes * 1000000 / clat_ns`
//!   (0 without a time), the IOPS log 1 (not under gtod_reduce), the slat log the
//!   submission latency when the IO is submitted (empty for synchronous engines); each
//!   line carries the IO's bytes as its block size and, with `log_offset`, its offset.
//!   The time column is ms since the job's epoch (reset when the ramp ends).
//! - the histogram log (iolog.c `flush_hist_samples`): `time, ddir, bs, ` then the bins
//!   that completed since the direction's previous line, `1 << log_hist_coarseness`
//!   adjacent bins summed, comma-separated; no offset or priority column.

use std::fs::File;
use std::io::{self, Write};

use storbench_model::histogram::PLAT_NR;
use storbench_model::iolog::{HistLine, IoLogSink, IoRecord, LogJob};

use super::logs::{LogKind, file_name, open_log, wanted_files};

/// Bytes of lines gathered before a write: whole lines only, so clones appending to one
/// shared file (`per_job_logs=0`) never split one another's lines.
const FLUSH_AT: usize = 64 * 1024;

struct LogFile {
    name: String,
    kind: LogKind,
    file: File,
    buf: Vec<u8>,
}

impl LogFile {
    fn open(name: String, kind: LogKind, per_job: bool) -> io::Result<Self> {
        let file = open_log(&name, per_job).map_err(|e| named(&name, e))?;
        Ok(LogFile {
            name,
            kind,
            file,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
        })
    }

    fn flush_if_full(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = self.file.write_all(&self.buf);
        self.buf.clear();
        r.map_err(|e| named(&self.name, e))
    }
}

fn named(name: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("log file {name}: {e}"))
}

/// What one job's lines need to know.
#[derive(Clone, Copy)]
struct Columns {
    offset: bool,
    /// The priority column is the IO's priority in hex (`log_prio`), else 1 for the
    /// real-time class and 0 for the others.
    hex_prio: bool,
    bw: bool,
    iops: bool,
    coarseness: u32,
}

/// One job clone's per-IO and histogram log files.
pub struct UnitLogs {
    files: Vec<LogFile>,
    hist: Option<LogFile>,
    cols: Columns,
}

impl UnitLogs {
    /// Opens (creating or truncating, as fio does) the files clone `thread_number` of `job`
    /// writes while it runs. A file that cannot be opened does not keep the others from
    /// being written: each failure is returned beside the logs, naming its file.
    pub fn open(job: LogJob<'_>, thread_number: u32) -> (Self, Vec<io::Error>) {
        let l = job.logs;
        let mut failed = Vec::new();
        let mut opened = |name, kind| {
            LogFile::open(name, kind, l.per_job)
                .map_err(|e| failed.push(e))
                .ok()
        };
        let mut files = Vec::new();
        if l.any() && l.avg_msec == 0 {
            for (name, kind) in wanted_files(job, thread_number) {
                files.extend(opened(name, kind));
            }
        }
        let hist = l.hist.as_ref().and_then(|p| {
            let name = file_name(p, LogKind::Hist, thread_number, l.per_job);
            opened(name, LogKind::Hist)
        });
        // gtod_reduce switches every latency and the bandwidth off: fio's `no_reduce`.
        let reduced = job.disable_lat && job.disable_clat && job.disable_slat && job.disable_bw;
        let logs = UnitLogs {
            files,
            hist,
            cols: Columns {
                offset: l.offset,
                hex_prio: l.prio,
                bw: !job.disable_bw,
                iops: !reduced,
                coarseness: l.hist_coarseness,
            },
        };
        (logs, failed)
    }
}

/// The (time ms, value) of `r`'s line in a log of `kind`, if it has one.
fn sample(kind: LogKind, r: &IoRecord, c: &Columns) -> Option<(u64, u64)> {
    let t = r.t_ns / 1_000_000;
    match kind {
        LogKind::Bw if c.bw => {
            let rate = (u64::from(r.bytes) * 1_000_000)
                .checked_div(r.clat_ns)
                .unwrap_or(0);
            Some((t, rate))
        }
        LogKind::Iops if c.iops => Some((t, 1)),
        LogKind::Lat => Some((t, r.lat_ns)),
        LogKind::Clat => Some((t, r.clat_ns)),
        LogKind::Slat if r.slat => Some((r.t_ns.saturating_sub(r.clat_ns) / 1_000_000, r.slat_ns)),
        _ => None,
    }
}

/// Appends fio's per-IO line: `time, value, ddir, bs, [offset, ]prio`.
fn line(out: &mut Vec<u8>, t: u64, v: u64, r: &IoRecord, c: &Columns) {
    let _ = write!(out, "{t}, {v}, {}, {}, ", r.ddir, r.bytes);
    if c.offset {
        let _ = write!(out, "{}, ", r.offset);
    }
    let _ = if c.hex_prio {
        writeln!(out, "0x{:04x}", r.ioprio)
    } else {
        writeln!(out, "{}", u8::from(r.ioprio >> 13 == 1))
    };
}

/// Appends fio's histogram line, `1 << coarseness` bins summed per column.
pub fn hist_line(out: &mut Vec<u8>, h: &HistLine, coarseness: u32) {
    let _ = write!(out, "{}, {}, {}, ", h.t_ms, h.ddir, h.bs);
    let stride = 1usize << coarseness;
    for (i, chunk) in h.bins[..PLAT_NR].chunks(stride).enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        let _ = write!(out, "{}", chunk.iter().sum::<u64>());
    }
    out.push(b'\n');
}

impl IoLogSink for UnitLogs {
    fn records(&mut self, recs: &[IoRecord]) -> io::Result<()> {
        let c = self.cols;
        for f in &mut self.files {
            for r in recs {
                if let Some((t, v)) = sample(f.kind, r, &c) {
                    line(&mut f.buf, t, v, r, &c);
                }
            }
            f.flush_if_full()?;
        }
        Ok(())
    }

    fn hist(&mut self, h: &HistLine) -> io::Result<()> {
        if let Some(f) = &mut self.hist {
            hist_line(&mut f.buf, h, self.cols.coarseness);
            f.flush_if_full()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        for f in self.files.iter_mut().chain(self.hist.as_mut()) {
            f.flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> Columns {
        Columns {
            offset: false,
            hex_prio: false,
            bw: true,
            iops: true,
            coarseness: 0,
        }
    }

    fn rec() -> IoRecord {
        IoRecord {
            t_ns: 7_900_000,
            clat_ns: 133_690,
            lat_ns: 134_091,
            slat_ns: 0,
            offset: 8192,
            bytes: 4096,
            ddir: 0,
            slat: false,
            ioprio: 0,
        }
    }

    fn text(kind: LogKind, r: &IoRecord, c: &Columns) -> String {
        let mut out = Vec::new();
        if let Some((t, v)) = sample(kind, r, c) {
            line(&mut out, t, v, r, c);
        }
        String::from_utf8(out).unwrap()
    }

    /// fio 3.33's lines for an IO of 4096 bytes and 133690 ns clat: the bandwidth is
    /// 4096 * 1000000 / 133690, truncated.
    #[test]
    fn per_io_lines_are_fios() {
        let c = cols();
        let r = rec();
        assert_eq!(text(LogKind::Bw, &r, &c), "7, 30638, 0, 4096, 0\n");
        assert_eq!(text(LogKind::Iops, &r, &c), "7, 1, 0, 4096, 0\n");
        assert_eq!(text(LogKind::Clat, &r, &c), "7, 133690, 0, 4096, 0\n");
        assert_eq!(text(LogKind::Lat, &r, &c), "7, 134091, 0, 4096, 0\n");
        assert_eq!(text(LogKind::Slat, &r, &c), "", "no slat measured");
        let mut c = cols();
        c.offset = true;
        c.hex_prio = true;
        let mut r = rec();
        r.slat = true;
        r.slat_ns = 2500;
        r.ddir = 1;
        // Submitted at 7.90 ms - 0.13 ms: in ms 7.
        assert_eq!(
            text(LogKind::Slat, &r, &c),
            "7, 2500, 1, 4096, 8192, 0x0000\n"
        );
        c.bw = false;
        c.iops = false;
        assert_eq!(text(LogKind::Bw, &r, &c), "");
        assert_eq!(text(LogKind::Iops, &r, &c), "");
    }

    #[test]
    fn histogram_lines_sum_bins_by_coarseness() {
        let mut h = HistLine {
            t_ms: 1000,
            ddir: 1,
            bs: 4096,
            bins: Box::new([0; PLAT_NR]),
        };
        h.bins[0] = 1;
        h.bins[1] = 2;
        h.bins[PLAT_NR - 1] = 5;
        let mut out = Vec::new();
        hist_line(&mut out, &h, 0);
        let s = String::from_utf8(out).unwrap();
        let cols: Vec<&str> = s.trim_end().split(", ").collect();
        assert_eq!(cols.len(), 3 + PLAT_NR);
        assert_eq!(&cols[..5], ["1000", "1", "4096", "1", "2"]);
        assert_eq!(cols.last(), Some(&"5"));
        let mut out = Vec::new();
        hist_line(&mut out, &h, 6);
        let s = String::from_utf8(out).unwrap();
        let cols: Vec<&str> = s.trim_end().split(", ").collect();
        assert_eq!(cols.len(), 3 + 29);
        assert_eq!((cols[3], cols[31]), ("3", "5"));
    }
}
