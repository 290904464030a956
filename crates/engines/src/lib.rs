//! IO engines, one file each, all behind [`storbench_core::Engine`].
//!
//! The catalogue (`storbench_job::catalogue::ENGINES`) says what each engine is: name,
//! aliases, what it serves, its options. This crate holds the code: each engine's file
//! declares `NAME` (its catalogue entry) and `create` (its constructor); `build.rs` finds
//! the files that declare a `NAME` and makes each a module listed in [`CONSTRUCTORS`].
//! Adding an engine is one new file here and one line in the catalogue; the test at the
//! end fails until both sides agree.

/// The file calls of an engine without files (`Caps::NO_FILE`: cpuio, exec), one
/// definition for all of them, inside their `impl Engine`: the runner plans, opens and
/// sizes no file for their jobs (`plan::files_for_clone` gives none), so these answer a
/// call that never names a real file. (Defaults on the trait would let a file engine
/// forget its `open` silently.)
macro_rules! no_file_calls {
    () => {
        fn caps(&self) -> storbench_core::Caps {
            storbench_core::Caps::NO_FILE
        }

        fn open(
            &mut self,
            _file: &storbench_core::FileSpec,
        ) -> Result<storbench_core::FileId, storbench_core::EngineError> {
            Ok(0)
        }

        fn size(
            &mut self,
            _file: storbench_core::FileId,
        ) -> Result<u64, storbench_core::EngineError> {
            Ok(0)
        }

        fn close(
            &mut self,
            _file: storbench_core::FileId,
        ) -> Result<(), storbench_core::EngineError> {
            Ok(())
        }
    };
}

pub mod dirfds;
pub mod dirtable;
pub mod listing;
pub mod local;
pub mod meta;
pub mod options;
pub mod round_trip;
pub mod syncio;
pub mod umask;

use storbench_core::{Engine, EngineError};
use storbench_job::JobSpec;
use storbench_job::catalogue::{self, EngineInfo};

/// Builds one engine instance for one worker thread of a job.
pub type Constructor = fn(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError>;

// One module per engine file and `CONSTRUCTORS`, written by `build.rs` from the files that
// declare a catalogue `NAME`.
include!(concat!(env!("OUT_DIR"), "/engines.rs"));

/// One engine: what the catalogue says of it, and how to build it.
#[derive(Clone, Copy)]
pub struct EngineDef {
    pub info: &'static EngineInfo,
    pub create: Constructor,
}

/// The engine answering to `name` (a name or an alias).
pub fn find(name: &str) -> Option<EngineDef> {
    let info = catalogue::find(name)?;
    let create = CONSTRUCTORS
        .iter()
        .find(|(n, _)| *n == info.name)
        .map(|(_, c)| *c)?;
    Some(EngineDef { info, create })
}

/// Checks `target` before a run as its protocol needs (the `prepare` beside its engine's
/// `create`); nothing for a local target or an engine without checks. `directory` when
/// storbench creates files in it.
pub fn prepare(
    target: &storbench_job::target::Target,
    directory: bool,
    ask: &dyn storbench_core::ask::Ask,
) -> Result<(), EngineError> {
    let Some(engine) = target.engine() else {
        return Ok(());
    };
    match PREPARERS.iter().find(|(n, _)| *n == engine.name) {
        Some((_, prepare)) => prepare(target, directory, ask),
        None => Ok(()),
    }
}

/// Builds the engine a job asks for, with a one-line error for unknown names.
pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    let def = find(&job.ioengine).ok_or_else(|| {
        let names: Vec<&str> = catalogue::ENGINES.iter().map(|e| e.name).collect();
        EngineError::unsupported(format!(
            "ioengine={} is not available; storbench has: {}",
            job.ioengine,
            names.join(", ")
        ))
    })?;
    (def.create)(job)
}

#[cfg(test)]
mod tests {
    use super::*;
    use storbench_job::target::Target;

    /// No terminal to ask on, as under a test runner.
    struct NoTerminal;

    impl storbench_core::ask::Ask for NoTerminal {
        fn secret(&self, _: &str, _: &str) -> Result<Option<String>, EngineError> {
            Ok(None)
        }
        fn warn(&self, _: &str) {}
    }

    /// A target's checks before a run are the `prepare` beside its engine's `create`: a
    /// LUN-less iSCSI URL and an SMB user without a password are refused in one line
    /// before any connection, an NFS directory whose server is not there in one line
    /// after trying it (the ports are closed); a local target has none.
    #[test]
    fn a_targets_checks_before_a_run_are_its_engines() {
        let names: Vec<&str> = PREPARERS.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, [iscsi::NAME, nfs::NAME, smb::NAME]);
        let local = Target::Path("/nonexistent/storbench".into());
        assert!(prepare(&local, true, &NoTerminal).is_ok());
        let no_lun = Target::parse("iscsi://127.0.0.1:1/iqn.2026-12.x:y").unwrap();
        let e = prepare(&no_lun, false, &NoTerminal).unwrap_err();
        assert!(
            e.message.contains("a target and a LUN") && !e.message.contains('\n'),
            "{e}"
        );
        // A directory is reached once (port 1 is closed: MOUNT is refused); a file is
        // left to the engine's `open`.
        let export = Target::parse("nfs://127.0.0.1:1/export?version=3&mountport=1").unwrap();
        assert!(prepare(&export, false, &NoTerminal).is_ok());
        let e = prepare(&export, true, &NoTerminal).unwrap_err();
        assert!(
            e.message.starts_with("nfs: ") && !e.message.contains('\n'),
            "{e}"
        );
        if std::env::var_os(storbench_smb::url::PASSWORD_ENV).is_none() {
            let user = Target::parse("smb://u@127.0.0.1:1/share").unwrap();
            let e = prepare(&user, true, &NoTerminal).unwrap_err();
            assert!(e.message.contains("names a user but no password"), "{e}");
        }
    }

    /// The catalogue and the engine files agree: one constructor per entry, one entry per
    /// constructor.
    #[test]
    fn every_catalogue_entry_has_one_constructor() {
        for e in catalogue::ENGINES {
            let n = CONSTRUCTORS.iter().filter(|(n, _)| *n == e.name).count();
            assert_eq!(n, 1, "{} has {n} constructors", e.name);
        }
        for (name, _) in CONSTRUCTORS {
            assert!(
                catalogue::find(name).is_some_and(|e| e.name == *name),
                "{name}"
            );
        }
        assert_eq!(find("iscsi").map(|d| d.info.name), Some(iscsi::NAME));
    }

    /// Each engine that can be built without a target says its catalogue name (the
    /// network engines need a URL).
    #[test]
    fn engines_call_themselves_by_their_catalogue_name() {
        for (name, create) in CONSTRUCTORS {
            let mut job = JobSpec::new("t");
            job.ioengine = name.to_string();
            if let Ok(e) = create(&job) {
                assert_eq!(e.name(), *name);
            }
        }
    }
}
