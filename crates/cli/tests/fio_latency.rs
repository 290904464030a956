//! fio's latency profiling (`latency_target`, `latency_window`, `latency_percentile`) and
//! `max_latency` against fio 3.33 on the same command lines: the queue-depth search ends
//! at the same depth with the same JSON fields, and an IO over the limit ends the job with
//! fio's ETIMEDOUT. Skipped with a reason when fio 3.33 is missing.

mod common;

use common::{fio, fio_available, sb_fio, words};
use serde_json::Value;

/// Runs `line` (JSON output) with fio and storbench at the same time, each in a temp dir;
/// returns each tool's first job and storbench's run.
fn both(line: &str) -> (Value, Value, common::Run) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut args = vec!["--output-format=json"];
    args.extend(words(line));
    std::thread::scope(|s| {
        let theirs = s.spawn(|| fio(fd.path(), &args));
        let ours = sb_fio(sd.path(), &args);
        let theirs = theirs.join().unwrap();
        let doc = |text: &str| -> Value {
            let start = text
                .find("{\n")
                .unwrap_or_else(|| panic!("no JSON in {text}"));
            serde_json::from_str(&text[start..]).unwrap()
        };
        let (f, s) = (doc(&theirs.stdout), doc(&ours.stdout));
        (f["jobs"][0].clone(), s["jobs"][0].clone(), ours)
    })
}

/// A target every IO meets: the depth doubles each window up to iodepth, one more
/// window at that depth is measured, and the job ends, in both tools.
#[test]
fn the_depth_search_ends_where_fios_does() {
    if !fio_available() {
        return;
    }
    let line = "--name=l --ioengine=libaio --iodepth=8 --size=16m --bs=4k --rw=randread \
                --latency_target=5s --latency_window=300ms --runtime=30 --time_based";
    let (f, s, _) = both(line);
    for key in [
        "latency_depth",
        "latency_target",
        "latency_window",
        "latency_percentile",
    ] {
        assert_eq!(f[key], s[key], "{key}");
    }
    assert_eq!(s["latency_depth"], 8);
    assert_eq!(s["latency_target"], 5_000_000_000u64);
    assert_eq!(s["latency_window"], 300_000);
    for (tool, j) in [("fio", &f), ("storbench", &s)] {
        // Only the final window at the found depth is measured.
        let runtime = j["job_runtime"].as_u64().unwrap();
        assert!((250..1500).contains(&runtime), "{tool}: {runtime} ms");
    }
}

/// An IO slower than max_latency, or than a target that every IO must meet at depth 1,
/// ends the job with ETIMEDOUT (110) and fio's message.
#[test]
fn a_too_slow_io_ends_the_job_like_fio() {
    if !fio_available() {
        return;
    }
    for opt in ["--max_latency=1", "--latency_target=1"] {
        let line =
            format!("--name=m --ioengine=psync --size=4m --bs=4k --rw=randread --runtime=5 {opt}");
        let (f, s, run) = both(&line);
        assert_eq!(
            (f["error"].as_i64(), s["error"].as_i64()),
            (Some(110), Some(110)),
            "{opt}"
        );
        assert!(!run.success(), "{opt}: exit code {:?}", run.code);
        assert!(
            run.stderr.contains("exceeds specified max (1000 nsec)"),
            "{opt}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_percentile_over_100_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = sb_fio(
        dir.path(),
        &words("--name=b --ioengine=null --size=1m --latency_target=1ms --latency_percentile=101"),
    );
    assert!(
        out.one_error_line().contains("percentage"),
        "{}",
        out.stderr
    );
}

/// `--cmdhelp=NAME`'s type line is fio's for the latency options, so a caller that reads
/// it (to learn whether a value is a list, or takes a time suffix) sees fio's answer.
#[test]
fn cmdhelp_type_lines_are_fios() {
    if !fio_available() {
        return;
    }
    let type_line = |text: &str| -> String {
        text.lines()
            .find_map(|l| l.trim_start().strip_prefix("type: "))
            .unwrap_or_else(|| panic!("no type line in {text}"))
            .to_string()
    };
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "latency_percentile",
        "max_latency",
        "rate_iops",
        "percentile_list",
    ] {
        let arg = format!("--cmdhelp={name}");
        let theirs = fio(dir.path(), &[&arg]);
        let ours = sb_fio(dir.path(), &[&arg]);
        assert_eq!(type_line(ours.ok()), type_line(&theirs.stdout), "{name}");
    }
}
