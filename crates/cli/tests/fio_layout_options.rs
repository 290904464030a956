//! fio's options about laying out files, cross-checked against fio 3.33 on the same job
//! file run by both tools in temp dirs of their own: the same jobs, the same IO counts and
//! the same files left behind, name by name and size by size. Skipped with a reason when
//! fio 3.33 is missing.

mod common;

use std::path::Path;

use common::system::{LoopDev, Mount, have_tool, sh};
use common::{fio, fio_available, sb_fio};
use serde_json::Value;

/// Per job: name, read and write IOs, and the job's error.
fn jobs(doc: &Value) -> Vec<(String, u64, u64, i64)> {
    doc["jobs"]
        .as_array()
        .expect("jobs array")
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["read"]["total_ios"].as_u64().unwrap(),
                j["write"]["total_ios"].as_u64().unwrap(),
                j["error"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// The files in `dir` but the job file, with their sizes, by name.
fn files(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != "j.fio")
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Runs the job file `text` with both tools: (fio's jobs, files), (storbench's jobs, files).
type Outcome = (Vec<(String, u64, u64, i64)>, Vec<(String, u64)>);

fn both_job(text: &str) -> (Outcome, Outcome) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for d in [&fd, &sd] {
        std::fs::write(d.path().join("j.fio"), text).unwrap();
    }
    let args = ["j.fio", "--output-format=json"];
    let theirs = fio(fd.path(), &args).fio_json();
    let ours = sb_fio(sd.path(), &args);
    assert!(ours.success(), "{text}: {}", ours.stderr);
    (
        (jobs(&theirs), files(fd.path())),
        (jobs(&ours.json()), files(sd.path())),
    )
}

/// `create_only=1`: the files are laid out (three per job, a reading job's and a writing
/// job's) and kept, and no job does any IO.
#[test]
fn create_only_lays_files_out_and_does_no_io_like_fio() {
    if !fio_available() {
        return;
    }
    let job = "[global]\nsize=1m\nnrfiles=3\ncreate_only=1\n\
               [made]\nrw=randread\n\
               [written]\nrw=write\nfilesize=256k\n";
    let (f, s) = both_job(job);
    assert_eq!(f, s, "{job}");
    assert_eq!(s.0.len(), 2);
    assert!(
        s.0.iter().all(|j| j.1 == 0 && j.2 == 0 && j.3 == 0),
        "{s:?}"
    );
    assert_eq!(s.1.len(), 6, "three files per job: {:?}", s.1);
}

/// `allow_mounted_write=0` (fio's default): a write job on a mounted device is refused by
/// both tools, and the file system is left intact; a job on a file runs as in fio.
/// `allow_mounted_write=1` is refused in one line: storbench never writes to a mounted
/// device. Root only (a loop device), skipped otherwise.
#[test]
fn allow_mounted_write_refuses_a_mounted_device_like_fio() {
    if !fio_available() || !LoopDev::available() || !have_tool("mkfs.ext4") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let loopdev = LoopDev::new(dir.path(), 32 << 20);
    let dev = loopdev.dev.as_str();
    sh("mkfs.ext4", &["-q", "-F", dev]);
    let mnt = Mount::new("ext4", dev, &dir.path().join("mnt"), "");
    let job = format!("[w]\nfilename={dev}\nrw=randwrite\nsize=1m\nallow_mounted_write=0\n");
    std::fs::write(dir.path().join("j.fio"), &job).unwrap();
    // fio prints its refusal and ends with status 0, having done no IO.
    let theirs = fio(dir.path(), &["j.fio"]);
    assert!(
        theirs.stderr.contains("appears mounted"),
        "fio did not refuse: {}",
        theirs.stderr
    );
    let ours = sb_fio(dir.path(), &["j.fio"]);
    assert!(!ours.success(), "{job}");
    assert!(
        ours.one_error_line().contains("is mounted on"),
        "{}",
        ours.stderr
    );
    assert!(
        mnt.point.join("lost+found").exists(),
        "the file system is intact"
    );
    let on = job.replace("allow_mounted_write=0", "allow_mounted_write=1");
    std::fs::write(dir.path().join("j.fio"), &on).unwrap();
    let err = sb_fio(dir.path(), &["j.fio"]).one_error_line();
    assert!(err.contains("allow_mounted_write=1 is refused"), "{err}");
    let file = "[f]\nfilename=f\nrw=randwrite\nsize=1m\nallow_mounted_write=0\n";
    let (f, s) = both_job(file);
    assert_eq!(f, s, "{file}");
    assert_eq!(s.0[0].2, 256);
}
