//! Shared set-up for the tests against a real tgtd.

#![allow(dead_code)]

use std::path::PathBuf;

use storbench_testkit::tgtd::{self, Tgtd};

pub const IQN: &str = "iqn.2026-11.lab.storbench:disk";
pub const LUN_SIZE: u64 = 64 << 20;

/// A tgtd with target 1 = [`IQN`] and LUN 1 on a sparse file of [`LUN_SIZE`] bytes.
pub struct Lab {
    pub tgtd: Tgtd,
    pub backing: PathBuf,
    _dir: tempfile::TempDir,
}

impl Lab {
    pub fn url(&self) -> String {
        format!("iscsi://{}/{IQN}/1", self.tgtd.portal())
    }
}

/// Starts the lab, or prints why it cannot and returns `None` (the test then skips).
pub fn lab() -> Option<Lab> {
    if let Some(why) = tgtd::unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let backing = dir.path().join("lun1.img");
    tgtd::sparse_file(&backing, LUN_SIZE).expect("backing file");
    let mut tgtd = Tgtd::start().expect("start tgtd");
    tgtd.add_target(1, IQN).expect("target");
    tgtd.add_lun(1, 1, &backing).expect("lun");
    Some(Lab {
        tgtd,
        backing,
        _dir: dir,
    })
}

/// A deterministic, position-dependent pattern (a stale or misplaced block shows).
pub fn pattern(offset: u64, buf: &mut [u8], seed: u8) {
    for (i, b) in buf.iter_mut().enumerate() {
        let pos = offset + i as u64;
        *b = (pos.wrapping_mul(2_654_435_761) >> 13) as u8 ^ seed ^ (pos >> 9) as u8;
    }
}
