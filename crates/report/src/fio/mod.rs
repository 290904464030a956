//! fio-compatible outputs: normal (human), JSON, json+ and terse v3, plus the lines fio prints
//! while a run starts. All of them read the same [`view`] of a run: reporting entries per
//! group (merged under group_reporting, directions folded under unified_rw_reporting) and
//! fio's per-group run status.
//!
//! What the reporters expect from a [`RunResult`] (the runner and the CLI fill it):
//! - `tool_version` is storbench's version (`0.1.0` or `storbench-0.1.0`, printed in fio's
//!   form `fio-3.33 (storbench 0.1.0)`) or an imported tool's own string (`fio-3.33`,
//!   printed as is).
//! - `global_options` / `JobResult::options` keep every option as given, flags with an empty
//!   value: like fio, JSON leaves flags out but shows `global options` when any was given.
//! - `JobResult::runtime_ms` is one clone's measured time; a direction's `runtime_ms` is the
//!   time it was active. `end_unix_ms` dates the job's header line.
//! - `bw_samples` are bytes/s (printed as whole KiB/s like fio), `iops_samples` IOs/s.
//! - `header.iodepth` is printed as `latency : … depth=N` and JSON `latency_depth`.
//! - fio's `latency_target`/`latency_window`/`latency_percentile` are printed as their
//!   defaults (0, 0, 100%): the model has no latency-target feature.
//!
//! For several `--output-format`s use [`render_many`] (fio's order). Machine formats write
//! only their document; diagnostics belong on stderr.

pub mod header;
pub mod json;
mod jsonfmt;
pub mod normal;
pub mod terse;
pub mod units;
pub mod view;

use std::io::{self, Write};

use storbench_model::result::RunResult;

/// Settings shared by the fio reporters.
#[derive(Clone, Debug, Default)]
pub struct FioOpts {
    /// Offset from UTC for printed dates; `None` uses the machine's local time zone.
    pub utc_offset_secs: Option<i32>,
}

/// One of fio's `--output-format` values; defined once, in the model, and read from fio's
/// command line by storbench-job ([`FioFormat::parse`] takes fio's names, `minimal` too).
pub use storbench_model::fio::OutputFormat as FioFormat;

/// Writes one format.
pub fn render(
    run: &RunResult,
    format: FioFormat,
    opts: &FioOpts,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        FioFormat::Normal => normal::render(run, opts, out),
        FioFormat::Json => json::render(run, opts, false, out),
        FioFormat::JsonPlus => json::render(run, opts, true, out),
        FioFormat::Terse => terse::render(run, out),
    }
}

/// Writes several formats in fio's order (terse, then JSON, then normal); json and json+
/// together give one json+ document, as in fio.
pub fn render_many(
    run: &RunResult,
    formats: &[FioFormat],
    opts: &FioOpts,
    out: &mut dyn Write,
) -> io::Result<()> {
    let has = |f| formats.contains(&f);
    if has(FioFormat::Terse) {
        terse::render(run, out)?;
    }
    if has(FioFormat::JsonPlus) {
        json::render(run, opts, true, out)?;
    } else if has(FioFormat::Json) {
        json::render(run, opts, false, out)?;
    }
    if has(FioFormat::Normal) {
        normal::render(run, opts, out)?;
        crate::multihost::render(run, out)?;
    }
    Ok(())
}

/// The program name printed where fio prints `fio-3.33`: the producing tool's own name for
/// imported runs, `fio-3.33 (storbench <version>)` for ours (what `fio --version` prints
/// through the drop-in `fio` link, so callers that check fio's version accept it).
pub fn program_name(run: &RunResult) -> String {
    let v = run.tool_version.as_str();
    if v.starts_with("fio-") {
        v.to_string()
    } else {
        storbench_model::fio::fio_style_version(v.strip_prefix("storbench-").unwrap_or(v))
    }
}
