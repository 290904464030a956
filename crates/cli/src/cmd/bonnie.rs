//! `storbench bonnie`: bonnie++'s suite with bonnie++'s flags, its text table and CSV line,
//! on a local directory or an `nfs://` export. See docs/bonnie.md; under `mpirun` each
//! rank runs the suite and rank 0 reports them (docs/multihost.md).

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use storbench_bonnie::{BonnieError, Config, Event, Flags, Host, Target, run_once, start_message};
use storbench_model::result::RunResult;
use storbench_report::bonnie_csv::{self, CsvFormat};
use storbench_report::bonnie_table;

use crate::StoreArgs;
use crate::bonnie_live::BonnieLive;
use crate::cmd::save::check_label;
use crate::session::Session;

/// bonnie++'s flags, taken as given; storbench-bonnie checks them with bonnie++'s rules.
#[derive(clap::Args, Debug)]
// As with bonnie++'s getopt, a flag given twice takes the last value, so wrappers can append
// overrides to a base set.
#[command(
    args_override_self = true,
    after_help = "Sizes follow bonnie++: -s in MiB (or g/t), chunks in bytes (or k), \
    -n in units of 1024 files. Without -q the table goes to stdout before the CSV line; with \
    -q the table goes to stderr and stdout holds only CSV."
)]
pub struct BonnieArgs {
    /// Directory for the test file and directories, nfs://host/export[/dir] or
    /// smb://[user@]host/share[/dir] [default: .]; iscsi:// and nbd:// are block devices
    /// without files: use quick or fio on them.
    #[arg(short = 'd', value_name = "DIR")]
    pub dir: Option<String>,
    /// File size in MiB (default 2 x RAM), chunk (8k), seeks (8192), seeker threads (5).
    #[arg(
        short = 's',
        allow_negative_numbers = true,
        value_name = "SIZE[:CHUNK[:SEEKS[:SEEKERS]]]"
    )]
    pub size: Option<String>,
    /// Files x 1024 (16), max and min size in bytes (0; -1 links, -2 symlinks), dirs, chunk.
    #[arg(
        short = 'n',
        allow_negative_numbers = true,
        value_name = "FILES[:MAX[:MIN[:DIRS[:CHUNK]]]]"
    )]
    pub files: Option<String>,
    /// Name for the result rows [default: the host name].
    #[arg(short = 'm', value_name = "NAME")]
    pub machine: Option<String>,
    /// RAM in MiB assumed by the size checks (0 disables them) [default: this machine's].
    #[arg(short = 'r', allow_negative_numbers = true, value_name = "MiB")]
    pub ram: Option<String>,
    /// Run the suite this many times and print only CSV lines (with a header if more than 1).
    #[arg(short = 'x', allow_negative_numbers = true, value_name = "RUNS")]
    pub runs: Option<String>,
    /// Accepted for compatibility; storbench runs as the user that started it.
    #[arg(short = 'u', value_name = "USER[:GROUP]")]
    pub user: Option<String>,
    /// Accepted for compatibility, like -u.
    #[arg(short = 'g', value_name = "GROUP")]
    pub group: Option<String>,
    /// Quiet: no progress; the table goes to stderr, stdout holds only CSV.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Skip the per-char tests, or with a size in MiB run them on that much (default 3).
    #[arg(short = 'f', value_name = "MiB", num_args = 0..=1, default_missing_value = "")]
    pub char_io: Option<String>,
    /// fsync after every write and fsync the directory after each create and delete.
    #[arg(short = 'b')]
    pub fsync_each: bool,
    /// O_DIRECT for block write, rewrite, block read and seeks.
    #[arg(short = 'D')]
    pub direct: bool,
    /// Seed for file names, sizes and seek positions [default: pid ^ time].
    #[arg(short = 'z', allow_negative_numbers = true, value_name = "SEED")]
    pub seed: Option<String>,
    /// Copies of the suite run at the same time (1 to 200).
    #[arg(short = 'c', allow_negative_numbers = true, value_name = "COPIES")]
    pub concurrency: Option<String>,
    /// Not supported: read the seed from a file (use -z).
    #[arg(short = 'Z', value_name = "FILE", hide = true)]
    pub seed_file: Option<String>,
    /// Not supported: bonnie++'s semaphore synchronisation of several processes.
    #[arg(short = 'p', value_name = "N", hide = true)]
    pub processes: Option<String>,
    /// Not supported: wait on bonnie++'s semaphore or a prompt.
    #[arg(short = 'y', value_name = "s|p", hide = true)]
    pub sync_with: Option<String>,
    /// Write bonnie++'s near-zero block buffers instead of incompressible data.
    #[arg(long)]
    pub compressible: bool,
    /// CSV line format: csv (csv-1.98: bonnie++ 1.98 to 2.00a) or csv-1.03, the names
    /// `show --format` takes for a bonnie run.
    #[arg(long, value_name = "FORMAT", default_value = "csv-1.98", value_parser = parse_format)]
    pub format: CsvFormat,
    #[command(flatten)]
    pub run: crate::RunFlags,
}

fn parse_format(s: &str) -> Result<CsvFormat, String> {
    s.parse()
}

impl BonnieArgs {
    fn flags(&self) -> Flags {
        Flags {
            dir: self.dir.clone(),
            size: self.size.clone(),
            files: self.files.clone(),
            machine: self.machine.clone(),
            ram: self.ram.clone(),
            runs: self.runs.clone(),
            user: self.user.clone(),
            group: self.group.clone(),
            quiet: self.quiet,
            char_io: self
                .char_io
                .as_ref()
                .map(|s| (!s.is_empty()).then(|| s.clone())),
            fsync_each: self.fsync_each,
            direct: self.direct,
            seed: self.seed.clone(),
            concurrency: self.concurrency.clone(),
            compressible: self.compressible,
        }
    }

    fn refuse_unsupported(&self) -> anyhow::Result<()> {
        if self.seed_file.is_some() {
            anyhow::bail!("-Z: a seed file is not supported; give the seed with -z");
        }
        if self.processes.is_some() || self.sync_with.is_some() {
            anyhow::bail!(
                "-p/-y: bonnie++'s semaphore synchronisation of several processes is not \
                 supported; use -c to run copies at the same time"
            );
        }
        Ok(())
    }
}

pub fn run_bonnie(args: BonnieArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    args.refuse_unsupported()?;
    let mut cfg = Config::from_flags(&args.flags(), &Host::detect())?;
    check_label(store)?;
    if let Target::Remote(remote) = &cfg.target {
        crate::running::prepare_target(remote, true)?;
    }
    warn_of_killed_runs(&cfg);
    let _mark = owner_only_files(|| mark_remote(&cfg))?;
    let store = &enter_target_dir(&mut cfg, store)?;
    let mut session = Session::begin(store)?;
    let mut stdout = io::stdout();
    // In a multi-host run the other ranks print nothing but errors.
    let secondary = crate::multihost::secondary();
    if cfg.runs.is_some() && !secondary {
        print_notes(&cfg)?;
    }
    if cfg.runs.is_some_and(|n| n > 1) {
        bonnie_csv::render_header(args.format, &mut stdout)?;
    }
    let mut code = ExitCode::SUCCESS;
    for _ in 0..cfg.runs.unwrap_or(1) {
        let measure = || -> anyhow::Result<RunResult> {
            // On a terminal, the bar (which prints bonnie++'s lines above it as tests end);
            // elsewhere bonnie++'s plain lines.
            let live = (!cfg.quiet && !secondary && io::stderr().is_terminal())
                .then(|| BonnieLive::start(storbench_bonnie::progress::plan(&cfg)));
            let mut progress = |e: Event| match &live {
                Some(bar) => bar.event(&e),
                None if !secondary => show_progress(&cfg, e),
                None => {}
            };
            let outcome = owner_only_files(|| run_once(&cfg, &mut progress));
            if let Some(bar) = live {
                bar.finish();
            }
            let mut run = match outcome {
                Ok(run) => run,
                // main prints it as is and exits with 128 + the signal.
                Err(e @ BonnieError::Interrupted { .. }) => anyhow::bail!("{e}"),
                Err(e) => return Err(e.into()),
            };
            run.command_line = std::env::args().collect();
            Ok(run)
        };
        let render = |run: &RunResult| -> anyhow::Result<()> {
            Ok(print_run(&cfg, run, args.format, &mut io::stdout())?)
        };
        let this = session.run(measure, |_| {}, render)?;
        if code == ExitCode::SUCCESS {
            code = this;
        }
    }
    Ok(code)
}

/// In a local directory: warns of what killed runs left there (rank 0 only). The suite
/// marks the directory itself (see [`crate::bonnie_marker`]) before it creates anything.
fn warn_of_killed_runs(cfg: &Config) {
    if let Target::Local(dir) = &cfg.target
        && !crate::multihost::secondary()
    {
        crate::cmd::clean::warn_stale(dir);
    }
}

/// In a directory on a server: warns of what killed runs left there (rank 0 only) and
/// marks it for this run, as the suite's marker does locally (a PID says nothing there;
/// the mark is made owner-only, as the suite's files).
fn mark_remote(cfg: &Config) -> anyhow::Result<Option<crate::remote_leftovers::RunMark>> {
    use crate::remote_leftovers::{Kind, RunMark};
    match &cfg.target {
        Target::Remote(dir) => Ok(Some(RunMark::begin(
            dir,
            Kind::Bonnie,
            !crate::multihost::secondary(),
        )?)),
        _ => Ok(None),
    }
}

/// Changes to a local `-d` directory as bonnie++ does, so the suite names its files with
/// short relative paths (each metadata operation then walks one or two components, not
/// the whole path). A relative `--db` is made absolute first so it still means the same.
fn enter_target_dir(cfg: &mut Config, store: &StoreArgs) -> anyhow::Result<StoreArgs> {
    let mut store = store.clone();
    if let Target::Local(dir) = &cfg.target {
        if let Some(db) = &store.db {
            store.db = Some(std::path::absolute(db)?);
        }
        std::env::set_current_dir(dir)
            .map_err(|e| anyhow::anyhow!("-d {}: cannot change to it: {e}", dir.display()))?;
        cfg.target = Target::Cwd(dir.clone());
    }
    Ok(store)
}

/// Runs `suite` with a umask of 077: bonnie++ makes its test file and small files 0600 and
/// its directories 0700, which this gives from the engines' 0644 and 0755, locally and over
/// NFS. The old umask is back before anything else is written (the results database).
fn owner_only_files<T>(suite: impl FnOnce() -> T) -> T {
    // SAFETY: umask(2) cannot fail.
    let old = unsafe { libc::umask(0o077) };
    let result = suite();
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    result
}

/// bonnie++'s layout: the table (stdout, or stderr with -q; none with -x), then the CSV.
fn print_run(
    cfg: &Config,
    run: &RunResult,
    format: CsvFormat,
    stdout: &mut dyn Write,
) -> io::Result<()> {
    if cfg.runs.is_none() {
        if cfg.quiet {
            bonnie_table::render(run, &mut io::stderr())?;
        } else {
            bonnie_table::render(run, stdout)?;
        }
    }
    bonnie_csv::render(run, format, stdout)?;
    stdout.flush()
}

/// With -x there is no table, so the notes go to stderr once, before the first run.
fn print_notes(cfg: &Config) -> io::Result<()> {
    let mut err = io::stderr();
    for n in &cfg.notes {
        writeln!(err, "storbench: {} [{}]", n.message, n.code)?;
    }
    Ok(())
}

/// bonnie++'s progress lines on stderr ("Writing intelligently...done"), unless -q.
fn show_progress(cfg: &Config, e: Event) {
    if cfg.quiet {
        return;
    }
    match e {
        Event::Started(id) => eprint!("{}", start_message(id)),
        Event::Finished(_) => eprintln!("done"),
    }
}
