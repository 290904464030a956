//! Output files the user names (`export -o`, `report -o`, `man --dir`) cannot be turned
//! against the user: nothing planted beside the output is followed, and a symbolic link,
//! device or FIFO at the output is refused with one line and left as it was. Each test works
//! in a scratch directory of its own.

mod common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use common::{Run, storbench};

/// A scratch directory with a results database holding one run (run 1, label `base`).
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let s = Scratch {
            dir: tempfile::tempdir().unwrap(),
        };
        let made = s.run(&[
            "fio",
            "--ioengine=null",
            "--name=x",
            "--size=1m",
            "--rw=read",
            "--label=base",
        ]);
        assert!(made.success(), "{}", made.stderr);
        s
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn run(&self, args: &[&str]) -> Run {
        let mut c = storbench();
        c.current_dir(self.dir.path())
            .env("STORBENCH_DB", self.path("results.db"))
            .args(args);
        Run::of(&mut c)
    }

    /// The directory's entries besides the database.
    fn entries(&self) -> Vec<String> {
        common::entries(self.dir.path())
            .into_iter()
            .filter(|n| !n.starts_with("results.db"))
            .collect()
    }
}

fn c_path(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

#[test]
fn a_symlink_planted_at_the_old_temporary_name_is_not_followed() {
    let s = Scratch::new();
    let victim = s.path("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, s.path("o.sbr.partial")).unwrap();
    let out = s.run(&["export", "1", "-o", "o.sbr"]);
    assert!(out.success(), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    let meta = std::fs::symlink_metadata(s.path("o.sbr")).unwrap();
    assert!(meta.is_file(), "o.sbr is not a regular file");
    let text = std::fs::read_to_string(s.path("o.sbr")).unwrap();
    assert!(text.starts_with("{\"format\":\"storbench-runs/"), "{text}");
    assert_eq!(s.entries(), ["o.sbr", "o.sbr.partial", "victim"]);
}

#[test]
fn report_at_a_fifo_is_refused_and_the_fifo_kept() {
    let s = Scratch::new();
    let fifo = s.path("r.html");
    assert_eq!(unsafe { libc::mkfifo(c_path(&fifo).as_ptr(), 0o644) }, 0);
    let line = s.run(&["report", "1", "-o", "r.html"]).one_error_line();
    assert!(line.starts_with("storbench: r.html: is a FIFO"), "{line}");
    let t = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(t.is_fifo());
    assert_eq!(s.entries(), ["r.html"]);
}

#[test]
fn report_at_a_symlink_is_refused_and_its_target_untouched() {
    let s = Scratch::new();
    let victim = s.path("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, s.path("r.html")).unwrap();
    let line = s.run(&["report", "1", "-o", "r.html"]).one_error_line();
    assert!(line.contains("is a symbolic link; refusing"), "{line}");
    assert!(
        std::fs::symlink_metadata(s.path("r.html"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    let line = s.run(&["export", "1", "-o", "r.html"]).one_error_line();
    assert!(line.contains("is a symbolic link; refusing"), "{line}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

#[test]
fn report_at_a_device_node_is_refused_and_the_node_kept() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIP: making a device node needs root");
        return;
    }
    let s = Scratch::new();
    let node = s.path("null");
    // The same device as /dev/null (char 1:3), in the scratch directory.
    let made = unsafe {
        libc::mknod(
            c_path(&node).as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(1, 3),
        )
    };
    assert_eq!(made, 0, "mknod: {}", std::io::Error::last_os_error());
    let line = s.run(&["report", "1", "-o", "null"]).one_error_line();
    assert!(
        line.starts_with("storbench: null: is a device; refusing"),
        "{line}"
    );
    let t = std::fs::symlink_metadata(&node).unwrap().file_type();
    assert!(t.is_char_device(), "the device node was replaced");
    assert_eq!(s.entries(), ["null"]);
}

#[test]
fn a_regular_file_is_replaced_and_no_temporary_left() {
    let s = Scratch::new();
    std::fs::write(s.path("r.html"), "old").unwrap();
    std::fs::write(s.path("o.sbr"), "old").unwrap();
    let out = s.run(&["report", "1", "-o", "r.html"]);
    assert!(out.success(), "{}", out.stderr);
    let out = s.run(&["export", "1", "-o", "o.sbr"]);
    assert!(out.success(), "{}", out.stderr);
    assert!(
        std::fs::read_to_string(s.path("r.html"))
            .unwrap()
            .contains("<html")
    );
    assert!(
        std::fs::read_to_string(s.path("o.sbr"))
            .unwrap()
            .contains("storbench-runs/")
    );
    assert_eq!(s.entries(), ["o.sbr", "r.html"]);
}

#[test]
fn a_dash_is_standard_output() {
    let s = Scratch::new();
    let out = s.run(&["export", "1", "-o", "-"]);
    assert!(out.success(), "{}", out.stderr);
    assert!(
        out.stdout.starts_with("{\"format\":\"storbench-runs/"),
        "{}",
        out.stdout
    );
    assert!(s.entries().is_empty(), "{:?}", s.entries());
}

#[test]
fn man_pages_are_not_written_through_a_planted_symlink() {
    let s = Scratch::new();
    let victim = s.path("victim");
    std::fs::write(&victim, "precious").unwrap();
    let pages = s.path("man");
    std::fs::create_dir(&pages).unwrap();
    std::os::unix::fs::symlink(&victim, pages.join("storbench.1")).unwrap();
    let line = s.run(&["man", "--dir", "man"]).one_error_line();
    assert!(line.contains("storbench.1: is a symbolic link"), "{line}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}
