//! fio's engines that do no IO on a file, `cpuio` and `exec`, against the installed fio
//! 3.33: the same lines printed as the job starts, the same sections of the normal output
//! left out (no job line, no read section, no group line for a job of zero bytes), the
//! same JSON fields, about the same number of IOs, the CPU a `cpuload=50` job uses (both
//! tools' process trees measured with wait4's rusage in one run, rounds interleaved), and
//! for exec the same output files with the same contents. Skipped with a reason when fio
//! 3.33 is missing.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::system::{ChildGuard, wait_for};
use common::{Run, fio, fio_available, sb_fio, storbench, words};
use serde_json::Value;

/// The JSON of the first job of a run of either tool.
fn first_job(doc: &Value) -> &Value {
    &doc["jobs"][0]
}

/// `a / b` is within `lo..=hi`.
fn ratio_within(a: f64, b: f64, lo: f64, hi: f64) -> bool {
    b > 0.0 && (lo..=hi).contains(&(a / b))
}

#[test]
fn cpuio_prints_and_counts_like_fio() {
    if !fio_available() {
        return;
    }
    let job = "--name=burn --ioengine=cpuio --cpuload=50 --cpuchunks=20000 --runtime=1 --rw=write";
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let theirs = fio(fd.path(), &words(job));
    let ours = sb_fio(sd.path(), &words(job));
    let line = "burn (noop): ioengine=cpuio, cpuload=50, cpucycle=20000";
    for (who, out) in [("fio", &theirs.stdout), ("storbench", &ours.stdout)] {
        assert!(out.lines().any(|l| l == line), "{who}: {out}");
        assert!(
            !out.contains("burn: (g=0)"),
            "{who} printed a job line: {out}"
        );
        assert!(
            !out.contains(" read: ") && !out.contains("READ:"),
            "{who}: {out}"
        );
        assert!(out.contains("  lat (msec)   : "), "{who}: {out}");
        assert!(
            out.contains("Run status group 0 (all jobs):"),
            "{who}: {out}"
        );
    }
    assert!(ours.success() && theirs.success(), "{}", ours.stderr);
    // No file is made or left for a job without files.
    assert_eq!(common::entries(sd.path()), Vec::<String>::new());
    assert_eq!(common::entries(fd.path()), Vec::<String>::new());

    let json = format!("{job} --output-format=json");
    let theirs = fio(fd.path(), &words(&json)).fio_json();
    let mut ours = sb_fio(sd.path(), &words(&json)).json();
    // fio's keys, nesting and types (storbench's extras sit under its own last key).
    ours.as_object_mut().unwrap().remove("storbench");
    let diff = common::json::shape_diff(&theirs, &ours);
    assert!(diff.is_empty(), "{}", diff.join("\n"));
    let (t, o) = (first_job(&theirs), first_job(&ours));
    for key in ["io_bytes", "bw", "runtime", "bw_samples"] {
        assert_eq!(o["read"][key], t["read"][key], "read.{key}");
        assert_eq!(o["read"][key].as_f64(), Some(0.0), "read.{key}");
    }
    assert_eq!(o["read"]["iops"].as_f64(), Some(0.0));
    // Every IO is a read of zero bytes, whatever rw says, as in fio.
    assert_eq!(o["write"]["total_ios"], 0);
    assert_eq!(t["write"]["total_ios"], 0);
    let ios = |j: &Value| j["read"]["total_ios"].as_f64().unwrap();
    // 20 ms busy and 20 ms idle over 1 s: about 25 IOs each, less on a loaded machine.
    assert!(
        ratio_within(ios(o), ios(t), 0.6, 1.5),
        "storbench {} IOs, fio {}",
        ios(o),
        ios(t)
    );
    // Each "IO" is one 20 ms busy chunk. fio times it with its own clock source, which
    // reads a few hundred ns short of the chunk it spun (19,999,680 ns seen), so 1 % slack.
    let clat_min = |j: &Value| j["read"]["clat_ns"]["min"].as_u64().unwrap();
    assert!(
        clat_min(o) >= 19_800_000 && clat_min(t) >= 19_800_000,
        "shortest busy chunk: storbench {} ns, fio {} ns",
        clat_min(o),
        clat_min(t)
    );
}

/// CPU seconds (user + system) of `cmd`'s whole process tree, from wait4's rusage.
// The child is reaped by wait4 itself, which std's `wait` cannot give the rusage of.
#[allow(clippy::zombie_processes)]
fn tree_cpu(cmd: &mut Command) -> f64 {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: wait4 on our own child, filling a plain C struct.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        let pid = libc::wait4(child.id() as i32, &mut status, 0, &mut ru);
        assert_eq!(pid, child.id() as i32);
        ru
    };
    assert_eq!(status, 0, "{cmd:?} failed");
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// CPU seconds of one tool running a 2 s cpuio job at `load` percent.
fn job_cpu(fio_tool: bool, dir: &Path, load: u32) -> f64 {
    let job =
        format!("--name=half --ioengine=cpuio --cpuload={load} --runtime=2 --output-format=terse");
    let mut cmd = if fio_tool {
        Command::new("fio")
    } else {
        let mut c = storbench();
        c.arg("fio").arg("--no-save");
        c
    };
    tree_cpu(cmd.current_dir(dir).args(words(&job)))
}

/// fio's duty cycle: a cpuload=50 job keeps half a CPU busy. Each tool's CPU for the
/// same 2 s job at 50 % less its CPU at 1 % (what the tool costs besides the busy
/// periods: fio's main process, storbench's sampler) is the duty cycle's; rounds
/// interleaved, storbench's over fio's must be near 1. Both spin on the wall clock, so a
/// loaded machine lowers both alike.
#[test]
fn cpuload_uses_the_cpu_fio_uses() {
    if !fio_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (mut f, mut s, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        let ff = job_cpu(true, dir.path(), 50) - job_cpu(true, dir.path(), 1);
        let ss = job_cpu(false, dir.path(), 50) - job_cpu(false, dir.path(), 1);
        ratios.push(ss / ff);
        f.push(ff);
        s.push(ss);
    }
    let (f, s, r) = (median(f), median(s), median(ratios.clone()));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!(
        "cpuload=50 over 2 s, less cpuload=1: storbench {s:.3} CPU s, fio {f:.3} CPU s, \
         round ratios {ratios:.3?}, median {r:.3} (loadavg {})",
        load.trim()
    );
    assert!((0.75..=1.33).contains(&r), "storbench/fio {r:.3}");
    // At most the half CPU asked for (1 CPU s in 2 s), and more than idle.
    assert!(s < 1.15 && s > 0.2, "storbench used {s:.3} CPU s in 2 s");
}

/// `exit_on_io_done=1`: the cpuio job ends when the IO job beside it does, in both tools.
#[test]
fn exit_on_io_done_ends_with_the_io_jobs() {
    if !fio_available() {
        return;
    }
    let file = "[burn]\nioengine=cpuio\ncpuload=30\ncpuchunks=10000\nexit_on_io_done=1\n\n\
                [io]\nioengine=psync\nrw=write\nbs=4k\nsize=2m\nrate=2m\nunlink=1\n";
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for d in [&fd, &sd] {
        std::fs::write(d.path().join("j.fio"), file).unwrap();
    }
    let args = ["j.fio", "--output-format=json"];
    let theirs = fio(fd.path(), &args).fio_json();
    let ours = sb_fio(sd.path(), &args).json();
    for (who, doc) in [("fio", &theirs), ("storbench", &ours)] {
        let rt = |i: usize| doc["jobs"][i]["job_runtime"].as_i64().unwrap();
        let burned = doc["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
        // 2 MiB at 2 MiB/s: about a second, and the burner ends with it.
        assert!(
            (rt(0) - rt(1)).abs() < 400,
            "{who}: {} vs {} ms",
            rt(0),
            rt(1)
        );
        assert!(
            rt(0) < 3000 && burned > 10,
            "{who}: {} ms, {burned} IOs",
            rt(0)
        );
    }
}

/// A script named after `tag` (so `pgrep -f` finds it) that says what it was given, and
/// says `term` when asked to end.
fn script(dir: &Path, tag: &str) -> String {
    let body = "#!/bin/sh\ntrap 'echo term; exit 0' TERM\necho \"args $*\"\n\
                echo oops >&2\nwhile :; do sleep 0.05; done\n";
    let name = format!("{tag}.sh");
    let path = dir.join(&name);
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("./{name}")
}

fn running(tag: &str) -> bool {
    Command::new("pgrep")
        .args(["-f", tag])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn exec_runs_and_stops_the_program_like_fio() {
    if !fio_available() {
        return;
    }
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let tag = format!("sbexec{}", std::process::id());
    let prog = script(fd.path(), &tag);
    script(sd.path(), &tag);
    let job = format!("--name=ex --ioengine=exec --program={prog} --runtime=1");
    let mut args = words(&job);
    args.push("--arguments=%n %r");
    let theirs = fio(fd.path(), &args);
    let ours = sb_fio(sd.path(), &args);
    assert_eq!(ours.code, theirs.code, "{}", ours.stderr);
    assert_eq!(ours.code, Some(0));
    let lines = [
        format!("ex : program={prog}, arguments=%n %r"),
        format!("ex : Saving output of {prog} ex 1 : stdout=ex.stdout stderr=ex.stderr"),
    ];
    for (who, out) in [("fio", &theirs.stdout), ("storbench", &ours.stdout)] {
        for l in &lines {
            assert!(out.lines().any(|o| o == l), "{who} lacks {l:?}: {out}");
        }
        assert!(!out.contains("READ:"), "{who}: {out}");
    }
    for name in ["ex.stdout", "ex.stderr"] {
        let read = |d: &Path| std::fs::read_to_string(d.join(name)).unwrap();
        assert_eq!(read(sd.path()), read(fd.path()), "{name}");
    }
    assert_eq!(
        std::fs::read_to_string(sd.path().join("ex.stdout")).unwrap(),
        "args ex 1\nterm\n"
    );
    assert!(
        wait_for(Duration::from_secs(3), || !running(&tag)),
        "left running"
    );
}

/// Stopped by a signal before its runtime, storbench ends the program and what it started.
#[test]
fn exec_program_ends_with_a_stopped_run() {
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("sbexecstop{}", std::process::id());
    let prog = script(dir.path(), &tag);
    let mut cmd = storbench();
    cmd.current_dir(dir.path())
        .args([
            "fio",
            "--name=ex",
            "--ioengine=exec",
            "--runtime=60",
            "--no-save",
        ])
        .arg(format!("--program={prog}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = ChildGuard(Some(cmd.spawn().unwrap()));
    // Signalled once the program has its trap set and has said so.
    let said = || std::fs::read_to_string(dir.path().join("ex.stdout")).unwrap_or_default();
    assert!(
        wait_for(Duration::from_secs(10), || said().starts_with("args")),
        "never started"
    );
    assert!(running(&tag));
    child.signal(libc::SIGTERM);
    let run = child.wait_output(Duration::from_secs(20));
    common::assert_no_panic(&run.stderr);
    assert!(
        wait_for(Duration::from_secs(3), || !running(&tag)),
        "left running"
    );
    let out = std::fs::read_to_string(dir.path().join("ex.stdout")).unwrap();
    assert_eq!(out, "args \nterm\n");
}

/// Without std_redirect the program writes where storbench does, and no file is made.
/// Without a runtime, the job ends when the program does.
#[test]
fn exec_without_redirect_or_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let run = sb_fio(
        dir.path(),
        &[
            "--name=say",
            "--ioengine=exec",
            "--program=echo",
            "--arguments=hello from %n",
            "--std_redirect=0",
        ],
    );
    let out = run.ok();
    assert!(out.contains("say : Running echo hello from say"), "{out}");
    assert!(out.lines().any(|l| l == "hello from say"), "{out}");
    assert_eq!(common::entries(dir.path()), Vec::<String>::new());
}

#[test]
fn bad_cpuio_and_exec_jobs_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        ("--ioengine=cpuio --runtime=1", "cpuload"),
        ("--ioengine=cpuio --cpuload=0 --runtime=1", "cpuload"),
        ("--ioengine=cpuio --cpuload=101 --runtime=1", "at most 100"),
        (
            "--ioengine=cpuio --cpuload=5 --cpumode=fast --runtime=1",
            "noop, qsort",
        ),
        ("--ioengine=exec --runtime=1", "program="),
        (
            "--ioengine=exec --program=/no/such/prog --runtime=1",
            "/no/such/prog",
        ),
        ("--ioengine=psync --cpuload=5 --size=4k", "cpuio"),
    ];
    for (job, says) in cases {
        let mut args = vec!["--name=bad"];
        args.extend(words(job));
        let run: Run = sb_fio(dir.path(), &args);
        let line = run.one_error_line();
        assert!(line.contains(says), "{job}: {line}");
    }
    assert_eq!(common::entries(dir.path()), Vec::<String>::new());
}
