//! Cross-checks against the installed fio (Debian's 3.33): where fio can tell us what it
//! made of some input, storbench must make the same of it. Skipped, with a printed reason,
//! when fio is not installed.

mod common;

use std::process::Command;

use common::{Scratch, corpus_dir};
use serde_json::Value;
use storbench_job::units::{SECOND_US, parse_size, parse_time_us};
use storbench_job::{HostFacts, JobSpec, Workload, parse_fio_args};

fn fio_available() -> bool {
    let ok = Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipping: fio is not installed (Debian package fio)");
    }
    ok
}

/// Runs fio in `dir` and returns (exit success, stdout, stderr).
fn fio(dir: &std::path::Path, args: &[String], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = Command::new("fio")
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .output()
        .expect("run fio");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The `out=` values fio's `--debug=parse` prints for each `handle_option=NAME, ptr=VALUE`.
fn parsed_values(debug: &str, name: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    let prefix = format!("__handle_option={name}, type=");
    for line in debug.lines() {
        if let Some(i) = line.find(&prefix) {
            current = line[i..].split("ptr=").nth(1).map(str::to_string);
        } else if let (Some(v), Some(i)) = (&current, line.find("ret=0, out=")) {
            out.push((v.clone(), line[i + 11..].trim().parse().expect("fio out=")));
            current = None;
        }
    }
    out
}

/// Sizes with every suffix fio knows, under both kb_base values.
#[test]
fn sizes_and_times_parse_as_fio_parses_them() {
    if !fio_available() {
        return;
    }
    let dir = Scratch::new("units");
    let mut sizes = Vec::new();
    for n in [1u64, 3, 4, 7, 10, 64, 100, 512, 999, 1024] {
        for suffix in [
            "", "b", "B", "k", "K", "kb", "KB", "ki", "Ki", "kib", "KiB", "m", "M", "mb", "mi",
            "mib", "MiB", "g", "G", "gb", "gi", "gib", "GiB", "t", "tb", "ti", "tib", "p", "pi",
            "pib",
        ] {
            sizes.push(format!("{n}{suffix}"));
        }
    }
    sizes.push("0x1000".into());
    for kb_base in [1024u32, 1000] {
        let mut args = strings(&[
            "--debug=parse",
            "--parse-only",
            &format!("--kb_base={kb_base}"),
        ]);
        for (i, s) in sizes.iter().enumerate() {
            args.push(format!("--name=j{i}"));
            args.push(format!("--offset={s}"));
        }
        let (ok, stdout, stderr) = fio(dir.path(), &args, &[]);
        assert!(ok, "fio failed: {stderr}");
        let seen = parsed_values(&format!("{stdout}{stderr}"), "offset");
        assert_eq!(
            seen.len(),
            sizes.len(),
            "fio parsed {} of {}",
            seen.len(),
            sizes.len()
        );
        for (text, fio_value) in seen {
            assert_eq!(
                parse_size(&text, kb_base),
                Ok(fio_value),
                "{text} under kb_base={kb_base}"
            );
        }
    }
    let times = [
        "0", "1", "60", "5s", "100ms", "1500msec", "250us", "20usec", "2m", "1h", "1d", "10S",
        "7MS", "3M",
    ];
    let mut args = strings(&["--debug=parse", "--parse-only"]);
    for (i, t) in times.iter().enumerate() {
        args.push(format!("--name=t{i}"));
        args.push(format!("--ramp_time={t}"));
    }
    let (ok, stdout, stderr) = fio(dir.path(), &args, &[]);
    assert!(ok, "fio failed: {stderr}");
    let seen = parsed_values(&format!("{stdout}{stderr}"), "ramp_time");
    assert_eq!(seen.len(), times.len());
    for (text, fio_value) in seen {
        assert_eq!(parse_time_us(&text, SECOND_US), Ok(fio_value), "{text}");
    }
}

/// Runs `args` through fio (null engine, tiny sizes) and through storbench, and compares
/// what fio's JSON reports: global options, and per job its name, group and options.
fn compare_json(dir: &Scratch, args: &[String], env: &[(&str, &str)]) {
    let mut fio_args = strings(&["--output-format=json"]);
    fio_args.extend(args.iter().cloned());
    let (ok, stdout, stderr) = fio(dir.path(), &fio_args, env);
    assert!(ok, "fio {args:?} failed: {stderr}");
    let json: Value = serde_json::from_str(&stdout[stdout.find('{').expect("json")..]).unwrap();
    let lookup = |name: &str| {
        env.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    };
    let inv = parse_fio_args(args, &HostFacts::detect(), &lookup).expect("storbench parses");
    let w = &inv.workload;
    // Flags are recorded with an empty value; fio's JSON leaves them out.
    let valued = |opts: &[(String, String)]| -> Vec<(String, String)> {
        opts.iter()
            .filter(|(_, v)| !v.is_empty())
            .cloned()
            .collect()
    };
    let fio_global = raw_pairs(&stdout, "\"global options\" : {")
        .into_iter()
        .next();
    assert_eq!(
        valued(&w.global_options),
        fio_global.unwrap_or_default(),
        "global options for {args:?}"
    );
    let fio_jobs = json["jobs"].as_array().expect("jobs");
    let fio_options = raw_pairs(&stdout, "\"job options\" : {");
    let ours = expected_entries(w);
    assert_eq!(ours.len(), fio_jobs.len(), "job entries for {args:?}");
    for ((job, entry), options) in ours.iter().zip(fio_jobs).zip(fio_options) {
        assert_eq!(entry["jobname"], job.name.as_str(), "{args:?}");
        assert_eq!(
            entry["groupid"], job.group,
            "group of {} for {args:?}",
            job.name
        );
        assert_eq!(
            valued(&job.options),
            options,
            "job options of {} for {args:?}",
            job.name
        );
    }
}

/// Every `"key" : "value"` block opened by `marker` in fio's JSON text, in order and with
/// repeated keys kept (fio prints an option given twice twice; a JSON map would merge them).
fn raw_pairs(text: &str, marker: &str) -> Vec<Vec<(String, String)>> {
    text.match_indices(marker)
        .map(|(i, _)| {
            text[i + marker.len()..]
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with('}'))
                .filter_map(|l| {
                    let (k, v) = l.trim_end_matches(',').split_once(" : ")?;
                    Some((
                        k.trim_matches('"').to_string(),
                        v.trim_matches('"').to_string(),
                    ))
                })
                .collect()
        })
        .collect()
}

/// The JSON entries fio prints: one per clone, or one per group with group_reporting.
fn expected_entries(w: &Workload) -> Vec<&JobSpec> {
    let mut out: Vec<&JobSpec> = Vec::new();
    for j in &w.jobs {
        if j.group_reporting {
            if !out.iter().any(|o| o.group == j.group) {
                out.push(j);
            }
        } else {
            out.extend(std::iter::repeat_n(j, j.numjobs as usize));
        }
    }
    out
}

#[test]
fn json_options_jobs_and_groups_match_fio() {
    if !fio_available() {
        return;
    }
    let dir = Scratch::new("json");
    let run = |s: &str| strings(&s.split_whitespace().collect::<Vec<_>>());
    compare_json(
        &dir,
        &run(
            "--bs=128k --ioengine=null --iodepth=32 --gtod_reduce=1 --group_reporting --name=randrw --numjobs=3 --runtime=100ms --rw=randrw --size=1m --time_based",
        ),
        &[],
    );
    compare_json(
        &dir,
        &run(
            "--ioengine=null --size=256k --name=a --bs=8k --numjobs=2 --name=b --rw=write --stonewall --name=c --new_group --time_based=1 --runtime=50ms",
        ),
        &[],
    );
    compare_json(
        &dir,
        &run(
            "--name=global --ioengine=null --size=128k --name=x --blocksize=8k --readwrite=randread --name=global --rw=write --name=y",
        ),
        &[],
    );
    let f1 = dir.write(
        "one.fio",
        "[global]\nioengine=null\nsize=${SIZE}\nthread=1\n[a]\nrw=randread\nbs=$pagesize\nnumjobs=$ncpus\n[global]\nbs=16k\n[b]\nstonewall\nkb_base=1000\nsize=64k\n[c]\nsize=$mb_memory\n",
    );
    compare_json(&dir, std::slice::from_ref(&f1), &[("SIZE", "512k")]);
    let f2 = dir.write(
        "two.fio",
        "[c]\nioengine=null\nsize=64k\n[d]\nioengine=null\nsize=64k\nnew_group\n",
    );
    // Without command-line globals, several job files group the same way in both tools.
    compare_json(&dir, &[f1, f2], &[("SIZE", "512k")]);
}

/// Corpus files that fio can read (not marked "storbench-only") must pass its parser too,
/// and single-[global] files print the same `--showcmd` line.
#[test]
fn fio_accepts_the_corpus_and_agrees_on_showcmd() {
    if !fio_available() {
        return;
    }
    let env = [("SIZE", "64m"), ("JOBS", "3")];
    let mut checked = 0;
    for entry in std::fs::read_dir(corpus_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "fio") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if text
            .lines()
            .next()
            .is_some_and(|l| l.contains("storbench-only"))
        {
            continue;
        }
        let p = path.display().to_string();
        let (ok, _, stderr) = fio(&corpus_dir(), &strings(&["--parse-only", &p]), &env);
        assert!(ok, "fio refuses {p}: {stderr}");
        checked += 1;
        if text.matches("[global]").count() > 1 || text.contains("include") {
            continue;
        }
        let (_, fio_cmd, _) = fio(&corpus_dir(), &strings(&["--showcmd", &p]), &env);
        let lookup = |name: &str| {
            env.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        let inv = parse_fio_args(&strings(&["--showcmd", &p]), &HostFacts::detect(), &lookup)
            .expect("storbench parses");
        // fio double-quotes descriptions only; storbench single-quotes what a shell would
        // split or expand.
        let ours = inv.showcmd.unwrap().replace('\'', "");
        assert_eq!(ours.trim(), fio_cmd.replace('"', "").trim(), "{p}");
    }
    assert!(checked >= 8, "only {checked} corpus files checked");
}
