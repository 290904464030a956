//! fio's per-IO priorities (`cmdprio_percentage`, `cmdprio_class`, `cmdprio`,
//! `cmdprio_bssplit`) against the installed fio 3.33: the same job gives the same share of
//! its IOs each priority in both tools, as fio's JSON reports them (`prios`, one entry per
//! priority with its completion latency), and the kernel receives them (libaio's
//! `aio_reqprio`, seen with strace). The real-time class without the privilege it needs
//! is refused with that reason. Skipped with a reason when fio 3.33 or strace is missing.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::system::have_tool;
use common::{Run, fio_available, storbench, words};

const MIB: usize = 1 << 20;

/// A priority (`prioclass`, `prio`) and its share of the IOs, percent.
type Share = ((u64, u64), f64);

/// Each `(prioclass, prio)` of a direction's `prios` with its share of the IOs (percent),
/// and the IOs they add up to.
fn prio_shares(doc: &serde_json::Value, dir: &str) -> (Vec<Share>, u64) {
    let d = &doc["jobs"][0][dir];
    let prios = d["prios"]
        .as_array()
        .unwrap_or_else(|| panic!("no prios: {d}"));
    let n = |p: &serde_json::Value| p["clat_ns"]["N"].as_u64().unwrap();
    let total: u64 = prios.iter().map(n).sum();
    let shares = prios
        .iter()
        .map(|p| {
            let key = (
                p["prioclass"].as_u64().unwrap(),
                p["prio"].as_u64().unwrap(),
            );
            (key, n(p) as f64 * 100.0 / total as f64)
        })
        .collect();
    (shares, total)
}

/// Runs `job` with fio and storbench over a 16 MiB file and checks that the reads'
/// priorities are `want` ((class, level), percent), each within 6 points in both tools,
/// with every read counted in one of them; with `same_count`, the same reads in both.
fn same_prios(job: &str, want: &[Share], same_count: bool) {
    if !fio_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pf"), vec![1u8; 16 * MIB]).unwrap();
    let args = words(job);
    let theirs = common::fio(dir.path(), &args).fio_json();
    let ours = common::sb_fio(dir.path(), &args).json();
    for (tool, doc) in [("fio", &theirs), ("storbench", &ours)] {
        let (shares, total) = prio_shares(doc, "read");
        assert_eq!(
            total,
            doc["jobs"][0]["read"]["total_ios"].as_u64().unwrap(),
            "{tool}"
        );
        let keys: Vec<_> = shares.iter().map(|(k, _)| *k).collect();
        let want_keys: Vec<_> = want.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, want_keys, "{tool}: {shares:?}");
        for ((_, got), (_, want)) in shares.iter().zip(want) {
            assert!(
                (got - want).abs() < 6.0,
                "{tool}: {shares:?}, want {want:?}"
            );
        }
    }
    if same_count {
        assert_eq!(
            ours["jobs"][0]["read"]["total_ios"],
            theirs["jobs"][0]["read"]["total_ios"]
        );
    }
}

/// fio's examples/cmdprio-percentage.fio shape, in classes a user may take: 30% of the
/// reads at idle level 5, the rest without a priority of their own.
#[test]
fn cmdprio_percentage_gives_that_share_of_the_ios_the_priority_as_fios() {
    for engine in ["libaio", "io_uring"] {
        same_prios(
            &format!(
                "--name=p --filename=pf --size=16m --rw=randread --bs=4k --iodepth=8 \
                 --ioengine={engine} --cmdprio_percentage=30 --cmdprio_class=3 --cmdprio=5 \
                 --output-format=json"
            ),
            &[((0, 0), 70.0), ((3, 5), 30.0)],
            true,
        );
    }
}

/// fio's examples/cmdprio-bssplit.fio advanced format: per block size, shares of the
/// IOs at a class and level of their own, the job's own priority (`prioclass`/`prio`)
/// for the rest.
#[test]
fn cmdprio_bssplit_gives_each_block_size_its_priorities_as_fios() {
    // Half the IOs 4k, all at idle 1; half 64k, a fifth of them at best-effort 4 and the
    // rest at the job's own best-effort 7 (first in fio's list). Without the random map,
    // no block is shortened to a size the split does not name.
    same_prios(
        "--name=p --filename=pf --size=16m --rw=randread --bssplit=4k/50:64k/50 \
         --norandommap --ioengine=libaio --iodepth=4 --prioclass=2 --prio=7 \
         --cmdprio_bssplit=4k/100/3/1:64k/20/2/4 --output-format=json",
        &[((2, 7), 40.0), ((3, 1), 50.0), ((2, 4), 10.0)],
        false,
    );
}

/// The per-IO log's priority column (`log_prio=1`) holds each IO's own priority, else the
/// job's, with eight IOs in flight at once: in both tools every 4k read of this split is
/// at idle 1 and every 64k read at the job's own best-effort 7.
#[test]
fn the_io_log_gives_each_io_its_own_priority_as_fio() {
    if !fio_available() {
        return;
    }
    let args = words(
        "--name=p --filename=pf --size=16m --rw=randread --bssplit=4k/50:64k/50 \
         --norandommap --ioengine=libaio --iodepth=8 --prioclass=2 --prio=7 \
         --cmdprio_bssplit=4k/100/3/1 --write_lat_log=p --log_offset=1 --log_prio=1 \
         --output-format=json",
    );
    for tool in ["fio", "storbench"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("pf"), vec![1u8; 16 * MIB]).unwrap();
        if tool == "fio" {
            common::fio(dir.path(), &args).fio_json();
        } else {
            common::sb_fio(dir.path(), &args).json();
        }
        let log = std::fs::read_to_string(dir.path().join("p_lat.1.log")).unwrap();
        let mut per_size = [0u32; 2];
        for line in log.lines() {
            let cols: Vec<&str> = line.split(", ").collect();
            let (big, want) = match cols.get(3) {
                Some(&"4096") => (0, "0x6001"),
                Some(&"65536") => (1, "0x4007"),
                _ => panic!("{tool}: {line}"),
            };
            assert_eq!(cols.get(5), Some(&want), "{tool}: {line}");
            per_size[big] += 1;
        }
        assert!(per_size.iter().all(|&n| n > 50), "{tool}: {per_size:?}");
    }
}

/// The IOs' priorities reach the kernel: storbench's io_submit calls carry the idle class
/// at level 5 in `aio_reqprio` (with IOCB_FLAG_IOPRIO) for the share asked for.
#[test]
fn libaio_passes_each_ios_priority_to_the_kernel() {
    if !have_tool("strace") {
        eprintln!("SKIP: strace is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pf"), vec![1u8; 4 * MIB]).unwrap();
    let trace = dir.path().join("trace.txt");
    let mut c = Command::new("strace");
    c.current_dir(dir.path())
        .args(["-f", "-qq", "-e", "trace=io_submit", "-o"])
        .arg(&trace)
        .arg(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["fio", "--no-save"])
        .args(words(
            "--name=p --filename=pf --size=4m --rw=randread --bs=4k --ioengine=libaio \
             --iodepth=1 --cmdprio_percentage=40 --cmdprio_class=3 --cmdprio=5 \
             --output-format=json",
        ))
        .env("STORBENCH_DB", "/dev/null/storbench-tests-must-not-save.db");
    let run = Run::of(&mut c);
    if !run.success() && run.stderr.contains("PTRACE") {
        eprintln!("SKIP: strace cannot trace here");
        return;
    }
    assert!(run.success(), "{}", run.stderr);
    let text = std::fs::read_to_string(&trace).unwrap();
    let reads: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("IOCB_CMD_PREAD") && l.contains("aio_nbytes=4096"))
        .collect();
    assert_eq!(reads.len(), 1024, "{}", &text[..text.len().min(2000)]);
    let with = reads
        .iter()
        .filter(|l| {
            l.contains("aio_reqprio=IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 5)")
                && l.contains("IOCB_FLAG_IOPRIO")
        })
        .count();
    assert!((350..470).contains(&with), "{with} of 1024 reads at idle 5");
    let doc = run.json_any();
    let (shares, _) = prio_shares(&doc, "read");
    let idle = shares.iter().find(|(k, _)| *k == (3, 5)).unwrap().1;
    assert!(
        (idle - with as f64 * 100.0 / 1024.0).abs() < 0.01,
        "{shares:?}"
    );
}

/// Without CAP_SYS_ADMIN or CAP_SYS_NICE the real-time class (cmdprio_class's default)
/// is refused before any IO, with the reason and what to give instead; fio 3.33 itself
/// fails every such IO with EPERM.
#[test]
fn the_real_time_class_without_the_privilege_is_refused_with_the_reason() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || Command::new("setpriv").arg("--help").output().is_err() {
        eprintln!("skipped: needs root and setpriv to run as an unprivileged user");
        return;
    }
    let dir = common::open_tempdir();
    // The unprivileged user lays its file out here.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["fio", "--no-save"])
        .args(words(
            "--name=n --ioengine=libaio --rw=randread --bs=4k --size=1m \
             --cmdprio_percentage=20",
        ))
        .env("NO_COLOR", "1")
        .current_dir(dir.path());
    let run = Run::of(&mut c);
    assert!(!run.success());
    common::assert_no_panic(&run.stderr);
    assert!(
        run.stderr.lines().any(|l| l.starts_with("storbench: ")
            && l.contains("the real-time IO class")
            && l.contains("needs CAP_SYS_ADMIN or CAP_SYS_NICE")),
        "{}",
        run.stderr
    );
}

/// What fio refuses is refused in one line: the two ways together, a block size's shares
/// past 100, a class out of range, and the options with an engine that has none.
#[test]
fn bad_cmdprio_values_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, msg) in [
        (
            "--ioengine=libaio --cmdprio_percentage=10 --cmdprio_bssplit=4k/10",
            "mutually exclusive",
        ),
        (
            "--ioengine=libaio --cmdprio_bssplit=4k/60/2/0:4k/60/3/0",
            "more than 100",
        ),
        ("--ioengine=io_uring --cmdprio_class=4", "from 0 to 3"),
        ("--ioengine=libaio --cmdprio_class=0", "class 0 is no class"),
        ("--ioengine=libaio --cmdprio=9", "from 0 to 7"),
        (
            "--ioengine=psync --cmdprio_percentage=10",
            "option of the io_uring and libaio engines",
        ),
    ] {
        let mut c = storbench();
        c.current_dir(dir.path())
            .args(["fio", "--no-save", "--parse-only", "--name=p", "--size=1m"])
            .args(words(extra));
        let line = Run::of(&mut c).one_error_line();
        assert!(line.contains(msg), "{extra}: {line}");
    }
}

/// The lines of fio's normal output about one priority (`clat prio 3/5 (usec): ...` and
/// `clat prio 3/5 (29.80% of IOs) percentiles (usec):`), each as its label (the words
/// before the figures) and the share of the IOs it states, if any.
fn prio_lines(text: &str) -> Vec<(String, Option<f64>)> {
    text.lines()
        .filter(|l| {
            l.trim_start().starts_with("clat prio ") || l.trim_start().starts_with("lat prio ")
        })
        .map(|l| {
            let l = l.trim_start();
            let label: String = l.split(" (").next().unwrap().to_string();
            let share = l
                .split_once(" (")
                .and_then(|(_, rest)| rest.split_once("% of IOs)"))
                .map(|(pct, _)| pct.parse::<f64>().unwrap());
            let unit_form = l.ends_with("):") || l.contains("): min=");
            assert!(unit_form, "not fio's form: {l}");
            (label, share)
        })
        .collect()
}

/// fio's normal output shows each priority's latency apart when at least two priorities
/// have IOs: a `clat prio CLASS/LEVEL` line with min, max, avg and stdev after the job's
/// own latency lines, and a percentile block `clat prio CLASS/LEVEL (N% of IOs)` after the
/// job's; with `lat_percentiles` they are `lat prio`. storbench prints the same lines in
/// the same order, with shares of the IOs within 6 points of fio's.
#[test]
fn the_normal_output_shows_each_prioritys_latency_as_fios() {
    if !fio_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pf"), vec![1u8; 16 * MIB]).unwrap();
    for extra in ["", " --lat_percentiles=1"] {
        let job = format!(
            "--name=p --filename=pf --size=16m --rw=randread --bs=4k --iodepth=8 \
             --ioengine=libaio --cmdprio_percentage=30 --cmdprio_class=3 --cmdprio=5{extra}"
        );
        let args = words(&job);
        let theirs = prio_lines(&common::fio(dir.path(), &args).stdout);
        let ours = prio_lines(&common::sb_fio(dir.path(), &args).stdout);
        let kind = if extra.is_empty() { "clat" } else { "lat" };
        let labels =
            |v: &[(String, Option<f64>)]| v.iter().map(|(l, _)| l.clone()).collect::<Vec<_>>();
        assert_eq!(
            labels(&theirs),
            [0, 1, 0, 1].map(|i| format!("{kind} prio {}", ["0/0", "3/5"][i])),
            "fio: {theirs:?}"
        );
        assert_eq!(labels(&ours), labels(&theirs), "{job}");
        for ((_, a), (_, b)) in theirs.iter().zip(&ours) {
            match (a, b) {
                (None, None) => {}
                (Some(a), Some(b)) => assert!((a - b).abs() < 6.0, "{theirs:?} {ours:?}"),
                _ => panic!("{theirs:?} against {ours:?}"),
            }
        }
    }
    // One priority only (no cmdprio): no such lines, in either tool.
    let plain = words("--name=p --filename=pf --size=4m --rw=randread --bs=4k --ioengine=libaio");
    assert!(prio_lines(&common::fio(dir.path(), &plain).stdout).is_empty());
    assert!(prio_lines(&common::sb_fio(dir.path(), &plain).stdout).is_empty());
}
