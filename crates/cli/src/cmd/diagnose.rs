//! `storbench diagnose TARGET`: walks the chain a read travels (round trip, the path from
//! the server's memory, the storage, the client, the server, QD1 latency) with one battery
//! of ordinary jobs through the run life cycle, then names the stage that bounds the
//! figures and what would and would not help (docs/diagnose.md).

use std::os::unix::fs::FileTypeExt;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use storbench_core::analysis::diagnose::{Context, judge};
use storbench_job::presets::diagnose::{
    BIG_BS, DiagnoseOptions, HOT_BYTES, MIN_BYTES, cold_bytes, workload,
};
use storbench_job::target::Target;
use storbench_job::units;
use storbench_model::diagnose::StageKind;
use storbench_model::result::{RunMode, RunResult};
use storbench_report::live::status::EtaMode;
use storbench_run::{RunRequest, run};

use crate::StoreArgs;
use crate::read_only::{InPlace, read_in_place};
use crate::session::Session;
use crate::ui::{CliObserver, LiveStyle, human_bytes};

/// The longest budget: a diagnosis is a look, not a soak.
const MAX_BUDGET: Duration = Duration::from_secs(3600);

#[derive(clap::Args, Debug)]
pub struct DiagnoseArgs {
    /// A directory, a block device, nfs://host/export[/dir], smb://host/share[/dir],
    /// iscsi://host/iqn/lun or nbd://host[:port][/export] (default: the current directory).
    pub target: Option<String>,
    /// Time for the whole battery (10s to 1h; 90, 90s, 2m…).
    #[arg(long, default_value = "90s", value_parser = parse_budget)]
    pub budget: Duration,
    /// Bytes the battery may move in all, lay-out included (at least 128 MiB).
    #[arg(long, default_value = "1g", value_parser = parse_max_bytes)]
    pub max_bytes: u64,
    /// Read the server's CPU, NIC and disk counters from its SNMP agent during the battery
    /// (v2c; the community from the URL or STORBENCH_SNMP_COMMUNITY, default public).
    #[arg(long, value_name = "snmp://[COMMUNITY@]HOST[:PORT]", value_parser = crate::server_stats::parse_for_clap)]
    pub server_stats: Option<storbench_snmp::SnmpUrl>,
    /// Output format: text (default), json, markdown (md) or raw.
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = parse_format)]
    pub format: String,
    #[command(flatten)]
    pub run: crate::RunFlags,
    /// Live progress: auto (on a terminal), always, never.
    #[arg(long, default_value = "auto", value_parser = parse_eta)]
    pub eta: EtaMode,
}

fn parse_budget(s: &str) -> Result<Duration, String> {
    let us = units::parse_time_us(s, 1_000_000)?;
    let d = Duration::from_micros(us);
    if d < Duration::from_secs(10) || d > MAX_BUDGET {
        return Err(format!("{s}: the budget must be between 10s and 1h"));
    }
    Ok(d)
}

fn parse_max_bytes(s: &str) -> Result<u64, String> {
    let n = units::parse_size(s, 1024)?;
    if n < MIN_BYTES {
        return Err(format!(
            "{s}: the battery needs at least {} MiB",
            MIN_BYTES >> 20
        ));
    }
    Ok(n)
}

fn parse_format(s: &str) -> Result<String, String> {
    match storbench_report::registry::for_run(s, RunMode::Diagnose) {
        Some(_) => Ok(s.to_string()),
        None => Err(format!(
            "'{s}' is not a format for a diagnosis; use {}",
            storbench_report::registry::names_for(RunMode::Diagnose)
        )),
    }
}

fn parse_eta(s: &str) -> Result<EtaMode, String> {
    EtaMode::parse(s).ok_or_else(|| format!("'{s}': expected auto, always or never"))
}

pub fn run_diagnose(args: DiagnoseArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    // Before anything is created: a signal from here on only asks for a stop, so what the
    // battery made is still removed by the runner.
    let mut session = Session::begin(store)?.with_server_stats(args.server_stats.clone());
    let text = args.target.clone().unwrap_or_else(|| ".".into());
    let file_prefix = format!("storbench-diagnose.{}", std::process::id());
    let plan = plan_target(&text, &file_prefix)?;
    let options = DiagnoseOptions {
        target: plan.typed.clone(),
        in_place: plan.device || plan.read_only.is_some(),
        in_place_bytes: plan.read_only.as_ref().map(|r| r.size),
        local: plan.local,
        direct: plan.direct,
        writable: !plan.device && plan.read_only.is_none(),
        ioengine: plan.engine.clone(),
        file_prefix,
        budget: args.budget,
        max_bytes: args.max_bytes,
    };
    if plan.local && !plan.device {
        for which in ["hot", "cold"] {
            let path = std::path::Path::new(&text).join(format!("{}.{which}", options.file_prefix));
            crate::cmd::quick::refuse_existing(&path)?;
        }
        crate::cmd::quick::check_free_space(&text, HOT_BYTES + cold_bytes(&options))?;
    }
    let context = Context {
        skipped: skipped(&plan),
        local: plan.local,
    };
    let wl = workload(&options);
    let req = RunRequest {
        workload: &wl,
        mode: RunMode::Diagnose,
        command_line: std::env::args().collect(),
        always_remove_created: true,
    };
    eprintln!(
        "storbench diagnose: {} — at most {} and {} s, {}",
        storbench_report::terminal::escape(&storbench_model::redact::text(&text)),
        human_bytes(args.max_bytes),
        args.budget.as_secs(),
        match (&plan.read_only, plan.device) {
            (Some(r), _) => format!(
                "read only (the directory refuses new files: {} is read in place)",
                storbench_report::terminal::escape(&r.name)
            ),
            (None, true) => "read only (a device or LUN is never written)".into(),
            (None, false) => "test files removed afterwards".into(),
        },
    );
    let measure = || {
        let mut observer = CliObserver::new(None, args.eta, LiveStyle::Quick);
        let r = run(req.clone(), &mut observer);
        observer.finish();
        crate::running::finished(r)
    };
    let verdicts = |run: &mut RunResult| {
        if let Some(env) = &mut run.environment {
            for t in &mut env.targets {
                t.target.clone_from(&text);
            }
        }
        run.diagnosis = Some(Box::new(judge(run, &context)));
    };
    let render = |run: &RunResult| -> anyhow::Result<()> {
        storbench_report::registry::write_run(&args.format, run, &mut std::io::stdout())?;
        Ok(())
    };
    session.run(measure, verdicts, render)
}

/// Stages the target does not allow, with the reason the ladder shows.
fn skipped(plan: &TargetPlan) -> Vec<(StageKind, String)> {
    let mut out = Vec::new();
    if plan.device {
        out.push((
            StageKind::PathWrite,
            "a device or LUN is never written by diagnose".to_string(),
        ));
    }
    if let Some(r) = &plan.read_only {
        out.push((
            StageKind::PathWrite,
            format!(
                "the directory refuses new files ({}); the read stages read {} ({} MiB) in place",
                r.refusal,
                r.name,
                r.size >> 20
            ),
        ));
    }
    out
}

/// How the battery reaches its target.
struct TargetPlan {
    typed: Target,
    device: bool,
    local: bool,
    engine: String,
    /// The storage stage can use O_DIRECT.
    direct: bool,
    /// A directory that refuses new files, and the file on it read in place.
    read_only: Option<InPlace>,
}

fn plan_target(text: &str, file_prefix: &str) -> anyhow::Result<TargetPlan> {
    let typed = Target::parse(text).map_err(anyhow::Error::msg)?;
    if let Some(engine) = typed.engine() {
        let device = typed.caps().device_like;
        crate::running::prepare_target(&typed, true)?;
        let probe = format!("{file_prefix}.probe");
        let read_only = match device {
            true => None,
            false => read_in_place(&typed, &probe, HOT_BYTES + BIG_BS)?,
        };
        return Ok(TargetPlan {
            device,
            typed: read_only.as_ref().map_or(typed, |r| r.file.clone()),
            local: false,
            engine: engine.name.into(),
            direct: true,
            read_only,
        });
    }
    let meta = std::fs::metadata(text).with_context(|| format!("target {text}"))?;
    let device = meta.file_type().is_block_device();
    if !device && !meta.is_dir() {
        bail!("target {text} is neither a directory, a block device nor a storage URL");
    }
    let direct = device || crate::cmd::quick::probe_direct(text)?;
    Ok(TargetPlan {
        typed,
        device,
        local: true,
        engine: crate::cmd::quick::default_local_engine(),
        direct,
        read_only: None,
    })
}
