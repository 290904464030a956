//! fio's steady state (`ss`, `ss_dur`, `ss_ramp`) against fio 3.33 on the same command
//! lines: a job whose window meets its criterion ends there, one that never does runs its
//! whole runtime, and the JSON `steadystate` section and the normal output's line have
//! fio's shape. Skipped with a reason when fio 3.33 is missing.

mod common;

use common::json::shape_diff;
use common::{fio, fio_available, sb_fio, words};
use serde_json::Value;

/// Runs `line` (JSON output) with fio and storbench at the same time, each in a temp dir.
fn both(line: &str) -> (Value, Value) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut args = vec!["--output-format=json"];
    args.extend(words(line));
    std::thread::scope(|s| {
        let theirs = s.spawn(|| fio(fd.path(), &args));
        let ours = sb_fio(sd.path(), &args).json();
        (theirs.join().unwrap().fio_json(), ours)
    })
}

/// A rate-capped job is steady within its first window: both tools end it there, long
/// before its runtime, and report the window as fio does.
#[test]
fn a_steady_job_ends_when_its_window_is_steady() {
    if !fio_available() {
        return;
    }
    let line = "--name=s --ioengine=null --size=1g --bs=4k --rw=read --time_based \
                --runtime=30 --rate_iops=2000 --ss_dur=2 --ss=iops:20%";
    let (f, s) = both(line);
    let (fj, sj) = (&f["jobs"][0], &s["jobs"][0]);
    assert_eq!(
        shape_diff(&fj["steadystate"], &sj["steadystate"]),
        Vec::<String>::new()
    );
    for (tool, j) in [("fio", fj), ("storbench", sj)] {
        let ss = &j["steadystate"];
        assert_eq!(ss["attained"], 1, "{tool}: {ss}");
        assert_eq!(ss["ss"], "iops:20.000000%", "{tool}");
        assert_eq!(ss["duration"], 2, "{tool}");
        let runtime = j["read"]["runtime"].as_u64().unwrap();
        assert!(runtime < 6000, "{tool} ran {runtime} ms");
        let mean = ss["data"]["iops_mean"].as_u64().unwrap();
        assert!((1700..=2100).contains(&mean), "{tool}: {ss}");
    }
}

/// A criterion that cannot be met (a slope under 0%) leaves the job to its runtime, and
/// under group_reporting the group has one window.
#[test]
fn an_unsteady_job_runs_its_whole_runtime() {
    if !fio_available() {
        return;
    }
    let line = "--name=u --ioengine=null --size=1g --bs=4k --rw=randread --time_based \
                --runtime=3 --rate_iops=1000 --ss_dur=2 --ss=bw_slope:0% --numjobs=2 \
                --group_reporting";
    let (f, s) = both(line);
    let (fj, sj) = (&f["jobs"][0], &s["jobs"][0]);
    assert_eq!(
        shape_diff(&fj["steadystate"], &sj["steadystate"]),
        Vec::<String>::new()
    );
    for (tool, j) in [("fio", fj), ("storbench", sj)] {
        let ss = &j["steadystate"];
        assert_eq!(ss["attained"], 0, "{tool}: {ss}");
        let runtime = j["read"]["runtime"].as_u64().unwrap();
        assert!(runtime >= 2900, "{tool} ran {runtime} ms");
        // Two clones at 1000 IOPS each, over the 2 s window. Checked over the window, not
        // per second: a rate limit catches up after a stall, so on a loaded machine one
        // second can be well above 2000 (fio 3.33 itself once read 2756 then 2016).
        let iops = ss["data"]["iops"].as_array().unwrap();
        let window: u64 = iops.iter().map(|v| v.as_u64().unwrap()).sum();
        assert!(
            iops.len() == 2 && (3200..=5200).contains(&window),
            "{tool}: {ss}"
        );
    }
}

/// The normal output's line, as fio 3.33 prints it.
#[test]
fn the_normal_output_has_fios_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = sb_fio(
        dir.path(),
        &words(
            "--name=s --ioengine=null --size=1g --bs=4k --rw=read --time_based --runtime=30 \
             --rate_iops=2000 --ss_dur=2 --ss=iops:20%",
        ),
    );
    let line = out
        .ok()
        .lines()
        .find(|l| l.starts_with("  steadystate  : "))
        .unwrap_or_else(|| panic!("no steadystate line:\n{}", out.stdout));
    let re = regex_lite(line);
    assert!(re, "{line}");
}

/// `  steadystate  : attained=yes, bw=7984KiB/s (8176kB/s), iops=1996, iops mean dev=0.250%`
fn regex_lite(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("  steadystate  : attained=yes, bw=") else {
        return false;
    };
    let Some((bw, rest)) = rest.split_once(" (") else {
        return false;
    };
    let Some((_, rest)) = rest.split_once("), iops=") else {
        return false;
    };
    let Some((iops, rest)) = rest.split_once(", iops mean dev=") else {
        return false;
    };
    bw.ends_with("iB/s")
        && iops
            .parse::<u64>()
            .is_ok_and(|n| (1700..=2100).contains(&n))
        && rest.ends_with('%')
        && rest.trim_end_matches('%').parse::<f64>().is_ok()
}

/// A criterion without a limit, or an unknown one: one line, nothing run.
#[test]
fn bad_criteria_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (ss, says) in [("iops", "threshold"), ("lat:1%", "not one of")] {
        let arg = format!("--ss={ss}");
        let out = sb_fio(
            dir.path(),
            &[
                "--name=b",
                "--ioengine=null",
                "--size=1m",
                "--ss_dur=2",
                &arg,
            ],
        );
        let line = out.one_error_line();
        assert!(line.contains(says), "{ss}: {line}");
    }
}
