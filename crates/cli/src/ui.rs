//! The terminal side of a run: fio's start lines, the live status line, and where reports
//! go. The runner calls the [`Observer`] methods from its one sampler thread.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use storbench_core::observer::{JobHeaderLine, Observer, Progress};
use storbench_core::progress::WorkerState;
use storbench_core::sampler::LogWindows;
use storbench_job::{JobSpec, RwKind};
use storbench_report::fio::header::{StartJob, layout_line, write_start};
use storbench_report::live::status::{
    EtaMode, EtaStatus, JobState, QuickProgress, StatusLine, eta_line, quick_line,
};

/// How the live line looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveStyle {
    /// fio's `Jobs: 1 (f=1): [r(1)][45.0%]…` line.
    Fio,
    /// `storbench quick`'s wider line with the test name.
    Quick { tests: u32 },
}

/// Prints fio's start-of-run lines (in normal output mode) and the live status line on
/// stderr (on a terminal, or always with `--eta=always`).
pub struct CliObserver<'a> {
    /// Where fio's start lines go (the report's destination), if they are printed at all.
    start_out: Option<&'a mut dyn Write>,
    live: Option<(LiveStyle, StatusLine)>,
    kb_base: u32,
    unit_base: u32,
    batch_index: u32,
    current_batch: Vec<String>,
    timing: EtaTiming,
    /// When the live line was last drawn, and when it last ended with a newline.
    last_drawn: Option<Instant>,
    line_started: Option<Instant>,
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
        let tty = std::io::stderr().is_terminal() && std::io::stdout().is_terminal();
        CliObserver {
            start_out,
            live: eta.show(tty).then(|| (style, StatusLine::default())),
            kb_base: 1024,
            unit_base: 8,
            batch_index: 0,
            current_batch: Vec::new(),
            timing: EtaTiming::default(),
            last_drawn: None,
            line_started: None,
        }
    }

    pub fn with_timing(mut self, timing: EtaTiming) -> Self {
        self.timing = timing;
        self
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

    /// Blanks the status line before the report is printed.
    pub fn finish(&mut self) {
        if let Some((_, line)) = &mut self.live {
            let _ = line.clear(&mut std::io::stderr());
        }
    }
}

impl Observer for CliObserver<'_> {
    /// fio writes a job's logs when it ends, and only reports a file it cannot open.
    fn clone_logs(&mut self, job: &JobSpec, thread_number: u32, logs: &LogWindows) {
        if let Err(e) = storbench_report::live::logs::write_clone_logs(job, thread_number, logs) {
            eprintln!("storbench: warning: {e}");
        }
    }

    fn starting(&mut self, jobs: &[JobHeaderLine]) {
        if let Some(first) = jobs.first() {
            self.kb_base = first.settings.kb_base;
            self.unit_base = first.settings.unit_base;
        }
        let Some(out) = self.start_out.as_deref_mut() else {
            return;
        };
        let start: Vec<StartJob> = jobs
            .iter()
            .map(|j| StartJob {
                name: &j.name,
                groupid: j.group,
                header: &j.header,
                settings: &j.settings,
            })
            .collect();
        let threads = jobs.iter().map(|j| j.header.numjobs.max(1)).sum();
        let program = format!("storbench-{}", env!("CARGO_PKG_VERSION"));
        let _ = write_start(&start, &program, threads, out);
        let _ = out.flush();
    }

    fn laying_out(&mut self, job: &str, files: usize, bytes: u64) {
        if let Some(out) = self.start_out.as_deref_mut() {
            let _ = writeln!(out, "{}", layout_line(job, files as u32, bytes));
            let _ = out.flush();
        } else if let Some((LiveStyle::Quick { .. }, _)) = &self.live {
            eprintln!("preparing {} of test data...", human_bytes(bytes));
        }
    }

    fn progress(&mut self, p: &Progress) {
        let new_batch = p.jobs != self.current_batch;
        if new_batch {
            self.current_batch = p.jobs.clone();
            self.batch_index += 1;
        }
        let now = Instant::now();
        // A new set of jobs (quick's next test) is always shown, however short it is.
        if !(new_batch || self.due(now)) {
            return;
        }
        self.last_drawn = Some(now);
        let newline = self.newline_due(now);
        let Some((style, line)) = &mut self.live else {
            return;
        };
        let text = match style {
            LiveStyle::Fio => eta_line(&fio_status(p, self.kb_base, self.unit_base)),
            LiveStyle::Quick { tests } => quick_line(&quick_status(p, self.batch_index, *tests)),
        };
        let mut err = std::io::stderr();
        let _ = line.update(&text, &mut err);
        if newline {
            let _ = line.end(&mut err);
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

fn quick_status(p: &Progress, index: u32, tests: u32) -> QuickProgress {
    let name = p.jobs.first().cloned().unwrap_or_default();
    let (test, direction) = name
        .rsplit_once(' ')
        .map_or((name.clone(), String::new()), |(t, d)| {
            (t.to_string(), d.to_string())
        });
    QuickProgress {
        index,
        count: tests,
        test,
        direction,
        percent_done: p.percent_done,
        bytes_per_sec: p.bw.iter().sum::<f64>() as u64,
        iops: p.iops.iter().sum::<f64>() as u64,
        mean_lat_ns: p.mean_lat_ns,
        eta_secs: p.eta.map(|d| d.as_secs()),
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
