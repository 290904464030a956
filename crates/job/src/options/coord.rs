//! How a job's clones go along with other jobs and programs: fio's token-based `flow`
//! between jobs, `wait_for` another job, commands run around each clone
//! (`exec_prerun`, `exec_postrun`), and how IO is submitted (`io_submit_mode`,
//! `iodepth_low`).

use super::{Category as C, Kind as K, OptDef, val};
use crate::units::parse_u32;

/// A command given to a shell, as fio gives it to system(3).
fn command(v: Option<&str>) -> Result<Option<String>, String> {
    let text = val(v)?.trim();
    Ok((!text.is_empty()).then(|| text.to_string()))
}

const SUBMIT_VALUES: &[(&str, &str)] = &[
    ("inline", "The job's clone submits and reaps its own IO"),
    (
        "offload",
        "IO is issued on its own schedule, apart from completions",
    ),
];

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "flow",
        K::Int,
        C::Job,
        "0",
        "Weight in token-based flow control between the jobs of one flow_id",
        |b, v| {
            let text = val(v)?.trim();
            b.spec.coord.flow = text
                .parse::<i32>()
                .map_err(|_| format!("'{text}' is not a whole number"))?
                .unsigned_abs();
            Ok(())
        },
    )
    .note(
        "Every clone of a job with a flow counts its IOs into the flow_id's shared counter \
         (an atomic) and holds back while its share of the counter is above its share of \
         the weights, as fio's does; the IOs and their order within each job are unchanged.",
    ),
    OptDef::new(
        "flow_id",
        K::Int,
        C::Job,
        "0",
        "The flow group the job's flow weight counts in",
        |b, v| {
            b.spec.coord.flow_id = parse_u32(val(v)?, b.spec.kb_base)?;
            Ok(())
        },
    ),
    OptDef::new(
        "flow_sleep",
        K::Int,
        C::Job,
        "0",
        "Microseconds to wait, once the flow share is exceeded, before trying again",
        |b, v| {
            b.spec.coord.flow_sleep_us = parse_u32(val(v)?, b.spec.kb_base)?;
            Ok(())
        },
    )
    .note("As in fio, the IOs in flight complete before the wait; 0 tries again at once."),
    OptDef::new(
        "wait_for",
        K::Str,
        C::Job,
        "",
        "Start this job only once every clone of the named earlier job has ended",
        |b, v| {
            b.spec.coord.wait_for = command(v)?;
            Ok(())
        },
    )
    .note(
        "The named job must come earlier in the job file and have a name of its own, as \
         fio requires; the waiting job's start delay, ramp and runtime count from its start.",
    ),
    OptDef::new(
        "exec_prerun",
        K::Str,
        C::Job,
        "",
        "Shell command each clone runs before its IO; its output goes to NAME.prerun.txt",
        |b, v| {
            b.spec.coord.exec_prerun = command(v)?;
            Ok(())
        },
    )
    .note("Run with `sh -c` in the current directory as fio's system(3); a command that fails ends the job with its exit status before any IO."),
    OptDef::new(
        "exec_postrun",
        K::Str,
        C::Job,
        "",
        "Shell command each clone runs after its IO; its output goes to NAME.postrun.txt",
        |b, v| {
            b.spec.coord.exec_postrun = command(v)?;
            Ok(())
        },
    )
    .note("Its exit status is ignored, as fio's is."),
    OptDef::new(
        "io_submit_mode",
        K::Choice(SUBMIT_VALUES),
        C::Io,
        "inline",
        "How IO is submitted: by the job's clone, or offloaded from its completions",
        |b, v| {
            b.spec.coord.offload = match val(v)?.trim() {
                "inline" => false,
                "offload" => true,
                other => return Err(format!("'{other}' is not inline or offload")),
            };
            Ok(())
        },
    )
    .note(
        "offload: storbench's clone issues each rate-limited IO at its due time while up to \
         iodepth earlier ones are in flight, so completions never delay the schedule, which is \
         what fio's submission threads give; without a rate the two modes do the same IO.",
    ),
    OptDef::new(
        "iodepth_low",
        K::Int,
        C::Io,
        "",
        "Once the queue is full, let it drain to this depth before filling it again (default: iodepth)",
        |b, v| {
            b.spec.iodepth_low = parse_u32(val(v)?, b.spec.kb_base)?;
            Ok(())
        },
    ),
];
