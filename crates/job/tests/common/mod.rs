//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use storbench_job::{FioInvocation, HostFacts, JobError, parse_fio_args};

/// Fixed host facts so keyword tests are deterministic.
pub const HOST: HostFacts = HostFacts {
    ncpus: 4,
    mb_memory: 8192,
    pagesize: 4096,
};

pub fn env(name: &str) -> Option<String> {
    match name {
        "SIZE" => Some("64m".into()),
        "JOBS" => Some("3".into()),
        _ => None,
    }
}

/// Splits on whitespace, like a shell without quoting.
pub fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

pub fn parse(s: &str) -> Result<FioInvocation, JobError> {
    parse_fio_args(&words(s), &HOST, &env)
}

pub fn parse_args(args: &[String]) -> Result<FioInvocation, JobError> {
    parse_fio_args(args, &HOST, &env)
}

/// The error text for an invocation that must fail.
pub fn error(s: &str) -> String {
    match parse(s) {
        Ok(_) => panic!("expected an error for: {s}"),
        Err(e) => e.to_string(),
    }
}

/// A scratch directory removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "storbench-job-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    pub fn write(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).expect("write scratch file");
        p.display().to_string()
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The directory of the checked-in job-file corpus.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jobs")
}
