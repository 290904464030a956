//! The options of fio's `e4defrag` engine: the donor file ext4's EXT4_IOC_MOVE_EXT
//! exchanges the job file's blocks with, and when its blocks are allocated. Parsed into
//! typed fields of `EngineOptions`; [`check`] refuses a job the engine cannot start, as
//! fio's engine fails it.

use super::{Category as C, Kind as K, OptDef, val};
use crate::EngineOptions;
use crate::build::JobBuilder;
use crate::units::parse_u32;

/// The job's engine options, noting that `name` was given.
fn given<'b>(b: &'b mut JobBuilder, name: &'static str) -> &'b mut EngineOptions {
    b.spec.engine_options.mark(name);
    &mut b.spec.engine_options
}

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "donorname",
        K::Str,
        C::Engine,
        "",
        "File used as a block donor (required), under directory= when one is given",
        |b, v| {
            given(b, "donorname").donorname = Some(val(v)?.to_string());
            Ok(())
        },
    )
    .note(
        "storbench creates the donor for the run and removes it afterwards (fio leaves it); \
         a donor that exists before the run is refused, as it would be rewritten.",
    ),
    OptDef::new(
        "inplace",
        K::Int,
        C::Engine,
        "0",
        "1: allocate the donor's blocks before each move and free them after it; 0: once, \
         over the whole file, before the job",
        |b, v| {
            let n = parse_u32(val(v)?, 1000)?;
            if n > 1 {
                return Err(format!("inplace={n}: 0 or 1"));
            }
            given(b, "inplace").inplace = n == 1;
            Ok(())
        },
    ),
];

/// What the engine needs before it starts, as fio's engine checks it when it starts.
pub(crate) fn check(job: &crate::spec::JobSpec) -> Result<(), String> {
    let o = &job.engine_options;
    if o.donorname.as_deref().is_none_or(str::is_empty) {
        return Err("the e4defrag engine needs donorname= (the donor file)".into());
    }
    if !o.inplace && job.filesize.is_none() {
        return Err(
            "the e4defrag engine with inplace=0 needs filesize=: the donor is allocated from \
             offset= to the end of filesize before the job (fio's job fails with EINVAL \
             without it)"
                .into(),
        );
    }
    Ok(())
}
