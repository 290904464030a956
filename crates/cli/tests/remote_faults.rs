//! Remote targets as safe as local ones (docs/faults.md), against a real nfs-ganesha and a
//! real Samba smbd started by the test: a lay-out larger than the server's free space is
//! refused before anything is written, a link planted at a generated name is never
//! followed, and what a killed run left on the server is named and cleaned.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Run, storbench};
use storbench_testkit::ganesha::{self, Ganesha};
use storbench_testkit::smbd::{self, Smbd};

/// A refusal before any IO comes this fast even with the server's round trips.
const FAST: Duration = Duration::from_secs(10);

fn nfs() -> Option<Ganesha> {
    storbench_testkit::require!(ganesha::unavailable());
    Some(Ganesha::start().expect("start ganesha"))
}

fn smb() -> Option<Smbd> {
    storbench_testkit::require!(smbd::unavailable());
    Some(Smbd::start().expect("start smbd"))
}

fn smb_url(s: &Smbd, rel: &str) -> String {
    format!(
        "smb://{}@127.0.0.1:{}/{}/{rel}",
        s.user(),
        s.port,
        smbd::SHARE
    )
}

/// `storbench ARGS --no-save` with the share's password in the environment.
fn run(args: &[&str], password: Option<&str>) -> (Run, Duration) {
    let mut c = storbench();
    c.args(args).arg("--no-save");
    c.env_remove("STORBENCH_SMB_PASSWORD");
    if let Some(pw) = password {
        c.env("STORBENCH_SMB_PASSWORD", pw);
    }
    let start = Instant::now();
    let r = Run::of(&mut c);
    (r, start.elapsed())
}

/// Names in a server's directory.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// One line, starting `storbench: `, naming every needle, in bounded time.
fn refused(r: &Run, took: Duration, needles: &[&str]) -> String {
    let line = r.one_error_line();
    assert!(line.starts_with("storbench: "), "{line}");
    for n in needles {
        assert!(line.contains(n), "{n:?} missing from: {line}");
    }
    assert!(took < FAST, "took {took:?}: {line}");
    line
}

/// fio mode, quick and bonnie asking for a petabyte on a server: refused before anything
/// is created, in the local check's words.
fn petabyte_refused(dir: &Path, url: &str, engine: &str, password: Option<&str>) {
    let directory = format!("--directory={url}");
    let ioengine = format!("--ioengine={engine}");
    for rw in ["write", "read"] {
        let rw = format!("--rw={rw}");
        let args = ["fio", "--name=big", &ioengine, &directory, "--size=1p", &rw];
        let (r, took) = run(&args, password);
        refused(
            &r,
            took,
            &["big: not enough space in ", "use a smaller size="],
        );
        assert_eq!(
            names(dir),
            Vec::<String>::new(),
            "nothing left on the server"
        );
    }
    let (r, took) = run(&["quick", url, "--size=1p", "--runtime=1s"], password);
    refused(&r, took, &["not enough space in ", "PiB more but only"]);
    assert_eq!(names(dir), Vec::<String>::new());
    let size = (1u64 << 30).to_string(); // MiB: a PiB
    let (r, took) = run(&["bonnie", "-d", url, "-s", &size, "-r", "0"], password);
    refused(&r, took, &["not enough space in ", "give a smaller -s"]);
    assert_eq!(names(dir), Vec::<String>::new());
}

#[test]
fn nfs_a_lay_out_beyond_the_servers_free_space_is_refused_before_writing() {
    let Some(g) = nfs() else { return };
    petabyte_refused(&g.export_dir(), &g.url(""), "nfs", None);
}

#[test]
fn smb_a_lay_out_beyond_the_shares_free_space_is_refused_before_writing() {
    let Some(s) = smb() else { return };
    let dir = s.share_dir(smbd::SHARE);
    petabyte_refused(&dir, &smb_url(&s, ""), "smb", Some(s.password()));
}

#[test]
fn nfs_a_planted_symlink_at_a_generated_name_is_refused() {
    let Some(g) = nfs() else { return };
    let export = g.export_dir();
    std::fs::write(export.join("victim"), b"not yours").unwrap();
    std::os::unix::fs::symlink("victim", export.join("a.0.0")).unwrap();
    let directory = format!("--directory={}", g.url(""));
    for rw in ["write", "read"] {
        let rw = format!("--rw={rw}");
        let (r, took) = run(
            &[
                "fio",
                "--name=a",
                "--ioengine=nfs",
                &directory,
                "--size=1m",
                &rw,
            ],
            None,
        );
        refused(&r, took, &["a.0.0", "is a symbolic link", "filename="]);
        assert_eq!(std::fs::read(export.join("victim")).unwrap(), b"not yours");
        assert!(
            export
                .join("a.0.0")
                .symlink_metadata()
                .unwrap()
                .is_symlink()
        );
    }
}

/// fio's `nfs_url=` with a plain `filename=`: the file lies on the server, so the server's
/// free space is the one checked, not the working directory's.
#[test]
fn nfs_url_with_a_plain_filename_checks_the_servers_free_space() {
    let Some(g) = nfs() else { return };
    let nfs_url = format!("--nfs_url={}", g.url(""));
    for rw in ["write", "read"] {
        let rw = format!("--rw={rw}");
        let args = [
            "fio",
            "--name=big",
            "--ioengine=nfs",
            &nfs_url,
            "--filename=big.file",
            "--size=1p",
            &rw,
        ];
        let (r, took) = run(&args, None);
        refused(
            &r,
            took,
            &["big: not enough space in nfs://", "use a smaller size="],
        );
        assert_eq!(names(&g.export_dir()), Vec::<String>::new());
    }
}

/// Samba follows links server-side, so the client never sees one: a name storbench
/// generates is created exclusively (FILE_CREATE), and an object already there (a link
/// into the share, or one leading out of it) refuses the run in one line naming it.
#[test]
fn smb_a_planted_symlink_at_a_generated_name_is_refused() {
    let Some(s) = smb() else { return };
    let share = s.share_dir(smbd::SHARE);
    let outside = share.parent().unwrap().join("victim");
    let inside = share.join("victim");
    let directory = format!("--directory={}", smb_url(&s, ""));
    // Samba refuses to open a link leading out of the share (`wide links = no`) and
    // follows one that stays inside it.
    let cases = [
        (&outside, &["a.0.0"][..]),
        (&inside, &["a.0.0", "already exists", "filename="][..]),
    ];
    for (victim, needles) in cases {
        std::fs::write(victim, b"not yours").unwrap();
        std::os::unix::fs::symlink(victim, share.join("a.0.0")).unwrap();
        for rw in ["write", "read"] {
            let rw = format!("--rw={rw}");
            let args = [
                "fio",
                "--name=a",
                "--ioengine=smb",
                &directory,
                "--size=1m",
                &rw,
            ];
            let (r, took) = run(&args, Some(s.password()));
            refused(&r, took, needles);
            assert_eq!(std::fs::read(victim).unwrap(), b"not yours");
            assert!(share.join("a.0.0").symlink_metadata().unwrap().is_symlink());
        }
        std::fs::remove_file(share.join("a.0.0")).unwrap();
    }
}

/// fio's `create_on_open=1` over SMB creates the generated name at the job's first open:
/// exclusively, as the lay-out would.
#[test]
fn smb_create_on_open_makes_a_new_generated_file_only() {
    let Some(s) = smb() else { return };
    let share = s.share_dir(smbd::SHARE);
    let directory = format!("--directory={}", smb_url(&s, ""));
    let args = [
        "fio",
        "--name=c",
        "--ioengine=smb",
        &directory,
        "--size=64k",
        "--rw=write",
        "--create_on_open=1",
    ];
    let (r, _) = run(&args, Some(s.password()));
    r.ok();
    assert!(std::fs::metadata(share.join("c.0.0")).unwrap().is_file());
    std::fs::remove_file(share.join("c.0.0")).unwrap();
    std::os::unix::fs::symlink("victim", share.join("c.0.0")).unwrap();
    std::fs::write(share.join("victim"), b"not yours").unwrap();
    let (r, took) = run(&args, Some(s.password()));
    refused(&r, took, &["c.0.0", "already exists"]);
    assert_eq!(std::fs::read(share.join("victim")).unwrap(), b"not yours");
}

/// A device's capacity bounds the region: asking for more than an NBD export holds, or an
/// offset past its end, is refused before any IO.
#[test]
fn nbd_a_region_beyond_the_exports_capacity_is_refused() {
    storbench_testkit::require!(storbench_testkit::nbdkit::unavailable());
    let srv = storbench_testkit::nbdkit::Nbdkit::memory("8M").unwrap();
    let uri = format!("--uri={}", srv.uri());
    for region in [&["--size=16M"][..], &["--size=4M", "--offset=6M"][..]] {
        let mut args = vec!["fio", "--name=j", "--ioengine=nbd", &uri, "--rw=write"];
        args.extend_from_slice(region);
        let (r, took) = run(&args, None);
        refused(&r, took, &["the device has 8388608"]);
    }
}

/// `clean` with a URL of a protocol without files says so in one line, instead of
/// looking for a local directory of that name.
#[test]
fn clean_of_a_url_without_files_is_refused_in_one_line() {
    for url in [
        "iscsi://127.0.0.1/iqn.2003-01.org.x:t/1",
        "nbd://127.0.0.1/e",
    ] {
        let mut c = storbench();
        c.args(["clean", url, "--yes"]);
        let line = Run::of(&mut c).one_error_line();
        assert!(
            line.starts_with("storbench: clean takes a local directory or an nfs:// or smb://"),
            "{line}"
        );
        assert!(line.contains("hold no files of storbench's"), "{line}");
    }
}
