//! Bounded resources and file-system faults (docs/faults.md): inputs that could grow memory
//! without end, panic, fill a disk or follow a planted link are refused in one line, in
//! under a second, with the peak RSS of the process measured by wait4(2).

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::system::{Mount, root_or_skip};
use common::{Run, storbench};

/// A refusal must come this fast and stay this small (the binary alone takes ~6 MiB).
const FAST: Duration = Duration::from_secs(1);
const SMALL_KIB: i64 = 64 << 10;

/// A finished child with its wall time and peak RSS (ru_maxrss of this child alone).
struct Measured {
    run: Run,
    elapsed: Duration,
    max_rss_kib: i64,
}

/// Runs `c` (stdin as given, else closed), killing it after 20 s, and measures it.
fn measured(c: &mut Command) -> Measured {
    use std::io::Read;
    let start = Instant::now();
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("storbench starts");
    let pid = child.id() as libc::pid_t;
    let drain = |mut p: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = p.read_to_end(&mut b);
            b
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let mut status = 0;
    // SAFETY: rusage is plain data filled by wait4 for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waits for our own child only.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        if start.elapsed() > Duration::from_secs(20) {
            // SAFETY: the child is not reaped yet, so the PID is still ours.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let elapsed = start.elapsed();
    std::mem::forget(child);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let run = Run {
        code,
        stdout: String::from_utf8_lossy(&out.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
    };
    Measured {
        run,
        elapsed,
        max_rss_kib: usage.ru_maxrss,
    }
}

/// Asserts a quick, small, one-line refusal naming every needle; returns the line.
fn refused(m: &Measured, needles: &[&str]) -> String {
    let line = m.run.one_error_line();
    assert!(line.starts_with("storbench: "), "{line}");
    for n in needles {
        assert!(line.contains(n), "{n:?} missing from: {line}");
    }
    assert!(m.elapsed < FAST, "took {:?}: {line}", m.elapsed);
    assert!(
        m.max_rss_kib < SMALL_KIB,
        "peak RSS {} KiB: {line}",
        m.max_rss_kib
    );
    line
}

fn fio_in(dir: &Path, args: &[&str]) -> Command {
    let mut c = storbench();
    c.current_dir(dir)
        .arg("fio")
        .args(args)
        .arg("--no-save")
        .stdin(Stdio::null());
    c
}

fn mem_total() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = text
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    kib * 1024
}

#[test]
fn buffers_beyond_memory_are_refused_before_lay_out() {
    let dir = tempfile::tempdir().unwrap();
    // Twice the machine's memory in 1 GiB buffers, whatever the machine.
    let numjobs = (2 * mem_total()).div_ceil(1 << 30).max(64).to_string();
    let numjobs = format!("--numjobs={numjobs}");
    let m = measured(&mut fio_in(
        dir.path(),
        &["--name=big", "--size=1g", "--bs=1G", &numjobs],
    ));
    refused(
        &m,
        &[
            "not enough memory",
            "iodepth 1 x bs 1.0 GiB",
            "is available",
            "numjobs",
        ],
    );
    assert!(common::entries(dir.path()).is_empty(), "nothing laid out");
    // Thousands of clones take their statistics' memory even with tiny buffers.
    let m = measured(&mut fio_in(
        dir.path(),
        &[
            "--name=many",
            "--ioengine=null",
            "--size=1m",
            "--numjobs=100000",
        ],
    ));
    refused(&m, &["not enough memory", "100000 clone(s)"]);
}

/// A pids cgroup of our own caps the threads the run may start: the run fails in one line
/// without a panic, and the threads it started are joined.
#[test]
fn a_worker_thread_that_cannot_start_is_an_error() {
    if !root_or_skip("a pids cgroup") {
        return;
    }
    let cg =
        Path::new("/sys/fs/cgroup/pids").join(format!("storbench-test-{}", std::process::id()));
    if std::fs::create_dir(&cg).is_err() {
        eprintln!("SKIP: cannot make a pids cgroup under /sys/fs/cgroup/pids");
        return;
    }
    struct Rmdir<'a>(&'a Path);
    impl Drop for Rmdir<'_> {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(self.0);
        }
    }
    let _guard = Rmdir(&cg);
    std::fs::write(cg.join("pids.max"), "40").unwrap();
    let procs = cg.join("cgroup.procs");
    let dir = tempfile::tempdir().unwrap();
    let mut c = fio_in(
        dir.path(),
        &["--name=t", "--ioengine=null", "--size=1m", "--numjobs=200"],
    );
    // SAFETY: only writes a file between fork and exec.
    unsafe {
        c.pre_exec(move || std::fs::write(&procs, std::process::id().to_string()));
    }
    let m = measured(&mut c);
    let line = refused(
        &m,
        &["cannot start worker thread", "of 200", "lower numjobs"],
    );
    assert_eq!(m.run.code, Some(1), "{line}");
}

#[test]
fn job_files_and_imports_only_from_bounded_regular_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for dev in ["/dev/zero", "/dev/urandom"] {
        let m = measured(&mut fio_in(d, &[dev]));
        refused(&m, &[dev, "not a regular file"]);
    }
    std::fs::write(d.join("inc.fio"), "[a]\ninclude /dev/zero\n").unwrap();
    refused(
        &measured(&mut fio_in(d, &["inc.fio"])),
        &["inc.fio:2", "not a regular file"],
    );
    let mut c = fio_in(d, &["-"]);
    c.stdin(std::fs::File::open("/dev/zero").unwrap());
    refused(
        &measured(&mut c),
        &["larger than 1024 KiB, the limit for job files"],
    );
    std::fs::write(d.join("huge.fio"), vec![b'#'; (1 << 20) + 1]).unwrap();
    refused(
        &measured(&mut fio_in(d, &["huge.fio"])),
        &["huge.fio", "1024 KiB"],
    );

    let import = |file: &str| {
        let mut c = storbench();
        c.current_dir(d)
            .args(["import", file, "--no-save"])
            .stdin(Stdio::null());
        measured(&mut c)
    };
    refused(&import("/dev/zero"), &["/dev/zero", "not a regular file"]);
    let big = std::fs::File::create(d.join("big.bin")).unwrap();
    big.set_len(512 << 20).unwrap();
    refused(&import("big.bin"), &["big.bin", "larger than 64 MiB"]);
}

#[test]
fn fio_lay_out_beyond_free_space_is_refused() {
    if !root_or_skip("mounting a tmpfs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = Mount::new("tmpfs", "tmpfs", &dir.path().join("mnt"), "size=64m");
    let m = &mnt.point;
    let r = measured(&mut fio_in(m, &["--name=a", "--size=1P", "--rw=write"]));
    refused(
        &r,
        &[
            "a: not enough space in .",
            "1.0 PiB",
            "64.0 MiB is free",
            "size=",
        ],
    );
    let r = measured(&mut fio_in(
        m,
        &["--name=a", "--size=48m", "--numjobs=2", "--rw=read"],
    ));
    refused(&r, &["96.0 MiB more"]);
    assert!(common::entries(m).is_empty(), "{:?}", common::entries(m));
    // What an existing file already holds is not asked for again.
    std::fs::write(m.join("a.0.0"), vec![1u8; 40 << 20]).unwrap();
    let r = measured(&mut fio_in(
        m,
        &[
            "--name=a",
            "--size=48m",
            "--rw=read",
            "--output-format=terse",
        ],
    ));
    assert!(r.run.success(), "{}", r.run.stderr);
    assert_eq!(std::fs::metadata(m.join("a.0.0")).unwrap().len(), 48 << 20);
}

#[test]
fn a_planted_symlink_at_a_generated_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(outside.path(), b"not yours").unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::os::unix::fs::symlink(outside.path(), work.join("a.0.0")).unwrap();
    for rw in ["write", "read"] {
        let r = measured(&mut fio_in(
            dir.path(),
            &[
                "--name=a",
                "--directory=work",
                "--size=1m",
                &format!("--rw={rw}"),
            ],
        ));
        refused(&r, &["work/a.0.0 is a symbolic link", "filename="]);
        assert_eq!(std::fs::read(outside.path()).unwrap(), b"not yours");
    }
}

/// A quick run killed with SIGKILL cannot remove its test file: the next run in the same
/// directory says so, and `storbench clean` removes it, and only it.
#[test]
fn a_killed_quick_run_is_reported_and_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut child = storbench()
        .current_dir(d)
        .args([
            "quick",
            ".",
            "--size=64m",
            "--runtime=5s",
            "--buffered",
            "--no-save",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let left = d.join(format!("storbench-quick.{}.tmp", child.id()));
    let end = Instant::now() + Duration::from_secs(20);
    while !left.exists() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(left.exists(), "the killed run's file is there");
    // Not ours to remove: another name, and the file of a process that is alive.
    std::fs::write(d.join("keep.txt"), "x").unwrap();
    let live = d.join(format!("storbench-quick.{}.tmp", std::process::id()));
    std::fs::write(&live, "x").unwrap();

    let clean = |yes: bool| {
        let mut c = storbench();
        c.current_dir(d).args(["clean", "."]).stdin(Stdio::null());
        if yes {
            c.arg("--yes");
        }
        Run::of(&mut c)
    };
    let line = clean(false).one_error_line();
    assert!(line.contains("not a terminal; pass --yes"), "{line}");
    assert!(left.exists());

    let next = Run::of(storbench().current_dir(d).args([
        "quick",
        ".",
        "--size=1m",
        "--runtime=100ms",
        "--buffered",
        "--no-save",
    ]));
    next.ok();
    let name = left.file_name().unwrap().to_str().unwrap();
    assert!(
        next.stderr
            .contains("left by storbench runs that were killed")
            && next.stderr.contains(name),
        "{}",
        next.stderr
    );

    let r = clean(true);
    r.ok();
    assert!(
        r.stderr.contains(&format!("removed ./{name}")),
        "{}",
        r.stderr
    );
    assert!(!left.exists());
    assert!(live.exists() && d.join("keep.txt").exists());
}

/// A bonnie run killed with SIGKILL leaves its `Bonnie.PID` tree beside its marker
/// `.storbench-bonnie.PID` (PID and start time). The next bonnie run there names it, and
/// `storbench clean` removes it, and nothing else: not the tree of a run that is alive, not
/// a `Bonnie.PID` without a marker (bonnie++ uses that name too), not what a link in the
/// tree or in a tree's place points to.
#[test]
fn a_killed_bonnie_runs_tree_is_reported_and_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let outside = tempfile::tempdir().unwrap();
    let precious = outside.path().join("precious");
    std::fs::write(&precious, "not storbench's").unwrap();
    let bonnie = || {
        storbench()
            .args([
                "--no-save",
                "bonnie",
                "-q",
                "-s",
                "0",
                "-n",
                "256:0:0:4",
                "-d",
            ])
            .arg(d)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let busy = |pid: u32| {
        let tree = d.join(format!("Bonnie.{pid}"));
        let end = Instant::now() + Duration::from_secs(30);
        while std::fs::read_dir(&tree).map_or(true, |mut e| e.next().is_none()) {
            assert!(Instant::now() < end, "bonnie never made {}", tree.display());
            std::thread::sleep(Duration::from_millis(10));
        }
        tree
    };
    let mut killed = bonnie();
    let killed_tree = busy(killed.id());
    killed.kill().unwrap();
    killed.wait().unwrap();
    let marker = d.join(format!(".storbench-bonnie.{}", killed.id()));
    assert!(
        killed_tree.is_dir() && marker.is_file(),
        "nothing left to clean"
    );
    std::os::unix::fs::symlink(outside.path(), killed_tree.join("escape")).unwrap();
    // Not ours: a tree without a marker, and a marker whose Bonnie.PID is a link.
    let foreign = d.join("Bonnie.4000000");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("f"), "x").unwrap();
    std::fs::write(
        d.join(".storbench-bonnie.4000001"),
        "storbench bonnie pid 4000001 start 1\n",
    )
    .unwrap();
    let planted = d.join("Bonnie.4000001");
    std::os::unix::fs::symlink(outside.path(), &planted).unwrap();

    let live = bonnie();
    let live_pid = live.id();
    let live_tree = busy(live_pid);
    let live = common::system::ChildGuard(Some(live));
    let r = Run::of(storbench().args(["clean", "--yes"]).arg(d));
    r.ok();
    let name = killed_tree.file_name().unwrap().to_str().unwrap();
    assert!(r.stderr.contains(name), "{}", r.stderr);
    assert!(!killed_tree.exists() && !marker.exists(), "{}", r.stderr);
    assert!(
        live_tree.is_dir(),
        "a live run's tree was touched: {}",
        r.stderr
    );
    assert!(d.join(format!(".storbench-bonnie.{live_pid}")).is_file());
    assert!(foreign.join("f").is_file(), "{}", r.stderr);
    assert!(
        planted.symlink_metadata().is_ok() && precious.is_file(),
        "{}",
        r.stderr
    );
    live.signal(libc::SIGKILL);
    let warned = live.wait_output(Duration::from_secs(10)).stderr;
    assert!(
        warned.contains("left by storbench runs that were killed") && warned.contains(name),
        "the next run did not name the killed run's tree:\n{warned}"
    );
}

/// A results database on a full file system: the save fails with the cause named once (the
/// error chain repeated SQLite's message three times in one line).
#[test]
fn a_full_disk_at_save_is_named_once() {
    if !root_or_skip("mounting a tmpfs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = Mount::new("tmpfs", "tmpfs", &dir.path().join("mnt"), "size=4m");
    let db = mnt.point.join("r.db");
    let fio_saving = || {
        let mut c = storbench();
        c.env("STORBENCH_DB", &db)
            .args(["fio", "--name=a", "--ioengine=null", "--size=1M"])
            .arg("--output-format=terse")
            .stdin(Stdio::null());
        Run::of(&mut c)
    };
    let first = fio_saving();
    assert!(first.success(), "{}", first.stderr);
    fill_leaving(&mnt.point.join("fill"), 40 << 10);
    let full = fio_saving();
    assert!(!full.success(), "{}", full.stderr);
    let line = full.one_error_line();
    assert!(line.starts_with("storbench: "), "{line}");
    assert_eq!(
        line.matches("database or disk is full").count(),
        1,
        "{line}"
    );
}

/// Writes `file` until the file system is full, then gives `room` bytes back.
fn fill_leaving(file: &Path, room: u64) {
    use std::io::Write;
    let mut f = std::fs::File::create(file).unwrap();
    let block = vec![0u8; 4096];
    let mut written = 0u64;
    while let Ok(n) = f.write(&block) {
        if n == 0 {
            break;
        }
        written += n as u64;
    }
    f.set_len(written.saturating_sub(room)).unwrap();
}
