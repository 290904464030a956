//! `storbench quick [PATH|URL]`: the CrystalDiskMark-style set people compare — sequential
//! and random, read and write — with MB/s, IOPS, latency percentiles and client CPU.

use std::os::unix::fs::FileTypeExt;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use storbench_job::catalogue;
use storbench_job::presets::quick::{
    Profile, QuickOptions, TestNames, TestSet, check_size, parse_test_names, parse_threads,
    workload,
};
use storbench_job::target::Target;
use storbench_job::{JobSpec, units};
use storbench_model::result::{Note, NoteLevel, RunMode, RunResult};
use storbench_report::live::status::EtaMode;
use storbench_run::{RunRequest, run};

use crate::StoreArgs;
use crate::remote_leftovers::{Kind, RunMark};
use crate::session::Session;
use crate::ui::{CliObserver, LiveStyle, human_bytes};

#[derive(clap::Args, Debug)]
pub struct QuickArgs {
    /// Directory for the test file, a block device, nfs://host/export[/dir],
    /// smb://[user@]host/share[/dir], iscsi://host/iqn/lun or nbd://host[:port]/export
    /// (default: the current directory).
    pub target: Option<String>,
    /// Size of the test file (fio units: 512M, 1g, 2GiB…).
    /// At least 1 MiB, in whole MiB.
    #[arg(long, default_value = "1g", value_parser = parse_size)]
    pub size: u64,
    /// Time per test (5, 5s, 1500ms, 1m…).
    #[arg(long, default_value = "5s", value_parser = parse_runtime)]
    pub runtime: Duration,
    /// IO engine for local targets (default: io_uring, else libaio); one that moves data.
    #[arg(long)]
    pub engine: Option<String>,
    /// Use the page cache even where direct I/O works.
    #[arg(long)]
    pub buffered: bool,
    /// Write to a device or LUN even if it holds a partition table, file system or data.
    #[arg(long)]
    pub allow_destructive: bool,
    /// CrystalDiskMark 8's test set: default (SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T16,
    /// RND4K Q1T1), peak (SEQ1M Q8T1, RND4K Q32T16), real (SEQ1M Q1T1, RND4K Q1T1) or nvme
    /// (SEQ1M Q8T1, SEQ128K Q32T1, RND4K Q32T16, RND4K Q1T1). Without it: classic, the
    /// default set with RND4K at Q32T1 (CrystalDiskMark 6).
    #[arg(long, value_name = "PROFILE", default_value = "classic", value_parser = Profile::parse, hide_default_value = true)]
    pub profile: Profile,
    /// Only these tests of the profile, comma-separated: SEQ1M-Q8T1,RND4K-Q1T1.
    #[arg(long, value_name = "TEST,...", value_parser = parse_test_names)]
    pub tests: Option<TestNames>,
    /// Every test with N threads (1 to 64) instead of the profile's.
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub threads: Option<u32>,
    /// Also run each test as CrystalDiskMark's Mix: 70% reads, 30% writes.
    #[arg(long)]
    pub mix: bool,
    /// Run the whole set this many times (1 to 100) and report each figure's mean with
    /// its 95% interval; saved as one run with that many rounds.
    #[arg(long, default_value = "1", value_name = "N", value_parser = parse_repeat, allow_hyphen_values = true)]
    pub repeat: u32,
    /// Read the server's CPU, NIC and disk counters from its SNMP agent during the run
    /// (v2c; the community from the URL or STORBENCH_SNMP_COMMUNITY, default public).
    #[arg(long, value_name = "snmp://[COMMUNITY@]HOST[:PORT]", value_parser = crate::server_stats::parse_for_clap)]
    pub server_stats: Option<storbench_snmp::SnmpUrl>,
    /// Output format: quick (the table, default), quick-json, markdown, csv, raw, or any
    /// of fio's formats (the names `show --format` takes for a quick run).
    #[arg(long, value_name = "FORMAT", default_value = "quick", value_parser = parse_format)]
    pub format: String,
    /// Also list each test's verdict under the notes (the Valid column shows them).
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// The same as --format quick-json (kept for scripts).
    #[arg(long, hide = true)]
    pub json: bool,
    #[command(flatten)]
    pub run: crate::RunFlags,
    /// Live progress: auto (on a terminal), always, never.
    #[arg(long, default_value = "auto", value_parser = parse_eta)]
    pub eta: EtaMode,
}

fn parse_size(s: &str) -> Result<u64, String> {
    let n = units::parse_size(s, 1024)?;
    check_size(n)?;
    Ok(n)
}

fn parse_runtime(s: &str) -> Result<Duration, String> {
    let us = units::parse_time_us(s, 1_000_000)?;
    if us < 100_000 {
        return Err(format!(
            "{s} is too short to measure anything (at least 100ms)"
        ));
    }
    Ok(Duration::from_micros(us))
}

fn parse_repeat(s: &str) -> Result<u32, String> {
    storbench_model::repeats::parse_count(s)
}

/// A format the registry has for quick runs, by its name or an alias.
fn parse_format(s: &str) -> Result<String, String> {
    match storbench_report::registry::for_run(s, RunMode::Quick) {
        Some(_) => Ok(s.to_string()),
        None => Err(format!(
            "'{s}' is not a format for a quick run; use {}",
            storbench_report::registry::names_for(RunMode::Quick)
        )),
    }
}

fn parse_eta(s: &str) -> Result<EtaMode, String> {
    EtaMode::parse(s).ok_or_else(|| format!("'{s}': expected auto, always or never"))
}

pub fn run_quick(args: QuickArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    let only = args.tests.as_ref().map_or(&[][..], |t| &t.0[..]);
    let set =
        TestSet::new(args.profile, only, args.threads, args.mix).map_err(|e| anyhow::anyhow!(e))?;
    // Before anything is created (the O_DIRECT probe file too): a Ctrl-C from here on only
    // asks for a stop, so what storbench made is still removed; and the database is open.
    let mut session = Session::begin(store)?.with_server_stats(args.server_stats.clone());
    let target = args.target.clone().unwrap_or_else(|| ".".into());
    let plan = plan_target(&target, &args)?;
    let options = QuickOptions {
        target: plan.typed.clone(),
        device: plan.device,
        size: args.size,
        runtime: args.runtime,
        direct: plan.direct,
        ioengine: plan.engine.clone(),
        file_name: format!("storbench-quick.{}.tmp", std::process::id()),
        allow_destructive: args.allow_destructive,
        set,
    };
    if !plan.device && plan.typed.protocol().is_none() {
        refuse_existing(&std::path::Path::new(&target).join(&options.file_name))?;
        crate::cmd::clean::warn_stale(std::path::Path::new(&target));
    }
    // Over NFS and SMB the run marks the directory for `clean` (a PID says nothing there).
    let remote = (!plan.device).then_some(&plan.typed);
    let _mark = match remote.filter(|t| t.protocol().is_some_and(|p| p.metadata)) {
        Some(dir) => Some(RunMark::begin(
            dir,
            Kind::Quick,
            !crate::multihost::secondary(),
        )?),
        None => None,
    };
    let wl = workload(&options);
    let req = RunRequest {
        workload: &wl,
        mode: RunMode::Quick,
        command_line: std::env::args().collect(),
        always_remove_created: true,
    };
    // In a multi-host run only rank 0 says what it runs.
    if !crate::multihost::secondary() {
        eprintln!(
            "storbench quick: {} — {} {}, {} per test, {} IO{}",
            storbench_report::terminal::escape(&storbench_model::redact::text(&target)),
            human_bytes(args.size),
            if plan.device {
                "at the start of the device (its data is overwritten)"
            } else {
                "test file, removed afterwards"
            },
            humantime(args.runtime),
            if plan.direct { "direct" } else { "buffered" },
            match args.profile {
                Profile::Classic => String::new(),
                p => format!(", profile {}", p.title()),
            },
        );
    }
    let measure = || {
        crate::repeat::measure_rounds(args.repeat, |_| {
            let mut observer = CliObserver::new(None, args.eta, LiveStyle::Quick);
            let r = run(req.clone(), &mut observer);
            observer.finish();
            crate::running::finished(r)
        })
    };
    let verdicts = |run: &mut RunResult| {
        // History lists the target the user named, not the temporary test file in it.
        if let Some(env) = &mut run.environment {
            for t in &mut env.targets {
                t.target.clone_from(&target);
            }
        }
        if let Some(why) = &plan.buffered_reason {
            run.notes.insert(
                0,
                Note {
                    level: NoteLevel::Warning,
                    code: "warn.buffered-quick".into(),
                    message: why.clone(),
                },
            );
        }
    };
    let format = if args.json {
        "quick-json"
    } else {
        args.format.as_str()
    };
    let table = storbench_report::registry::for_run(format, RunMode::Quick)
        .is_some_and(|f| f.name == "quick");
    let layout = storbench_report::notes::Layout {
        width: crate::ui::stdout_columns(),
        verdicts: args.verbose,
    };
    let render = |run: &RunResult| -> anyhow::Result<()> {
        let mut out = std::io::stdout();
        if table {
            storbench_report::quick::render_for(run, layout, &mut out)?;
        } else {
            storbench_report::registry::write_run(format, run, &mut out)?;
        }
        Ok(())
    };
    session.run(measure, verdicts, render)
}

/// Refuses a test file name that is taken: the runner would take an existing file as the
/// job's (fio keeps such files), and quick only ever writes and removes a file it made.
/// Everything quick creates is removed by the runner (`always_remove_created`), on every
/// exit path.
pub(crate) fn refuse_existing(path: &std::path::Path) -> anyhow::Result<()> {
    if path.symlink_metadata().is_ok() {
        bail!(
            "{} already exists; remove it first (storbench creates only new files)",
            path.display()
        );
    }
    Ok(())
}

/// How the quick run reaches its target.
struct TargetPlan {
    /// The target as parsed where the user gave it.
    typed: Target,
    device: bool,
    engine: String,
    direct: bool,
    /// Set when direct I/O had to be given up, with the reason shown to the user.
    buffered_reason: Option<String>,
}

fn plan_target(target: &str, args: &QuickArgs) -> anyhow::Result<TargetPlan> {
    let typed = Target::parse(target).map_err(anyhow::Error::msg)?;
    check_engine(&typed, args.engine.as_deref())?;
    if let Some(engine) = typed.engine() {
        // Parsed above; what is left to check before the run is each protocol's own.
        crate::running::prepare_target(&typed, true)?;
        return Ok(TargetPlan {
            device: typed.caps().device_like,
            typed,
            engine: engine.name.into(),
            direct: !args.buffered,
            buffered_reason: None,
        });
    }
    let meta = std::fs::metadata(target).with_context(|| format!("target {target}"))?;
    let device = meta.file_type().is_block_device();
    if !device && !meta.is_dir() {
        let urls: Vec<String> = catalogue::protocols()
            .map(|p| format!("{}://", p.scheme))
            .collect();
        bail!(
            "target {target} is neither a directory, a block device nor an {} URL",
            urls.join(" or ")
        );
    }
    if !device {
        check_free_space(target, args.size)?;
    }
    let engine = match &args.engine {
        Some(e) => e.clone(),
        None => default_local_engine(),
    };
    if args.buffered {
        let why = "buffered IO was asked for (--buffered): the page cache is in play, figures may be memory speed".to_string();
        return Ok(TargetPlan {
            typed,
            device,
            engine,
            direct: false,
            buffered_reason: Some(why),
        });
    }
    let direct_ok = device || probe_direct(target)?;
    let buffered_reason = (!direct_ok).then(|| {
        format!("the file system under {target} refuses direct I/O (O_DIRECT): buffered IO was used, so the page cache is in play and figures may be memory speed")
    });
    if !direct_ok {
        eprintln!(
            "storbench: warning: {}",
            storbench_report::terminal::escape(buffered_reason.as_deref().unwrap_or_default())
        );
    }
    Ok(TargetPlan {
        typed,
        device,
        engine,
        direct: direct_ok,
        buffered_reason,
    })
}

/// Checks an `iscsi://` URL's syntax (portal, target, LUN) before the banner, which says
/// the LUN's data will be overwritten: a typo is one line of its own, not an error under a
/// warning about a LUN that was never reached.
/// Refuses an `--engine` that moves no data on this kind of target (null, the metadata
/// engines, a local engine for a URL): quick would print rates of IOs that never happened.
fn check_engine(target: &Target, engine: Option<&str>) -> anyhow::Result<()> {
    let Some(engine) = engine else {
        return Ok(());
    };
    let protocol = target.protocol();
    let kind = match protocol {
        Some(p) => format!("an {}:// target", p.scheme),
        None => "a local directory or device".into(),
    };
    let def = catalogue::find(engine);
    if def.is_some_and(|d| d.moves_data() && d.reaches(protocol)) {
        return Ok(());
    }
    let why = match def {
        None => "is not an engine storbench has",
        Some(d) if !d.moves_data() => "moves no data, so quick cannot measure it",
        Some(_) => "does not reach this kind of target",
    };
    bail!(
        "--engine {engine} {why}; for {kind} quick can use: {}",
        catalogue::data_engines(protocol).join(", ")
    )
}

/// The first of the catalogue's choices for quick that this kernel lets us create
/// (io_uring, else libaio).
pub(crate) fn default_local_engine() -> String {
    let works = |name: &str| {
        let mut probe = JobSpec::new("probe");
        probe.ioengine = name.to_string();
        storbench_engines::create(&probe).is_ok()
    };
    let choices = catalogue::QUICK_LOCAL_ENGINES;
    let last = choices[choices.len() - 1];
    choices
        .iter()
        .copied()
        .find(|n| works(n))
        .unwrap_or(last)
        .to_string()
}

/// Whether a file in `dir` can be opened with O_DIRECT (creates and removes a probe file
/// of its own, never touching anything else).
pub(crate) fn probe_direct(dir: &str) -> anyhow::Result<bool> {
    use std::os::unix::fs::OpenOptionsExt;
    let path =
        std::path::Path::new(dir).join(format!(".storbench-direct-probe.{}", std::process::id()));
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path);
    match opened {
        Ok(_) => {
            let _ = std::fs::remove_file(&path);
            Ok(true)
        }
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            let _ = std::fs::remove_file(&path);
            Ok(false)
        }
        Err(e) => Err(e).with_context(|| format!("cannot create a test file in {dir}")),
    }
}

pub(crate) fn check_free_space(dir: &str, need: u64) -> anyhow::Result<()> {
    let fs = storbench_core::space::statfs(std::path::Path::new(dir))
        .with_context(|| format!("statfs {dir}"))?;
    if !fs.fits(need) {
        bail!(
            "not enough free space in {dir}: the test file needs {} but only {} is free (use --size)",
            human_bytes(need),
            human_bytes(fs.free)
        );
    }
    Ok(())
}

fn humantime(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}
