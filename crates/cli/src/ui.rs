//! The terminal side of a run: fio's start lines, the live status, and where reports go.
//! The runner calls the [`Observer`] methods from its one sampler thread.
//!
//! The live status is a bar fitted to the terminal ([`crate::live::LiveBar`]) on a
//! terminal; with `--eta=always` elsewhere, or with fio's `--eta-newline`, it is text:
//! fio's `\r`-rewritten line in fio mode, plain lines for quick.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use storbench_core::observer::{JobHeaderLine, Observer, Progress};
use storbench_core::progress::WorkerState;
use storbench_core::sampler::LogWindows;
use storbench_job::{JobSpec, RwKind};
use storbench_report::fio::header::{StartJob, layout_line, write_start};
use storbench_report::live::status::{
    EtaMode, EtaStatus, JobState, QuickProgress, StatusLine, eta_line, fio_bar, quick_bar,
    quick_line,
};

use crate::live::LiveBar;

/// How the live line looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveStyle {
    /// fio's `Jobs: 1 (f=1): [r(1)][45.0%]…` line.
    Fio,
    /// `storbench quick`'s wider line with the test name.
    Quick,
}

/// Prints fio's start-of-run lines (in normal output mode) and the live status line on
/// stderr (on a terminal, or always with `--eta=always`).
pub struct CliObserver<'a> {
    /// Where fio's start lines go (the report's destination), if they are printed at all.
    start_out: Option<&'a mut dyn Write>,
    style: LiveStyle,
    live: Option<Live>,
    kb_base: u32,
    unit_base: u32,
    current_batch: Vec<String>,
    timing: EtaTiming,
    /// When the live line was last drawn, and when it last ended with a newline.
    last_drawn: Option<Instant>,
    line_started: Option<Instant>,
}

/// Where the live status goes.
enum Live {
    /// A terminal: the bar, fitted and redrawn in place.
    Bar(LiveBar),
    /// fio's line rewritten with `\r` (`--eta=always` off a terminal, `--eta-newline`).
    Line(StatusLine),
    /// quick off a terminal with `--eta=always`: one plain line per redraw.
    Plain,
}

/// How often the live line is redrawn, and whether it scrolls (fio's `--eta-interval` and
/// `--eta-newline`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EtaTiming {
    pub interval: Duration,
    pub newline: Option<Duration>,
}

impl Default for EtaTiming {
    /// fio's defaults: a redraw every second, on one line.
    fn default() -> Self {
        EtaTiming {
            interval: Duration::from_secs(1),
            newline: None,
        }
    }
}

impl<'a> CliObserver<'a> {
    pub fn new(start_out: Option<&'a mut dyn Write>, eta: EtaMode, style: LiveStyle) -> Self {
        // fio's rule looks at stdout, where fio prints its line; quick's bar is on stderr
        // whatever stdout is (`storbench quick > table.txt` still shows it).
        let stderr_tty = std::io::stderr().is_terminal();
        let tty = stderr_tty && (style != LiveStyle::Fio || std::io::stdout().is_terminal());
        let live = eta.show(tty).then(|| match style {
            _ if stderr_tty => Live::Bar(LiveBar::new()),
            LiveStyle::Fio => Live::Line(StatusLine::default()),
            LiveStyle::Quick => Live::Plain,
        });
        CliObserver {
            start_out,
            style,
            live,
            kb_base: 1024,
            unit_base: 8,
            current_batch: Vec::new(),
            timing: EtaTiming::default(),
            last_drawn: None,
            line_started: None,
        }
    }

    pub fn with_timing(mut self, timing: EtaTiming) -> Self {
        self.timing = timing;
        // A line kept every so often is text that scrolls, not a bar.
        if timing.newline.is_some() && matches!(self.live, Some(Live::Bar(_))) {
            self.live = Some(match self.style {
                LiveStyle::Fio => Live::Line(StatusLine::default()),
                LiveStyle::Quick => Live::Plain,
            });
        }
        self
    }

    /// Prints with the bar off the screen, so the text does not mix with it.
    fn print(&mut self, f: impl FnOnce(&mut Option<&'a mut dyn Write>)) {
        match &self.live {
            Some(Live::Bar(bar)) => bar.suspend(|| f(&mut self.start_out)),
            _ => f(&mut self.start_out),
        }
    }

    /// Whether a redraw is due now; the first one always is. fio redraws once 95 % of the
    /// interval has passed, so the sampler's own jitter does not skip a beat.
    fn due(&self, now: Instant) -> bool {
        self.last_drawn
            .is_none_or(|t| now.duration_since(t) >= self.timing.interval * 95 / 100)
    }

    /// Whether this redraw should end its line so the next starts a new one.
    fn newline_due(&mut self, now: Instant) -> bool {
        let Some(every) = self.timing.newline else {
            return false;
        };
        let started = *self.line_started.get_or_insert(now);
        if now.duration_since(started) >= every {
            self.line_started = Some(now);
            return true;
        }
        false
    }

    /// One warning line for each error, printed with the bar off the screen.
    fn warn_each(&mut self, errors: &[std::io::Error]) {
        for e in errors {
            let line = storbench_report::terminal::escape(&e.to_string()).into_owned();
            self.print(|_| eprintln!("storbench: warning: {line}"));
        }
    }

    /// Blanks the status line before the report is printed.
    pub fn finish(&mut self) {
        match &mut self.live {
            Some(Live::Bar(bar)) => bar.clear(),
            Some(Live::Line(line)) => {
                let _ = line.clear(&mut std::io::stderr());
            }
            _ => {}
        }
    }
}

impl Observer for CliObserver<'_> {
    /// fio writes a job's logs when it ends, and only reports (one line each) the files it
    /// cannot write; its exit status stays 0 (fio 3.33 does the same).
    fn clone_logs(&mut self, job: &JobSpec, thread_number: u32, logs: &LogWindows) {
        let failed =
            storbench_report::live::logs::write_clone_logs(job.log_job(), thread_number, logs);
        self.warn_each(&failed);
    }

    /// Per-IO and histogram logs are written while the job runs; each file that cannot be
    /// opened is a warning, and the job runs without it.
    fn unit_log_sink(
        &mut self,
        job: &JobSpec,
        thread_number: u32,
    ) -> Option<Box<dyn storbench_model::iolog::IoLogSink>> {
        let (logs, failed) =
            storbench_report::live::unit_logs::UnitLogs::open(job.log_job(), thread_number);
        self.warn_each(&failed);
        Some(Box::new(logs))
    }

    fn log_warning(&mut self, message: &str) {
        self.print(|_| eprintln!("storbench: warning: {message}"));
    }

    fn starting(&mut self, jobs: &[JobHeaderLine]) {
        if let Some(first) = jobs.first() {
            self.kb_base = first.settings.kb_base;
            self.unit_base = first.settings.unit_base;
        }
        if self.start_out.is_none() {
            return;
        }
        // fio prints no job line for a job without files (cpuio, exec).
        let start: Vec<StartJob> = jobs
            .iter()
            .filter(|j| !j.no_file)
            .map(|j| StartJob {
                name: &j.name,
                groupid: j.group,
                header: &j.header,
                settings: &j.settings,
            })
            .collect();
        let clones = |processes: bool| {
            jobs.iter()
                .filter(|j| j.processes == processes)
                .map(|j| j.header.numjobs.max(1))
                .sum::<u32>()
        };
        let threads = (clones(false), clones(true));
        let program = storbench_job::fio_style_version(env!("CARGO_PKG_VERSION"));
        self.print(|out| {
            if let Some(out) = out.as_deref_mut() {
                let _ = write_start(&start, &program, threads, out);
                let _ = out.flush();
            }
        });
    }

    fn engine_lines(&mut self, lines: &[String]) {
        self.print(|out| {
            if let Some(out) = out.as_deref_mut() {
                for l in lines {
                    let _ = writeln!(out, "{}", storbench_report::terminal::escape(l));
                }
                let _ = out.flush();
            }
        });
    }

    fn laying_out(&mut self, job: &str, files: usize, bytes: u64) {
        if let Some(Live::Bar(bar)) = &mut self.live {
            bar.layout_done();
        }
        let quick = matches!(self.style, LiveStyle::Quick);
        let shown = self.live.is_some();
        self.print(|out| {
            if let Some(out) = out.as_deref_mut() {
                let _ = writeln!(out, "{}", layout_line(job, files as u32, bytes));
                let _ = out.flush();
            } else if quick && shown {
                eprintln!("preparing {} of test data...", human_bytes(bytes));
            }
        });
    }

    fn layout_progress(&mut self, job: &str, done: u64, total: u64) {
        if let Some(Live::Bar(bar)) = &mut self.live {
            let what = match self.style {
                LiveStyle::Quick => "laying out".to_string(),
                LiveStyle::Fio => format!("{job}: laying out"),
            };
            bar.layout(&what, done, total);
        }
    }

    fn progress(&mut self, p: &Progress) {
        let new_batch = p.jobs != self.current_batch;
        if new_batch {
            self.current_batch = p.jobs.clone();
        }
        let now = Instant::now();
        // A new set of jobs (quick's next test) is always shown, however short it is.
        if !(new_batch || self.due(now)) {
            return;
        }
        self.last_drawn = Some(now);
        let newline = self.newline_due(now);
        let (kb_base, unit_base) = (self.kb_base, self.unit_base);
        let mut err = std::io::stderr();
        match (&mut self.live, self.style) {
            (None, _) => {}
            (Some(Live::Bar(bar)), LiveStyle::Fio) => {
                let mut st = fio_status(p, kb_base, unit_base);
                st.eta_secs = run_eta(p);
                bar.show(&fio_bar(&st));
            }
            (Some(Live::Bar(bar)), LiveStyle::Quick) => {
                bar.show(&quick_bar(&quick_status(p)));
            }
            (Some(Live::Line(line)), _) => {
                let _ = line.update(&eta_line(&fio_status(p, kb_base, unit_base)), &mut err);
                if newline {
                    let _ = line.end(&mut err);
                }
            }
            (Some(Live::Plain), _) => {
                let _ = writeln!(err, "{}", quick_line(&quick_status(p)));
            }
        }
    }
}

fn fio_status(p: &Progress, kb_base: u32, unit_base: u32) -> EtaStatus {
    let states: Vec<JobState> = p
        .workers
        .iter()
        .map(|(s, kind)| job_state(*s, *kind))
        .collect();
    let running = p
        .workers
        .iter()
        .filter(|(s, _)| !matches!(s, WorkerState::Done | WorkerState::Error))
        .count() as u32;
    EtaStatus {
        jobs_running: running,
        files_open: p.files_open,
        states,
        percent_done: Some(p.percent_done),
        rate_bytes: p.bw.map(|v| v as u64),
        iops: p.iops.map(|v| v as u64),
        eta_secs: p.eta.map(|d| d.as_secs()),
        rate_limits: None,
        kb_base,
        unit_base,
    }
}

fn job_state(state: WorkerState, kind: RwKind) -> JobState {
    match state {
        WorkerState::Setup | WorkerState::LayingOut => JobState::SettingUp,
        WorkerState::Ramp => JobState::Ramp,
        WorkerState::Running => JobState::Running {
            random: kind.is_random(),
            reads: kind.reads(),
            writes: kind.writes() && !kind.trims(),
            trims: kind.trims(),
        },
        WorkerState::Finishing => JobState::Finishing,
        WorkerState::Done => JobState::Done,
        WorkerState::Error => JobState::Error,
    }
}

/// The whole run's time left, in seconds: this batch's and the later ones' (by their
/// runtimes); when a later batch ends by size only, this batch's time is all there is.
fn run_eta(p: &Progress) -> Option<u64> {
    p.run_eta().or(p.eta).map(|d| d.as_secs())
}

fn quick_status(p: &Progress) -> QuickProgress {
    let name = p.jobs.first().cloned().unwrap_or_default();
    let (test, direction) = name
        .rsplit_once(' ')
        .map_or((name.clone(), String::new()), |(t, d)| {
            (t.to_string(), d.to_string())
        });
    QuickProgress {
        index: p.batch as u32 + 1,
        count: p.batches as u32,
        test,
        direction,
        percent_done: p.percent_done,
        bytes_per_sec: p.bw.iter().sum::<f64>() as u64,
        iops: p.iops.iter().sum::<f64>() as u64,
        mean_lat_ns: p.mean_lat_ns,
        eta_secs: run_eta(p),
    }
}

/// `1.0 GiB`, `512 MiB`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// The width of the terminal stdout writes to (TIOCGWINSZ), else `COLUMNS`; None when
/// neither says (a pipe or a file gets the wide layout).
pub fn stdout_columns() -> Option<usize> {
    if std::io::stdout().is_terminal() {
        let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
        // SAFETY: TIOCGWINSZ fills the winsize it is given and fails on anything else.
        if unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) } == 0 && ws.ws_col > 0 {
            return Some(usize::from(ws.ws_col));
        }
    }
    std::env::var("COLUMNS").ok()?.trim().parse().ok()
}
