//! The options of fio's engines that do no IO on a file: `cpuio` keeps a CPU busy for a
//! share of the time, `exec` runs a program for the job's runtime. Parsed into typed
//! fields of `EngineOptions`; `engine::check_pseudo` checks what each engine needs.

use super::{Category as C, Kind as K, OptDef, val};
use crate::EngineOptions;
use crate::build::JobBuilder;
use crate::engine_options::CpuMode;
use crate::units::{parse_bool, parse_u32};

const CPUMODE: &[(&str, &str)] = &[
    ("noop", "Spin on the clock (fio's NOOP instructions)"),
    ("qsort", "Sort 1 MiB of numbers, as fio's QSORT computation"),
];

/// The job's engine options, noting that `name` was given.
fn given<'b>(b: &'b mut JobBuilder, name: &'static str) -> &'b mut EngineOptions {
    b.spec.engine_options.mark(name);
    &mut b.spec.engine_options
}

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "cpuload",
        K::Int,
        C::Engine,
        "",
        "Use this percentage of one CPU (1 to 100; required)",
        |b, v| {
            given(b, "cpuload").cpuload = Some(parse_u32(val(v)?, 1024)?);
            Ok(())
        },
    )
    .note("Above 100 is refused (fio takes it as 100)."),
    OptDef::new(
        "cpuchunks",
        K::Int,
        C::Engine,
        "50000",
        "Length of each busy period, µs; the idle period after it keeps cpuload",
        |b, v| {
            given(b, "cpuchunks").cpuchunks = Some(parse_u32(val(v)?, 1024)?);
            Ok(())
        },
    )
    .note("0 is refused (fio then spins without pause, whatever cpuload says)."),
    OptDef::new(
        "cpumode",
        K::Choice(CPUMODE),
        C::Engine,
        "noop",
        "How the busy periods keep the CPU busy",
        |b, v| {
            given(b, "cpumode").cpumode = match val(v)? {
                "noop" => CpuMode::Noop,
                "qsort" => CpuMode::Qsort,
                other => return Err(format!("'{other}' is not one of noop, qsort")),
            };
            Ok(())
        },
    )
    .note("qsort uses Rust's sort, not glibc's qsort: the same duty cycle, other instructions."),
    OptDef::new(
        "exit_on_io_done",
        K::Bool,
        C::Engine,
        "0",
        "End the job when the IO jobs running with it have ended",
        |b, v| {
            given(b, "exit_on_io_done").exit_on_io_done = parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .note(
        "The IO jobs are those of the same stonewall batch; fio counts every job of the \
         run, so its cpuio job in front of a stonewall never ends.",
    ),
    OptDef::new(
        "program",
        K::Str,
        C::Engine,
        "",
        "The program to run (required); looked up in PATH unless it has a '/'",
        |b, v| {
            given(b, "program").program = Some(val(v)?.to_string());
            Ok(())
        },
    )
    .note("A program that cannot be found or run is the job's error before the run starts."),
    OptDef::new(
        "arguments",
        K::Str,
        C::Engine,
        "",
        "Its arguments, split on spaces; %r is the runtime in seconds, %n the job's name",
        |b, v| {
            given(b, "arguments").arguments = Some(val(v)?.to_string());
            Ok(())
        },
    )
    .note("As in fio, quotes do not group words: every space separates arguments."),
    OptDef::new(
        "grace_time",
        K::Int,
        C::Engine,
        "1",
        "Seconds between SIGTERM and SIGKILL when the job ends",
        |b, v| {
            given(b, "grace_time").grace_time = Some(parse_u32(val(v)?, 1024)?);
            Ok(())
        },
    )
    .note(
        "The stop comes when the job ends and waits only until the program exits; fio \
         sleeps the whole grace time inside the job's last IO.",
    ),
    OptDef::new(
        "std_redirect",
        K::Bool,
        C::Engine,
        "1",
        "Write the program's stdout and stderr to <job>.stdout and <job>.stderr",
        |b, v| {
            given(b, "std_redirect").std_redirect = Some(parse_bool(val(v)?)?);
            Ok(())
        },
    )
    .note(
        "The files are truncated as fio does, but a symbolic link or anything but a \
         regular file at those names is refused.",
    ),
];
