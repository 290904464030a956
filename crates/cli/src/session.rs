//! One run's life cycle, the same for every measuring subcommand (`fio`, `quick`,
//! `bonnie`, and each rank of a multi-host run, whose results rank 0 merges after step 2:
//! docs/multihost.md). A subcommand only translates its arguments into a measurement, its
//! verdicts and a renderer; the order is fixed here:
//!
//! 1. [`Session::begin`]: the stop handlers (a signal from here on only asks for a stop, so
//!    what the run creates is still removed), then the results database is opened (created
//!    if needed) — before any IO, so an unusable `--db` is one line before a long
//!    benchmark, not an error after it;
//! 2. [`Session::run`]: lay-out, run and cleanup (the runner, or bonnie's suite, which
//!    remove what they created on every exit path), with the server's counters read by a
//!    thread of their own around it when `--server-stats` asked for them;
//! 3. verdicts: the subcommand's own notes and corrections of the result;
//! 4. redaction: CHAP secrets masked in every string of the result;
//! 5. save — before rendering, so a reader that went away (`| head -1`) cannot lose the
//!    measurement;
//! 6. render (a failed save is reported after the rendering, which still shows the run);
//! 7. job errors and left-over files on stderr, then the exit code.
//!
//! It lives in the CLI's library, not in core: it needs the store and the reporters, and
//! core depends on neither (docs/ARCHITECTURE.md).

use std::process::ExitCode;

use storbench_model::result::RunResult;
use storbench_store::Store;

use crate::StoreArgs;
use crate::cmd::save::{check_label, db_path, save_to, say_saved};
use crate::multihost::Combined;
use crate::running::{exit_code, redact_run, report_job_errors};

/// A started session: stop handlers installed, database open unless `--no-save`.
pub struct Session {
    store: StoreArgs,
    db: Option<Store>,
    server_stats: Option<storbench_snmp::SnmpUrl>,
}

impl Session {
    /// Installs the stop handlers and opens the results database (step 1).
    pub fn begin(store: &StoreArgs) -> anyhow::Result<Session> {
        storbench_core::stop::install_handlers();
        check_label(store)?;
        // In a multi-host run only rank 0 saves (the merged run).
        let db = if store.no_save || crate::multihost::secondary() {
            None
        } else {
            Some(open_for_saving(store)?)
        };
        Ok(Session {
            store: store.clone(),
            db,
            server_stats: None,
        })
    }

    /// Reads this server's counters during the run (`--server-stats snmp://…`).
    pub fn with_server_stats(mut self, url: Option<storbench_snmp::SnmpUrl>) -> Session {
        self.server_stats = url;
        self
    }

    /// Steps 2 to 7 for one measurement: `measure` lays out, runs and cleans up;
    /// `verdicts` adds the subcommand's notes; `render` writes the reports.
    pub fn run(
        &mut self,
        measure: impl FnOnce() -> anyhow::Result<RunResult>,
        verdicts: impl FnOnce(&mut RunResult),
        render: impl FnOnce(&RunResult) -> anyhow::Result<()>,
    ) -> anyhow::Result<ExitCode> {
        let sampler = match &self.server_stats {
            Some(url) => Some(crate::server_stats::start(url)?),
            None => None,
        };
        let measured = measure();
        let server = sampler.map(crate::server_stats::Sampler::finish);
        // A multi-host run's ranks send theirs to rank 0, which goes on with the merged one.
        let mut run = match crate::multihost::combine(measured)? {
            Combined::Here(run) => *run,
            Combined::Sent(code) => return Ok(code),
        };
        if let Some(stats) = server {
            run.server_stats = Some(stats);
            storbench_core::analysis::server_stats::annotate(&mut run);
        }
        verdicts(&mut run);
        redact_run(&mut run)?;
        // Bookkeeping comes after the table: the run is saved first, and said so after.
        let saved = self.save(&run);
        let rendered = render(&run);
        let id = saved?;
        if let (Some(id), Some(db)) = (id, &self.db) {
            say_saved(db, &self.store, id);
        }
        rendered?;
        report_job_errors(&run);
        Ok(exit_code(&run))
    }

    fn save(&mut self, run: &RunResult) -> anyhow::Result<Option<i64>> {
        match &mut self.db {
            Some(db) => save_to(db, &self.store, run).map(Some),
            None => Ok(None),
        }
    }
}

/// Opens the database a run will be saved in; its error is one line (the store's message
/// already names the cause, which anyhow's chain would repeat).
fn open_for_saving(store: &StoreArgs) -> anyhow::Result<Store> {
    let path = db_path(store)?;
    Store::open(&path).map_err(|e| {
        anyhow::anyhow!("{e}; nothing was run (choose another database with --db or STORBENCH_DB, or use --no-save)")
    })
}
