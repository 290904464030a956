//! The lines fio prints while a run starts, before any result: one line per job section
//! (`name: (g=0): rw=…, bs=(R) …, ioengine=…, iodepth=N`, then `...` when it has clones),
//! the program line, `Starting N threads`, and `Laying out IO file` per file created.
//! The CLI calls these as the run progresses; they go to stdout in normal output mode only.

use std::io::{self, Write};

use storbench_model::result::{JobHeader, ReportSettings};

use super::units::{Unit, is_pow2, num2str};

/// One job section as announced at start.
#[derive(Clone, Debug)]
pub struct StartJob<'a> {
    pub name: &'a str,
    pub groupid: u32,
    pub header: &'a JobHeader,
    pub settings: &'a ReportSettings,
}

/// `name: (g=0): rw=randrw, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B,
/// ioengine=psync, iodepth=1` (without newline). A `:N` suffix of rw is not shown, as in fio.
pub fn job_line(job: &StartJob) -> String {
    let sig = job.settings.significant_figures;
    let pow2 = is_pow2(job.settings.kb_base);
    let size = |v| num2str(v, sig, 1, pow2, Unit::Byte);
    let bs = &job.header.bs;
    let rw = job.header.rw.split(':').next().unwrap_or_default();
    format!(
        "{}: (g={}): rw={rw}, bs=(R) {}-{}, (W) {}-{}, (T) {}-{}, ioengine={}, iodepth={}",
        crate::terminal::escape(job.name),
        job.groupid,
        size(bs[0].0),
        size(bs[0].1),
        size(bs[1].0),
        size(bs[1].1),
        size(bs[2].0),
        size(bs[2].1),
        job.header.ioengine,
        job.header.iodepth
    )
}

/// The job lines of every section in order, each followed by `...` when it has clones,
/// then the program line and the `Starting …` line, as fio prints them before running.
pub fn write_start(
    jobs: &[StartJob],
    program: &str,
    (threads, processes): (u32, u32),
    out: &mut dyn Write,
) -> io::Result<()> {
    for job in jobs {
        writeln!(out, "{}", job_line(job))?;
        if job.header.numjobs > 1 {
            writeln!(out, "...")?;
        }
    }
    writeln!(out, "{program}")?;
    writeln!(out, "{}", starting_line(threads, processes))
}

/// `Starting 2 threads`, `Starting 1 process`, `Starting 2 threads and 4 processes`: the
/// clones run as threads, and those in processes of their own (posixaio's, unless
/// `thread`), as fio words it.
pub fn starting_line(threads: u32, processes: u32) -> String {
    let plural = |n: u32, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut line = String::from("Starting ");
    if threads > 0 || processes == 0 {
        line.push_str(&plural(threads, "thread", "threads"));
    }
    if processes > 0 {
        if threads > 0 {
            line.push_str(" and ");
        }
        line.push_str(&plural(processes, "process", "processes"));
    }
    line
}

/// `name: Laying out IO file (1 file / 64MiB)`, or `files (3 files / total 192MiB)`.
pub fn layout_line(name: &str, files: u32, total_bytes: u64) -> String {
    let many = files > 1;
    let name = crate::terminal::escape(name);
    format!(
        "{name}: Laying out IO file{} ({files} file{} / {}{}MiB)",
        if many { "s" } else { "" },
        if many { "s" } else { "" },
        if many { "total " } else { "" },
        total_bytes >> 20
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_line_matches_fio() {
        let header = JobHeader {
            rw: "randrw".into(),
            bs: [(4096, 4096); 3],
            ioengine: "psync".into(),
            iodepth: 1,
            numjobs: 1,
            ..Default::default()
        };
        let settings = ReportSettings::default();
        let job = StartJob {
            name: "t",
            groupid: 0,
            header: &header,
            settings: &settings,
        };
        assert_eq!(
            job_line(&job),
            "t: (g=0): rw=randrw, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=psync, iodepth=1"
        );
    }

    #[test]
    fn start_block_matches_fio() {
        let header = JobHeader {
            rw: "randread:8".into(),
            bs: [(1 << 20, 1 << 20), (4096, 4096), (4096, 4096)],
            ioengine: "libaio".into(),
            iodepth: 8,
            numjobs: 2,
            ..Default::default()
        };
        let settings = ReportSettings::default();
        let jobs = [StartJob {
            name: "grp",
            groupid: 0,
            header: &header,
            settings: &settings,
        }];
        let mut out = Vec::new();
        write_start(&jobs, "storbench-0.1.0", (2, 0), &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "grp: (g=0): rw=randread, bs=(R) 1024KiB-1024KiB, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=libaio, iodepth=8\n...\nstorbench-0.1.0\nStarting 2 threads\n"
        );
        assert_eq!(starting_line(1, 0), "Starting 1 thread");
        assert_eq!(starting_line(0, 1), "Starting 1 process");
        assert_eq!(starting_line(0, 12), "Starting 12 processes");
        assert_eq!(starting_line(2, 4), "Starting 2 threads and 4 processes");
        assert_eq!(starting_line(0, 0), "Starting 0 threads");
        assert_eq!(
            layout_line("t", 1, 64 << 20),
            "t: Laying out IO file (1 file / 64MiB)"
        );
        assert_eq!(
            layout_line("nf", 3, 3 << 20),
            "nf: Laying out IO files (3 files / total 3MiB)"
        );
    }
}
