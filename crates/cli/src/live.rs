//! The live bar on a terminal: one line, `head [=====>    ]  45%  figures…  eta`, fitted
//! to the terminal's width at every redraw (so a resized or 80-column terminal gets no
//! wrapped, stale lines) and redrawn in place by indicatif, which also hides it when
//! stderr is not a terminal. Fed twice a second by the runner's sampler thread, never per
//! IO. No colour when NO_COLOR is set.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use storbench_report::live::status::{BarLine, FittedLine, eta_text, fit_line};

/// Resolution of the bar's position.
const STEPS: u64 = 1000;

pub struct LiveBar {
    bar: ProgressBar,
    /// The style in use is for this bar width (a new one only when the width changes).
    bar_width: Option<usize>,
    colour: bool,
    /// Lay-out: when it was last shown, and when and at how many bytes it started.
    layout_shown: Option<Instant>,
    layout_start: Option<(Instant, u64)>,
}

impl Default for LiveBar {
    fn default() -> Self {
        Self::new()
    }
}

impl LiveBar {
    pub fn new() -> LiveBar {
        let bar = ProgressBar::with_draw_target(Some(STEPS), ProgressDrawTarget::stderr());
        LiveBar {
            bar,
            bar_width: None,
            colour: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            layout_shown: None,
            layout_start: None,
        }
    }

    /// Draws `line` fitted to the terminal as it is now.
    pub fn show(&mut self, line: &BarLine) {
        let fitted = fit_line(line, terminal_columns());
        // indicatif may draw after each of these calls, so no state between them may be
        // wider than the line: a bar that narrows does so before the text grows, one that
        // widens after the text has shrunk, and of the two texts the one that shrinks goes
        // first.
        let widens = self.bar_width.is_some_and(|w| fitted.bar > w);
        if !widens {
            self.restyle(&fitted);
        }
        let head_shrinks = fitted.head.chars().count() <= self.bar.prefix().chars().count();
        if head_shrinks {
            self.bar.set_prefix(fitted.head.clone());
            self.bar.set_message(fitted.tail.clone());
        } else {
            self.bar.set_message(fitted.tail.clone());
            self.bar.set_prefix(fitted.head.clone());
        }
        if widens {
            self.restyle(&fitted);
        }
        self.bar
            .set_position((line.fraction.clamp(0.0, 1.0) * STEPS as f64) as u64);
    }

    fn restyle(&mut self, f: &FittedLine) {
        if self.bar_width == Some(f.bar) {
            return;
        }
        self.bar_width = Some(f.bar);
        let template = match (f.bar, f.head.is_empty()) {
            (0, true) => "{msg}".to_string(),
            (0, false) => "{prefix} {msg}".to_string(),
            (w, _) if self.colour => format!("{{prefix}} [{{bar:{w}.cyan/blue}}] {{msg}}"),
            (w, _) => format!("{{prefix}} [{{bar:{w}}}] {{msg}}"),
        };
        if let Ok(style) = ProgressStyle::with_template(&template) {
            self.bar.set_style(style.progress_chars("=> "));
        }
    }

    /// Lay-out of the test file(s) as a bar of its own, at most four times a second.
    pub fn layout(&mut self, what: &str, done: u64, total: u64) {
        let now = Instant::now();
        let start = *self.layout_start.get_or_insert((now, done));
        if self
            .layout_shown
            .is_some_and(|t| now.duration_since(t) < Duration::from_millis(250))
            && done < total
        {
            return;
        }
        self.layout_shown = Some(now);
        let secs = now.duration_since(start.0).as_secs_f64();
        let rate = done.saturating_sub(start.1) as f64 / secs.max(1e-3);
        let left =
            (rate > 0.0 && secs > 0.2).then(|| (total.saturating_sub(done) as f64 / rate) as u64);
        self.show(&BarLine {
            head: what.to_string(),
            fraction: done as f64 / total.max(1) as f64,
            figures: vec![
                format!(
                    "{} of {}",
                    crate::ui::human_bytes(done),
                    crate::ui::human_bytes(total)
                ),
                format!("{:.1} MB/s", rate / 1e6),
            ],
            eta: format!("{} left", eta_text(left)),
        });
    }

    /// A new test: the lay-out's state is forgotten.
    pub fn layout_done(&mut self) {
        self.layout_start = None;
        self.layout_shown = None;
    }

    /// Runs `f` (which prints) with the bar off the screen, then draws it again.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Removes the bar, so the report that follows starts on a clean line.
    pub fn clear(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// The terminal's width on stderr (TIOCGWINSZ), 80 when it cannot be read.
fn terminal_columns() -> usize {
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ fills the winsize it is given; fd 2 may be anything, the call only
    // fails then.
    let ok = unsafe { libc::ioctl(2, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        usize::from(ws.ws_col)
    } else {
        80
    }
}
