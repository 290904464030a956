//! From raw sections to validated jobs, with fio's precedence: a job section over the
//! `[global]` above it, over command-line globals, over fio's defaults. Each global section
//! is applied, in order, to a running state that later jobs start from (exactly how fio's
//! default thread works), so a `[global]` affects only the jobs below it. Reporting groups
//! follow `stonewall`, `new_group` and the implicit stonewall between job files.

use crate::build::JobBuilder;
use crate::error::{JobError, Origin};
use crate::expr::{self, ExprUnits};
use crate::host::{HostFacts, expand_env, expand_keywords};
use crate::low::{LowFile, LowSection, RawOpt};
use crate::options::{self, OptDef};
use crate::spec::{JobSpec, Workload};

/// What resolution needs besides the sections.
pub(crate) struct Context<'a> {
    pub host: &'a HostFacts,
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// `--section` names; empty means every section.
    pub sections: &'a [String],
    pub readonly: bool,
}

/// Validated jobs plus what fio would only have warned about.
pub(crate) struct Resolved {
    pub workload: Workload,
    pub warnings: Vec<String>,
}

/// A finished section waiting for the group pass.
struct Pending {
    job: JobBuilder,
    origin: Origin,
}

/// Resolves command-line sections (the leading implicit global one included) and job files.
pub(crate) fn resolve(
    cli: &[LowSection],
    files: &[LowFile],
    ctx: &Context<'_>,
) -> Result<Resolved, JobError> {
    let mut global_options = Vec::new();
    let mut pending = Vec::new();
    let mut state = JobBuilder::new();
    let mut cli_globals = 0;
    for sec in cli {
        if sec.is_global() {
            cli_globals += sec.opts.len();
            apply_section(&mut state, sec, &mut global_options, ctx)?;
        } else if wanted(sec, ctx) {
            pending.push(job_from(&state, sec, ctx)?);
        }
    }
    // fio's JSON lists the command-line globals and the [global]s of the last job file only
    // (it starts every job file afresh); storbench lists the same.
    let cli_global_options = global_options.clone();
    for (index, file) in files.iter().enumerate() {
        let mut state = state.clone();
        global_options.clone_from(&cli_global_options);
        // fio separates job files by a stonewall on the first job of every later file.
        let mut stonewall = index > 0;
        for sec in &file.sections {
            if sec.is_global() {
                apply_section(&mut state, sec, &mut global_options, ctx)?;
            } else if wanted(sec, ctx) {
                let mut p = job_from(&state, sec, ctx)?;
                p.job.spec.stonewall |= std::mem::take(&mut stonewall);
                pending.push(p);
            }
        }
    }
    let mut warnings = Vec::new();
    if files.len() > 1 && cli_globals > 0 {
        warnings.push(
            "command-line options before the first --name apply to every job file here; fio 3.33 applies them to the first job file only".to_string(),
        );
    }
    let jobs = finish_all(pending, ctx, &mut warnings)?;
    Ok(Resolved {
        workload: Workload {
            jobs,
            global_options,
            job_files: files.iter().flat_map(|f| f.sources.clone()).collect(),
        },
        warnings,
    })
}

fn wanted(sec: &LowSection, ctx: &Context<'_>) -> bool {
    ctx.sections.is_empty() || ctx.sections.contains(&sec.name)
}

/// A job starts as a copy of the global state, named after its section.
fn job_from(state: &JobBuilder, sec: &LowSection, ctx: &Context<'_>) -> Result<Pending, JobError> {
    let mut job = state.clone();
    job.spec.name = sec.name.clone();
    let mut own = Vec::new();
    apply_section(&mut job, sec, &mut own, ctx)?;
    job.spec.options = own;
    Ok(Pending {
        job,
        origin: sec.origin.clone(),
    })
}

/// Applies a section's options in order (in a job file, `kb_base` and `unit_base` first,
/// as fio sorts them) and records the values given (flags with an empty value).
fn apply_section(
    job: &mut JobBuilder,
    sec: &LowSection,
    record: &mut Vec<(String, String)>,
    ctx: &Context<'_>,
) -> Result<(), JobError> {
    let mut order: Vec<(&RawOpt, &'static OptDef)> = sec
        .opts
        .iter()
        .map(|raw| Ok((raw, lookup(raw)?)))
        .collect::<Result<_, JobError>>()?;
    if matches!(sec.origin, Origin::File { .. }) {
        order.sort_by_key(|(_, def)| -def.priority());
    }
    for (raw, def) in order {
        let value = match &raw.value {
            Some(v) => Some(substitute(raw, v, def, ctx)?),
            None => None,
        };
        def.apply(job, value.as_deref())
            .map_err(|reason| bad_value(raw, value.as_deref(), reason))?;
        // Flags are recorded with an empty value: fio's JSON leaves them out but still
        // prints an (empty) `global options` object when only flags were given.
        record.push((def.name.to_string(), value.unwrap_or_default()));
    }
    Ok(())
}

/// The definition for a raw key, or the right error for an unknown or unsupported name.
pub(crate) fn lookup(raw: &RawOpt) -> Result<&'static OptDef, JobError> {
    if let Some(def) = options::find(&raw.key) {
        return Ok(def);
    }
    if options::is_unsupported(&raw.key) {
        return Err(JobError::Unsupported {
            at: raw.origin.clone(),
            name: raw.key.clone(),
        });
    }
    Err(JobError::Unknown {
        at: raw.origin.clone(),
        name: raw.key.clone(),
        suggestion: options::suggest(&raw.key).map(str::to_string),
    })
}

/// `${ENV}` (job files only), then `$ncpus`/`$mb_memory`/`$pagesize`; a numeric value
/// holding a keyword and `+ - * /` is computed in whole numbers, as fio does with `bc`.
fn substitute(
    raw: &RawOpt,
    value: &str,
    def: &OptDef,
    ctx: &Context<'_>,
) -> Result<String, JobError> {
    let expanded = if raw.from_file {
        expand_env(value, ctx.env)
    } else {
        value.to_string()
    };
    let (text, had_keyword) = expand_keywords(&expanded, ctx.host);
    if !(had_keyword && def.kind.is_numeric() && text.contains(['+', '-', '*', '/'])) {
        return Ok(text);
    }
    let e = expr::eval(&text, ExprUnits::Plain).map_err(|reason| {
        bad_value(
            raw,
            Some(&text),
            format!("{reason} (arithmetic with $ncpus, $mb_memory or $pagesize takes plain numbers, as fio's bc)"),
        )
    })?;
    match e.exact {
        Some(i) if i >= 0 => Ok(i.to_string()),
        None if e.value >= 0.0 => Ok((e.value as u64).to_string()),
        _ => Err(bad_value(
            raw,
            Some(&text),
            format!("the arithmetic gives {}, a negative value", e.value),
        )),
    }
}

fn bad_value(raw: &RawOpt, value: Option<&str>, reason: String) -> JobError {
    let written = raw.value.as_deref().unwrap_or("");
    let shown = match value {
        Some(v) if v != written => format!("{written} (= {v})"),
        _ => written.to_string(),
    };
    JobError::BadValue {
        at: raw.origin.clone(),
        name: raw.key.clone(),
        value: shown,
        reason,
    }
}

/// fio's fix-ups and checks per job, then reporting groups.
fn finish_all(
    pending: Vec<Pending>,
    ctx: &Context<'_>,
    warnings: &mut Vec<String>,
) -> Result<Vec<JobSpec>, JobError> {
    let mut jobs = Vec::with_capacity(pending.len());
    let (mut group, mut in_group) = (0u32, 0usize);
    for Pending { job, origin } in pending {
        let new_group = job.new_group;
        let name = job.spec.name.clone();
        let invalid = |message: String| JobError::Invalid {
            at: origin.clone(),
            job: name.clone(),
            message,
        };
        let mut spec = job.finish(warnings).map_err(invalid)?;
        options::route_target(&mut spec).map_err(invalid)?;
        options::check_engine_options(&spec).map_err(invalid)?;
        options::nbd_target(&mut spec).map_err(invalid)?;
        options::check_pseudo(&spec, warnings).map_err(invalid)?;
        options::check_net(&mut spec).map_err(invalid)?;
        if ctx.readonly && (spec.rw.kind.writes() || spec.rw.kind.trims()) {
            return Err(invalid(format!(
                "rw={} writes, but --readonly was given",
                spec.rw.kind.fio_name()
            )));
        }
        warn_depth(&spec, warnings);
        check_waitee(&spec, &jobs).map_err(invalid)?;
        if (spec.stonewall || new_group) && in_group > 0 {
            group += 1;
            in_group = 0;
        }
        spec.group = group;
        in_group += 1;
        jobs.push(spec);
    }
    Ok(jobs)
}

/// fio's checks of `wait_for`: the waitee is one earlier job, not the job itself.
fn check_waitee(spec: &JobSpec, earlier: &[JobSpec]) -> Result<(), String> {
    let Some(waitee) = &spec.coord.wait_for else {
        return Ok(());
    };
    if *waitee == spec.name {
        return Err(format!("a job cannot wait for itself (wait_for={waitee})"));
    }
    match earlier.iter().filter(|j| j.name == *waitee).count() {
        0 => Err(format!("wait_for={waitee}: no earlier job has that name")),
        1 => Ok(()),
        _ => Err(format!(
            "wait_for={waitee}: several earlier jobs have that name; give the waitee a name of its own"
        )),
    }
}

/// A queue depth a synchronous engine cannot use is a classic silent mistake.
fn warn_depth(spec: &JobSpec, warnings: &mut Vec<String>) {
    let sync = crate::catalogue::find(&spec.ioengine).is_some_and(|e| e.synchronous);
    if sync && spec.iodepth > 1 {
        warnings.push(format!(
            "job '{}': iodepth={} has no effect with the synchronous {} engine (use io_uring or libaio for queue depth)",
            spec.name, spec.iodepth, spec.ioengine
        ));
    }
}
