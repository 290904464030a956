//! Every bad-input path of `storbench fio` and `storbench quick`: one line on stderr that
//! names the problem, a non-zero exit, never a panic or a backtrace (RUST_BACKTRACE=1 is set
//! by the helpers, so a panic would show).

mod common;

use std::path::Path;
use std::process::Command;

use common::system::{Mount, deny_io_uring, have_tool, is_root, root_or_skip};
use common::{Run, open_tempdir, sb_fio, storbench, words};

/// Runs `storbench fio <line>` in `dir` and returns its one error line.
fn fio_error(dir: &Path, line: &str) -> String {
    sb_fio(dir, &words(line)).one_error_line()
}

fn assert_names(line: &str, needles: &[&str]) {
    for n in needles {
        assert!(line.contains(n), "{n:?} missing from: {line}");
    }
    assert!(line.starts_with("storbench: "), "{line}");
}

#[test]
fn bad_options_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let null = "--name=a --ioengine=null --size=1m";
    for (extra, needles) in [
        ("--iodeph=4", &["'iodeph'", "did you mean 'iodepth'"][..]),
        ("--bogus=1", &["unknown option 'bogus'"]),
        ("--bs=4q", &["--bs=4q", "size unit"]),
        ("--rwmixread=150", &["rwmixread", "150"]),
        ("--rw=raed", &["'raed'", "randread"]),
        ("--ioengine=nosuch", &["nosuch"]),
        (
            "--rate=1m --rate_iops=100",
            &["rate", "rate_iops", "mutually exclusive"],
        ),
        (
            "--io_size=50%",
            &["--io_size=50%", "percentage is not supported"],
        ),
        (
            "--cpus_allowed=0-4096",
            &["--cpus_allowed=0-4096", "is not on this machine"],
        ),
        ("--cpumask=abc", &["--cpumask=abc"]),
        (
            "--cpus_allowed_policy=spread",
            &["'spread'", "shared, split"],
        ),
    ] {
        let line = fio_error(dir.path(), &format!("{null} {extra}"));
        assert_names(&line, needles);
    }
}

#[test]
fn missing_directory_and_job_files() {
    let dir = tempfile::tempdir().unwrap();
    let line = fio_error(
        dir.path(),
        "--name=a --ioengine=psync --size=1m --directory=nope",
    );
    assert_names(&line, &["nope", "No such file or directory"]);
    let line = fio_error(dir.path(), "missing.fio");
    assert_names(&line, &["missing.fio", "No such file"]);
    std::fs::write(dir.path().join("bad.fio"), "[job]\nrw=read\nthis is bad\n").unwrap();
    let line = fio_error(dir.path(), "bad.fio");
    assert_names(&line, &["bad.fio:3", "this is bad"]);
    std::fs::write(dir.path().join("typo.fio"), "[job]\nrw=raed\nsize=1m\n").unwrap();
    let line = fio_error(dir.path(), "typo.fio");
    assert_names(&line, &["typo.fio:2", "raed"]);
    assert!(
        common::entries(dir.path())
            .iter()
            .all(|e| e.ends_with(".fio"))
    );
}

#[test]
fn quick_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let quick = |args: &[&str]| {
        let mut c = storbench();
        c.current_dir(dir.path())
            .arg("quick")
            .args(args)
            .arg("--no-save");
        Run::of(&mut c)
    };
    let run = quick(&["nope"]);
    assert_names(
        &run.one_error_line(),
        &["nope", "No such file or directory"],
    );
    // Flag values are checked by clap; its message is cut to the one line that names the
    // problem (no usage block, no "try --help").
    for (args, needle) in [
        (&["--size", "4q"][..], "'4q'"),
        (&["--runtime", "10ms"], "too short"),
        (&["--eta", "sometimes"], "sometimes"),
    ] {
        let run = quick(args);
        assert_eq!(run.code, Some(2), "{run:?}");
        let line = run.one_error_line();
        assert!(
            line.starts_with("storbench: ") && line.contains(needle),
            "{line}"
        );
    }
    assert!(common::entries(dir.path()).is_empty());
}

/// A mistyped iscsi:// URL is refused before anything is printed, not under quick's banner
/// saying the LUN's data would be overwritten.
#[test]
fn quick_bad_iscsi_urls_fail_before_the_banner() {
    for (url, needle) in [
        (
            "iscsi://127.0.0.1:99999/iqn.2026-11.lab:x/1",
            "port from 1 to 65535",
        ),
        (
            "iscsi://127.0.0.1/iqn.2026-11.lab:x",
            "needs a target and a LUN",
        ),
        (
            "iscsi://127.0.0.1/iqn.2026-11.lab:x/one",
            "the LUN must be a number",
        ),
        ("iscsi:///iqn.2026-11.lab:x/1", "bad host or port"),
    ] {
        let mut c = storbench();
        c.args(["--no-save", "quick", "--size", "1m", url]);
        let run = Run::of(&mut c);
        assert_eq!(run.code, Some(1), "{run:?}");
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}", run.stderr);
        assert_names(lines[0], &["iqn.2026-11.lab:x", needle]);
    }
}

/// A directory we may not write to: as an unprivileged user when we are root (root ignores
/// permissions), else a read-only directory of our own.
#[test]
fn permission_denied() {
    let dir = open_tempdir();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    let as_user = |args: &[&str]| {
        let mut c = if is_root() && have_tool("setpriv") {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(assert_cmd::cargo::cargo_bin("storbench"));
            c.env("RUST_BACKTRACE", "1")
                .env("STORBENCH_DB", "/dev/null/must-not-save.db");
            c
        } else {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
            storbench()
        };
        c.current_dir(dir.path()).args(args).arg("--no-save");
        Run::of(&mut c)
    };
    let target = locked.to_str().unwrap();
    let run = as_user(&[
        "fio",
        "--name=p",
        "--ioengine=psync",
        "--size=1m",
        &format!("--directory={target}"),
    ]);
    assert_names(
        &run.one_error_line(),
        &["locked/p.0.0", "Permission denied"],
    );
    let run = as_user(&["quick", "--size", "1m", target]);
    assert_names(&run.one_error_line(), &["locked", "Permission denied"]);
    assert!(common::entries(&locked).is_empty());
}

/// Lay-outs that do not fit, on a 1 MiB tmpfs of the test's own: refused before writing.
#[test]
fn no_space_while_laying_out() {
    if !root_or_skip("mounting a small tmpfs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let small = Mount::new("tmpfs", "e2e-small", &dir.path().join("small"), "size=1m");
    let target = small.point.to_str().unwrap();
    let line = fio_error(
        dir.path(),
        &format!("--name=f --ioengine=psync --size=4m --rw=read --directory={target}"),
    );
    // fio mode checks the free space before it lays out (fio writes until ENOSPC).
    assert_names(
        &line,
        &["f: not enough space in ", "small", "4.0 MiB more", "size="],
    );
    assert!(common::entries(&small.point).is_empty());
    // quick checks the free space before it starts.
    let mut c = storbench();
    c.args(["quick", "--size", "4m", target, "--no-save"]);
    assert_names(
        &Run::of(&mut c).one_error_line(),
        &["not enough free space", "--size"],
    );
    // So does bonnie (bonnie++ would write until ENOSPC, or fill the RAM on a big tmpfs).
    let mut c = storbench();
    c.args([
        "bonnie",
        "-d",
        target,
        "-s",
        "4",
        "-r",
        "0",
        "-n",
        "0",
        "--no-save",
    ]);
    assert_names(
        &Run::of(&mut c).one_error_line(),
        &["not enough space in", "small", "need 4 MiB", "-s"],
    );
    assert!(common::entries(&small.point).is_empty());
    // Small files take whole pages (1024 files of 1 KiB need 4 MiB here), and inodes.
    let mut c = storbench();
    c.args([
        "bonnie",
        "-d",
        target,
        "-s",
        "0",
        "-n",
        "1:1024:1024",
        "--no-save",
    ]);
    assert_names(
        &Run::of(&mut c).one_error_line(),
        &["need 4 MiB", "-n files"],
    );
    let few = Mount::new("tmpfs", "e2e-few", &dir.path().join("few"), "nr_inodes=100");
    let mut c = storbench();
    c.args([
        "bonnie",
        "-d",
        few.point.to_str().unwrap(),
        "-s",
        "0",
        "-n",
        "1",
        "--no-save",
    ]);
    assert_names(
        &Run::of(&mut c).one_error_line(),
        &["not enough inodes", "1024 files", "fewer -n files"],
    );
    assert!(common::entries(&few.point).is_empty());
}

/// A later job that cannot start (here its files do not fit in the space left, after the
/// first job ran) keeps the finished job's results: they are printed, the failed job
/// carries the error, the exit code says so, and unlink=1 still removes both.
#[test]
fn a_job_that_cannot_start_after_others_ran_keeps_their_results() {
    if !root_or_skip("mounting a small tmpfs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let small = Mount::new("tmpfs", "e2e-small", &dir.path().join("small"), "size=4m");
    let target = small.point.to_str().unwrap();
    let run = sb_fio(
        dir.path(),
        &words(&format!(
            "--ioengine=psync --unlink=1 --directory={target} --output-format=json \
             --name=a --size=1m --rw=write --name=b --stonewall --size=8m --rw=read"
        )),
    );
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    common::assert_no_panic(&run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2, "{}", run.stdout);
    assert_eq!(
        (&jobs[0]["jobname"], &jobs[0]["error"]),
        (&"a".into(), &0.into())
    );
    assert_eq!(jobs[0]["write"]["io_bytes"], 1 << 20);
    assert_ne!(jobs[1]["error"], 0);
    assert!(
        run.stderr.contains("b: could not start") && run.stderr.contains("not enough space"),
        "{}",
        run.stderr
    );
    assert!(common::entries(&small.point).is_empty());
}

/// A share written as `mount` or Windows write it (`nas:/export`, `//nas/share`) is no
/// path here: quick, bonnie and fio name the URL that reaches it, in one line.
#[test]
fn shares_written_as_mounts_take_them_get_a_did_you_mean() {
    let dir = tempfile::tempdir().unwrap();
    for (target, url) in [
        ("nas.invalid:/export/dir", "nfs://nas.invalid/export/dir"),
        ("//nas.invalid/share", "smb://nas.invalid/share"),
    ] {
        let want = format!("did you mean {url}?");
        let mut c = storbench();
        c.current_dir(dir.path())
            .args(["quick", "--size", "1m", target, "--no-save"]);
        assert_names(&Run::of(&mut c).one_error_line(), &[target, &want]);
        let mut c = storbench();
        c.current_dir(dir.path())
            .args(["bonnie", "-d", target, "--no-save"]);
        assert_names(&Run::of(&mut c).one_error_line(), &[target, &want]);
    }
    assert!(common::entries(dir.path()).is_empty());
}

/// A URL of an unknown scheme is refused as such, not taken for a local path (`target
/// http://…: No such file or directory`); a local directory whose name merely looks like
/// one still works.
#[test]
fn unknown_url_schemes_are_named() {
    let dir = tempfile::tempdir().unwrap();
    for (target, scheme) in [
        ("http://127.0.0.1/export", "http"),
        ("nfsx://127.0.0.1/export", "nfsx"),
        ("nfs:/127.0.0.1/export", "nfs"),
    ] {
        let mut c = storbench();
        c.current_dir(dir.path())
            .args(["quick", "--size", "1m", target, "--no-save"]);
        let line = Run::of(&mut c).one_error_line();
        let want = format!("unsupported URL scheme \"{scheme}\" in {target}: use a path, nfs://");
        assert_names(&line, &[&want]);
        let mut c = storbench();
        c.current_dir(dir.path())
            .args(["bonnie", "-d", target, "--no-save"]);
        assert_names(&Run::of(&mut c).one_error_line(), &[&want]);
        // fio's directory= is a ':'-separated list, so `nfs:/…` is said to miss a slash
        // rather than split into a directory `nfs` and another path.
        let line = fio_error(
            dir.path(),
            &format!("--name=j --ioengine=null --size=1m --directory={target}"),
        );
        if target.contains("://") {
            assert_names(&line, &[&want]);
        } else {
            assert_names(&line, &[target, "'nfs:' must be followed by two slashes"]);
        }
    }
    let odd = dir.path().join("foo:");
    std::fs::create_dir_all(odd.join("bar")).unwrap();
    let mut c = storbench();
    c.current_dir(dir.path()).args([
        "quick",
        "--size",
        "1m",
        "--runtime",
        "100ms",
        "--no-save",
        "foo:/bar",
    ]);
    Run::of(&mut c).ok();
    assert!(common::entries(&odd.join("bar")).is_empty());
}

/// io_uring refused by the kernel (as with kernel.io_uring_disabled=2), simulated for the
/// child only with a seccomp filter: an explicit io_uring job fails with one line, quick
/// falls back to libaio.
#[test]
fn io_uring_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = storbench();
    if !deny_io_uring(&mut c) {
        eprintln!("SKIP: the seccomp filter is written for x86-64 only");
        return;
    }
    c.current_dir(dir.path()).args(words(
        "fio --name=u --ioengine=io_uring --size=1m --no-save",
    ));
    let line = Run::of(&mut c).one_error_line();
    assert_names(&line, &["io_uring"]);
    let mut q = storbench();
    deny_io_uring(&mut q);
    q.current_dir(dir.path()).args([
        "quick",
        "--size",
        "8m",
        "--runtime",
        "200ms",
        "--json",
        "--no-save",
    ]);
    let doc = Run::of(&mut q).json();
    assert_eq!(doc["tests"].as_array().map(Vec::len), Some(8));
    assert!(common::entries(dir.path()).is_empty());
}

/// direct=1 where the file system refuses O_DIRECT (ramfs): one line saying so.
#[test]
fn direct_io_refused_by_the_file_system() {
    if !root_or_skip("mounting a ramfs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ram = Mount::new("ramfs", "e2e-ramfs", &dir.path().join("ram"), "");
    let target = ram.point.to_str().unwrap();
    for rw in ["randread", "randwrite"] {
        let line = fio_error(
            dir.path(),
            &format!(
                "--name=d --ioengine=psync --direct=1 --size=1m --rw={rw} --directory={target}"
            ),
        );
        assert_names(&line, &["O_DIRECT", "--direct=0"]);
    }
}

/// clap's errors are one line that names what is wrong: a missing argument by name and the
/// subcommand it is missing for, a bad value with the values allowed.
#[test]
fn clap_errors_name_the_missing_argument() {
    let error = |line: &str| {
        let run = Run::of(storbench().args(words(line)));
        assert_eq!(run.code, Some(2), "{run:?}");
        run.one_error_line()
    };
    for (line, needles) in [
        (
            "compare",
            &[
                "missing argument <ID|LABEL>...",
                "for compare",
                "storbench compare --help",
            ][..],
        ),
        ("import", &["missing argument <FILE>...", "for import"]),
        (
            "report 1 3",
            &["missing argument --output <FILE>", "for report"],
        ),
        (
            "report",
            &["missing arguments --output <FILE>, <ID|LABEL>..."],
        ),
        ("iscsi discover", &["<HOST[:PORT]>", "for iscsi discover"]),
        ("iscsi", &["requires a subcommand", "discover"]),
        (
            "compare 1 2 --format x",
            &["'x'", "possible values: text, markdown"],
        ),
        ("compare --bogus 1", &["'--bogus'", "tip:"]),
    ] {
        assert_names(&error(line), needles);
    }
}

/// Errors quote storbench's own help text as written (its examples hold no secret), while
/// what the user typed keeps its secrets masked.
#[test]
fn help_examples_in_errors_read_as_written_and_user_secrets_stay_masked() {
    let error = |args: &[&str]| Run::of(storbench().args(args)).one_error_line();
    let form = "snmp://[community@]host[:port]";
    let line = error(&["quick", "--server-stats", "bogus"]);
    assert_names(&line, &["<snmp://[COMMUNITY@]HOST[:PORT]>", form]);
    assert_names(
        &error(&["fio", "--server-stats", "bogus", "--name=a"]),
        &[form],
    );
    for (args, masked) in [
        (
            &["quick", "--server-stats", "snmp://hunter2@h:xx"][..],
            "'snmp://***@h:xx'",
        ),
        (
            &["quick", "--size", "iscsi://u%hunter2@h"],
            "'iscsi://u%***@h'",
        ),
        (
            &["quick", "--size=iscsi://u%hunter2@h"],
            "'iscsi://u%***@h'",
        ),
    ] {
        let line = error(args);
        assert_names(&line, &[masked]);
        assert!(!line.contains("hunter2"), "{line}");
    }
}

/// Blank labels and tags are refused wherever they are accepted (clap's flags and fio's
/// own), before anything runs.
#[test]
fn blank_labels_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for line in [
        "quick . --size 1m --runtime 100ms --label",
        "history --label",
        "import x.json --label",
        "quick . --size 1m --runtime 100ms --tag",
    ] {
        for blank in ["", " \t"] {
            let mut c = storbench();
            c.current_dir(dir.path()).args(words(line)).arg(blank);
            let run = Run::of(&mut c);
            assert_eq!(run.code, Some(2), "{line} {blank:?}: {run:?}");
            assert_names(&run.one_error_line(), &["empty or blank"]);
        }
    }
    let line = fio_error(dir.path(), "--name=a --ioengine=null --size=1m --label= ");
    assert_names(&line, &["--label is empty"]);
    assert!(common::entries(dir.path()).is_empty());
}

/// quick measures data: engines that move none (null, the metadata engines), unknown ones
/// and ones for another kind of target are refused, naming the engines allowed; a test file
/// that cannot hold whole 1 MiB blocks is refused, naming the minimum. Nothing is left.
#[test]
fn quick_refuses_engines_without_data_and_sizes_below_a_block() {
    let dir = tempfile::tempdir().unwrap();
    let quick = |args: &str| {
        let mut c = storbench();
        c.current_dir(dir.path())
            .args(words("quick --runtime 200ms --no-save"))
            .args(words(args));
        Run::of(&mut c)
    };
    for engine in [
        "filecreate",
        "filestat",
        "filedelete",
        "null",
        "nosuch",
        "nfs",
    ] {
        let run = quick(&format!(". --size 8m --engine {engine}"));
        assert_eq!(run.code, Some(1), "{run:?}");
        assert_names(
            &run.one_error_line(),
            &[
                &format!("--engine {engine} "),
                "psync",
                "libaio",
                "io_uring",
            ],
        );
    }
    let line = quick("nfs://127.0.0.1/x --engine psync").one_error_line();
    assert_names(&line, &["--engine psync", "nfs:// target", "use: nfs"]);
    for size in ["3k", "4k", "1536k", "0"] {
        let run = quick(&format!(". --size {size}"));
        assert_eq!(run.code, Some(2), "{run:?}");
        assert_names(
            &run.one_error_line(),
            &[&format!("'{size}'"), "at least 1 MiB"],
        );
    }
    assert!(
        common::entries(dir.path()).is_empty(),
        "{:?}",
        common::entries(dir.path())
    );
}

/// fio's log options storbench does not write are refused with the reason and the fix, and
/// nothing is written.
#[test]
fn log_options_storbench_does_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let null = "--name=a --ioengine=null --size=1m --write_bw_log=b";
    for (extra, needles) in [
        ("--log_avg_msec=-5", &["log_avg_msec"][..]),
        ("--log_avg_msec=often", &["log_avg_msec", "often"]),
        (
            "--write_hist_log=h --log_hist_coarseness=7",
            &["log_hist_coarseness=7", "0 to 6"],
        ),
        (
            "--log_avg_msec=100 --log_compression=1m",
            &["log_compression"],
        ),
        (
            "--log_avg_msec=100 --log_store_compressed=1",
            &["log_store_compressed"],
        ),
        (
            "--log_avg_msec=100 --log_unix_epoch=1",
            &["log_unix_epoch=1"],
        ),
        (
            "--log_avg_msec=100 --write_lat_log=l --log_max_value=1",
            &["log_max_value=1", "write_lat_log"],
        ),
    ] {
        let line = fio_error(dir.path(), &format!("{null} {extra}"));
        assert_names(&line, needles);
    }
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(names.is_empty(), "nothing written: {names:?}");
}
