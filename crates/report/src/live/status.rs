//! Live progress lines: fio's ETA line (`Jobs: 1 (f=1): [m(1)][45.0%][r=…,w=…][r=…,w=… IOPS]
//! [eta 00m:33s]`) and the wider line of `storbench quick`.
//!
//! Formatting only: the CLI's UI thread samples the runner's counters, fills [`EtaStatus`]
//! and calls [`StatusLine::update`] about twice a second. fio shows the line only on a
//! terminal unless `--eta=always`; [`EtaMode::show`] applies that rule.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::fio::units::{Unit, num2str};

/// fio's `--eta` setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EtaMode {
    #[default]
    Auto,
    Always,
    Never,
}

impl EtaMode {
    pub fn parse(s: &str) -> Option<EtaMode> {
        match s {
            "auto" => Some(EtaMode::Auto),
            "always" => Some(EtaMode::Always),
            "never" => Some(EtaMode::Never),
            _ => None,
        }
    }

    /// Whether to print live lines given whether stdout is a terminal.
    pub fn show(self, stdout_is_tty: bool) -> bool {
        match self {
            EtaMode::Auto => stdout_is_tty,
            EtaMode::Always => true,
            EtaMode::Never => false,
        }
    }
}

/// One job clone's state character, fio's letters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Not started yet (`P`).
    Pending,
    /// Created or initialised, laying out files (`C` / `I`).
    SettingUp,
    /// Ramp time (`/`).
    Ramp,
    /// Doing IO: random or sequential, reads, writes, trims or a mix.
    Running {
        random: bool,
        reads: bool,
        writes: bool,
        trims: bool,
    },
    /// Fsync at the end (`F`), verifying (`V`), finishing (`f`).
    Fsyncing,
    Verifying,
    Finishing,
    /// Done (`_`), stopped by an error (`X`) or a signal (`K`).
    Done,
    Error,
    Killed,
}

impl JobState {
    /// fio's character for this state.
    pub fn symbol(self) -> char {
        match self {
            JobState::Pending => 'P',
            JobState::SettingUp => 'I',
            JobState::Ramp => '/',
            JobState::Running {
                random,
                reads,
                writes,
                trims,
            } => {
                let c = match (reads, writes, trims) {
                    (true, true, _) => 'm',
                    (true, false, _) => 'r',
                    (false, true, _) => 'w',
                    _ => 'd',
                };
                if random { c } else { c.to_ascii_uppercase() }
            }
            JobState::Fsyncing => 'F',
            JobState::Verifying => 'V',
            JobState::Finishing => 'f',
            JobState::Done => '_',
            JobState::Error => 'X',
            JobState::Killed => 'K',
        }
    }
}

/// fio's run-length form of the state characters: `RRRr` becomes `R(3),r(1)`.
pub fn condense(symbols: &[char]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < symbols.len() {
        let c = symbols[i];
        let n = symbols[i..].iter().take_while(|&&x| x == c).count();
        if !out.is_empty() {
            out.push(',');
        }
        let _ = write!(out, "{c}({n})");
        i += n;
    }
    out
}

/// fio's ETA text: `01m:05s`, `02h:00m:05s`, `01d:02h:00m:05s`; `--` when unknown.
pub fn eta_text(eta_secs: Option<u64>) -> String {
    let Some(t) = eta_secs else {
        return "--".into();
    };
    let (d, h, m, s) = (t / 86_400, t / 3600 % 24, t / 60 % 60, t % 60);
    let mut out = String::new();
    if d > 0 {
        let _ = write!(out, "{d:02}d:");
    }
    if h > 0 || d > 0 {
        let _ = write!(out, "{h:02}h:");
    }
    let _ = write!(out, "{m:02}m:{s:02}s");
    out
}

/// What the ETA line shows at one moment.
#[derive(Clone, Debug, Default)]
pub struct EtaStatus {
    pub jobs_running: u32,
    pub files_open: u32,
    /// One state per job clone, in start order.
    pub states: Vec<JobState>,
    /// Share done, 0..=100; `None` shows `-.-%` (ramping, or not yet known).
    pub percent_done: Option<f64>,
    /// Current bandwidth per direction over the last interval, bytes/s.
    pub rate_bytes: [u64; 3],
    /// Current IOPS per direction over the last interval.
    pub iops: [u64; 3],
    /// Seconds left; `None` prints `--`. (fio prints nothing after `(f=N)` until it has an
    /// estimate; we keep the state and rates visible meanwhile.)
    pub eta_secs: Option<u64>,
    /// Rate limits of running jobs (min, max), bytes/s, if any were set.
    pub rate_limits: Option<(u64, u64)>,
    pub kb_base: u32,
    /// 8 = bytes, 1 = bits.
    pub unit_base: u32,
}

/// The ETA line without the trailing `\r`.
pub fn eta_line(st: &EtaStatus) -> String {
    let pow2 = st.kb_base == 0 || st.kb_base.is_power_of_two();
    let mut s = format!("Jobs: {} (f={})", st.jobs_running, st.files_open);
    if let Some((min, max)) = st.rate_limits {
        let r = |v| num2str(v, 4, 1, pow2, Unit::BytePerSec);
        let _ = write!(s, ", {}-{}", r(min), r(max));
    }
    if st.jobs_running == 0 {
        return s;
    }
    let symbols: Vec<char> = st.states.iter().map(|j| j.symbol()).collect();
    let perc = st
        .percent_done
        .map_or_else(|| "-.-%".to_string(), |p| format!("{p:3.1}%"));
    let _ = write!(s, ": [{}][{perc}]", condense(&symbols));
    let active: Vec<usize> = (0..3)
        .filter(|&d| st.rate_bytes[d] > 0 || st.iops[d] > 0)
        .collect();
    if !active.is_empty() {
        const DIR: [char; 3] = ['r', 'w', 't'];
        let unit = Unit::rate(st.unit_base);
        let rates: Vec<String> = active
            .iter()
            .map(|&d| {
                format!(
                    "{}={}",
                    DIR[d],
                    num2str(st.rate_bytes[d] / 1024, 4, 1024, pow2, unit)
                )
            })
            .collect();
        let iops: Vec<String> = active
            .iter()
            .map(|&d| {
                format!(
                    "{}={}",
                    DIR[d],
                    num2str(st.iops[d], 4, 1, false, Unit::None)
                )
            })
            .collect();
        let _ = write!(s, "[{}][{} IOPS]", rates.join(","), iops.join(","));
    }
    let _ = write!(s, "[eta {}]", eta_text(st.eta_secs));
    s
}

/// Progress of `storbench quick`: which of the tests runs, and its live figures.
#[derive(Clone, Debug, Default)]
pub struct QuickProgress {
    /// 1-based index of the running test and the number of tests.
    pub index: u32,
    pub count: u32,
    /// `SEQ1M Q8T1`.
    pub test: String,
    /// `read` or `write`.
    pub direction: String,
    /// Share of this test done, 0..=100.
    pub percent_done: f64,
    pub bytes_per_sec: u64,
    pub iops: u64,
    /// Completion latency mean over the last interval, ns (0 when unknown).
    pub mean_lat_ns: u64,
    pub eta_secs: Option<u64>,
}

/// `[3/8] RND4K Q32T1  read  [ 45.0%]  123.4 MB/s  117.7 MiB/s  30.1k IOPS  avg 1.06 ms
/// [eta 00m:33s]` (MB/s decimal, as in the quick table).
pub fn quick_line(p: &QuickProgress) -> String {
    let mb = p.bytes_per_sec as f64 / 1e6;
    let mib = p.bytes_per_sec as f64 / 1_048_576.0;
    let mut s = format!(
        "[{}/{}] {:<13} {:<5} [{:5.1}%] {:>9.1} MB/s {:>9.1} MiB/s {:>6} IOPS",
        p.index,
        p.count,
        p.test,
        p.direction,
        p.percent_done.clamp(0.0, 100.0),
        mb,
        mib,
        num2str(p.iops, 4, 1, false, Unit::None)
    );
    if p.mean_lat_ns > 0 {
        let _ = write!(s, "  avg {}", crate::quick::latency_text(p.mean_lat_ns));
    }
    let _ = write!(s, "  [eta {}]", eta_text(p.eta_secs));
    s
}

/// A live line with a bar, before it is fitted to the terminal: `head [bar] tail…`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BarLine {
    /// What runs: `[3/8] RND4K Q32T1 read`, `Jobs: 2 (f=2): [R(2)]`.
    pub head: String,
    /// Share done, 0..=1 (the bar).
    pub fraction: f64,
    /// Figures after the percentage, most important first (`123.4 MB/s`, `30.1k IOPS`):
    /// the last ones are left out first when the terminal is narrow.
    pub figures: Vec<String>,
    /// Last on the line and always shown: `eta 01m:05s`.
    pub eta: String,
}

/// A [`BarLine`] cut to a terminal's width: `head`, a bar of `bar` columns (0: none) in
/// brackets, then `tail`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FittedLine {
    pub head: String,
    pub bar: usize,
    pub tail: String,
}

/// The narrowest bar worth drawing; below it figures are dropped, then the bar.
pub const MIN_BAR: usize = 10;

impl FittedLine {
    /// Columns the drawn line takes.
    pub fn width(&self) -> usize {
        let head = self.head.chars().count();
        let bar = if self.bar > 0 { self.bar + 3 } else { 0 };
        let gap = usize::from(head + bar > 0);
        head + bar + gap + self.tail.chars().count()
    }
}

/// Fits `line` into a terminal `columns` wide, leaving the last column free (a character
/// there makes some terminals wrap before the next redraw, which leaves a stale line).
/// Figures go first (last one first), then the bar, then the head is shortened with `…`;
/// the percentage and the ETA always stay.
pub fn fit_line(line: &BarLine, columns: usize) -> FittedLine {
    let cols = columns.saturating_sub(1).max(1);
    let pct = format!("{:3.0}%", (line.fraction * 100.0).clamp(0.0, 100.0));
    let mut figures = line.figures.len();
    loop {
        let mut tail = pct.clone();
        for f in &line.figures[..figures] {
            tail.push_str("  ");
            tail.push_str(f);
        }
        if !line.eta.is_empty() {
            tail.push_str("  ");
            tail.push_str(&line.eta);
        }
        let fixed = line.head.chars().count() + 1 + tail.chars().count();
        // " [" + bar + "]"
        if fixed + 3 + MIN_BAR <= cols {
            return FittedLine {
                head: line.head.clone(),
                bar: cols - fixed - 3,
                tail,
            };
        }
        if figures > 0 {
            figures -= 1;
            continue;
        }
        let room = cols.saturating_sub(1 + tail.chars().count());
        let head = shorten(&line.head, room);
        let tail: String = if head.is_empty() {
            tail.chars().take(cols).collect()
        } else {
            tail
        };
        return FittedLine { head, bar: 0, tail };
    }
}

/// `text` cut to `room` columns with a `…` at the end.
fn shorten(text: &str, room: usize) -> String {
    let n = text.chars().count();
    if n <= room {
        return text.to_string();
    }
    if room == 0 {
        return String::new();
    }
    let mut s: String = text.chars().take(room - 1).collect();
    s.push('…');
    s
}

/// The quick line's parts: `[3/8] RND4K Q32T1 read`, MB/s, IOPS, mean latency, the run's
/// ETA.
pub fn quick_bar(p: &QuickProgress) -> BarLine {
    let mut figures = vec![
        format!("{:.1} MB/s", p.bytes_per_sec as f64 / 1e6),
        format!("{} IOPS", num2str(p.iops, 4, 1, false, Unit::None)),
    ];
    if p.mean_lat_ns > 0 {
        figures.push(format!("avg {}", crate::quick::latency_text(p.mean_lat_ns)));
    }
    BarLine {
        head: format!("[{}/{}] {} {}", p.index, p.count, p.test, p.direction),
        fraction: p.percent_done / 100.0,
        figures,
        eta: format!("eta {}", eta_text(p.eta_secs)),
    }
}

/// fio's status as a bar line: `Jobs: 1 (f=1): [m(1)]`, rates and IOPS per direction, and
/// the ETA (of the whole run where the caller knows it).
pub fn fio_bar(st: &EtaStatus) -> BarLine {
    let pow2 = st.kb_base == 0 || st.kb_base.is_power_of_two();
    let symbols: Vec<char> = st.states.iter().map(|j| j.symbol()).collect();
    let head = format!(
        "Jobs: {} (f={}): [{}]",
        st.jobs_running,
        st.files_open,
        condense(&symbols)
    );
    const DIR: [char; 3] = ['r', 'w', 't'];
    let active: Vec<usize> = (0..3)
        .filter(|&d| st.rate_bytes[d] > 0 || st.iops[d] > 0)
        .collect();
    let mut figures = Vec::new();
    if !active.is_empty() {
        let unit = Unit::rate(st.unit_base);
        let rate = |d: usize| num2str(st.rate_bytes[d] / 1024, 4, 1024, pow2, unit);
        let iops = |d: usize| num2str(st.iops[d], 4, 1, false, Unit::None);
        let join = |f: &dyn Fn(usize) -> String| {
            active
                .iter()
                .map(|&d| format!("{}={}", DIR[d], f(d)))
                .collect::<Vec<_>>()
                .join(",")
        };
        figures.push(join(&rate));
        figures.push(format!("{} IOPS", join(&iops)));
    }
    BarLine {
        head,
        fraction: st.percent_done.unwrap_or(0.0) / 100.0,
        figures,
        eta: format!("eta {}", eta_text(st.eta_secs)),
    }
}

/// Rewrites one terminal line in place: pads over a longer previous line, ends with `\r`.
#[derive(Debug, Default)]
pub struct StatusLine {
    last_len: usize,
}

impl StatusLine {
    pub fn update(&mut self, line: &str, out: &mut dyn Write) -> io::Result<()> {
        let len = line.chars().count();
        let pad = self.last_len.saturating_sub(len);
        self.last_len = len;
        write!(out, "{line}{:pad$}\r", "")?;
        out.flush()
    }

    /// Keeps the line as drawn and moves to the next one (fio's `--eta-newline`).
    pub fn end(&mut self, out: &mut dyn Write) -> io::Result<()> {
        self.last_len = 0;
        writeln!(out)?;
        out.flush()
    }

    /// Blanks the line so the report that follows starts clean.
    pub fn clear(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if self.last_len > 0 {
            write!(out, "{:w$}\r", "", w = self.last_len)?;
            self.last_len = 0;
            out.flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(random: bool, reads: bool, writes: bool) -> JobState {
        JobState::Running {
            random,
            reads,
            writes,
            trims: false,
        }
    }

    #[test]
    fn condenses_like_fio() {
        assert_eq!(condense(&['m']), "m(1)");
        assert_eq!(condense(&['R'; 10]), "R(10)");
        assert_eq!(condense(&['_', '_', 'R', 'r', 'r']), "_(2),R(1),r(2)");
        assert_eq!(condense(&[]), "");
    }

    #[test]
    fn eta_texts() {
        assert_eq!(eta_text(Some(33)), "00m:33s");
        assert_eq!(eta_text(Some(3 * 3600 + 5)), "03h:00m:05s");
        assert_eq!(eta_text(Some(86_400 + 65)), "01d:00h:01m:05s");
        assert_eq!(eta_text(None), "--");
    }

    /// The reference line fio 3.33 printed for a randrw job:
    /// `Jobs: 1 (f=1): [m(1)][75.0%][r=45.3MiB/s,w=45.0MiB/s][r=11.6k,w=11.5k IOPS][eta 00m:01s]`.
    #[test]
    fn eta_line_matches_fio() {
        let st = EtaStatus {
            jobs_running: 1,
            files_open: 1,
            states: vec![running(true, true, true)],
            percent_done: Some(75.0),
            rate_bytes: [46_387 * 1024, 46_080 * 1024, 0],
            iops: [11_597, 11_520, 0],
            eta_secs: Some(1),
            kb_base: 1024,
            unit_base: 8,
            ..Default::default()
        };
        assert_eq!(
            eta_line(&st),
            "Jobs: 1 (f=1): [m(1)][75.0%][r=45.3MiB/s,w=45.0MiB/s][r=11.6k,w=11.5k IOPS][eta 00m:01s]"
        );
        let idle = EtaStatus {
            jobs_running: 0,
            files_open: 0,
            ..Default::default()
        };
        assert_eq!(eta_line(&idle), "Jobs: 0 (f=0)");
        let ramp = EtaStatus {
            jobs_running: 2,
            states: vec![JobState::Ramp, running(false, true, false)],
            ..Default::default()
        };
        assert_eq!(eta_line(&ramp), "Jobs: 2 (f=0): [/(1),R(1)][-.-%][eta --]");
    }

    #[test]
    fn states_have_fio_letters() {
        assert_eq!(running(false, false, true).symbol(), 'W');
        assert_eq!(running(true, true, false).symbol(), 'r');
        assert_eq!(
            JobState::Running {
                random: false,
                reads: false,
                writes: false,
                trims: true
            }
            .symbol(),
            'D'
        );
        assert_eq!(JobState::Error.symbol(), 'X');
    }

    #[test]
    fn status_line_pads_over_longer_text() {
        let mut line = StatusLine::default();
        let mut out = Vec::new();
        line.update("abcdef", &mut out).unwrap();
        line.update("abc", &mut out).unwrap();
        line.clear(&mut out).unwrap();
        assert_eq!(out, b"abcdef\rabc   \r   \r");
    }

    #[test]
    fn modes() {
        assert!(EtaMode::Auto.show(true) && !EtaMode::Auto.show(false));
        assert!(EtaMode::Always.show(false) && !EtaMode::Never.show(true));
        assert_eq!(EtaMode::parse("always"), Some(EtaMode::Always));
    }

    fn sample_quick() -> QuickProgress {
        QuickProgress {
            index: 3,
            count: 8,
            test: "RND4K Q32T1".into(),
            direction: "read".into(),
            percent_done: 45.0,
            bytes_per_sec: 123_400_000,
            iops: 30_127,
            mean_lat_ns: 1_062_000,
            eta_secs: Some(65),
        }
    }

    #[test]
    fn bar_lines_fit_every_width() {
        let line = quick_bar(&sample_quick());
        let wide = fit_line(&line, 160);
        assert_eq!(wide.head, "[3/8] RND4K Q32T1 read");
        assert_eq!(
            wide.tail,
            " 45%  123.4 MB/s  30.1k IOPS  avg 1.06 ms  eta 01m:05s"
        );
        assert_eq!(wide.width(), 159);
        let eighty = fit_line(&line, 80);
        assert_eq!(eighty.width(), 79);
        assert!(eighty.bar >= MIN_BAR, "{eighty:?}");
        assert!(eighty.tail.contains("MB/s") && eighty.tail.ends_with("eta 01m:05s"));
        for cols in 1..=200 {
            let f = fit_line(&line, cols);
            assert!(f.width() < cols.max(2), "{cols}: {f:?}");
            if cols >= 40 {
                assert!(
                    f.tail.contains("45%") && f.tail.contains("eta"),
                    "{cols}: {f:?}"
                );
            }
        }
        let narrow = fit_line(&line, 30);
        assert_eq!((narrow.bar, narrow.head.as_str()), (0, "[3/8] RND4…"));
    }

    #[test]
    fn fio_bar_keeps_fio_words() {
        let st = EtaStatus {
            jobs_running: 1,
            files_open: 1,
            states: vec![running(true, true, true)],
            percent_done: Some(75.0),
            rate_bytes: [46_387 * 1024, 46_080 * 1024, 0],
            iops: [11_597, 11_520, 0],
            eta_secs: Some(1),
            kb_base: 1024,
            unit_base: 8,
            ..Default::default()
        };
        let f = fit_line(&fio_bar(&st), 120);
        assert_eq!(f.head, "Jobs: 1 (f=1): [m(1)]");
        assert_eq!(
            f.tail,
            " 75%  r=45.3MiB/s,w=45.0MiB/s  r=11.6k,w=11.5k IOPS  eta 00m:01s"
        );
    }

    #[test]
    fn quick_line_layout() {
        let p = QuickProgress {
            index: 3,
            count: 8,
            test: "RND4K Q32T1".into(),
            direction: "read".into(),
            percent_done: 45.0,
            bytes_per_sec: 123_400_000,
            iops: 30_127,
            mean_lat_ns: 1_062_000,
            eta_secs: Some(33),
        };
        assert_eq!(
            quick_line(&p),
            "[3/8] RND4K Q32T1   read  [ 45.0%]     123.4 MB/s     117.7 MiB/s  30.1k IOPS  avg 1.06 ms  [eta 00m:33s]"
        );
    }
}
