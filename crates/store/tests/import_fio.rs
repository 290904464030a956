//! Import of real fio 3.x JSON and json+ produced by the installed fio (null engine), checked
//! field by field against the document fio wrote.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use storbench_model::result::{RunMode, RunResult};
use storbench_store::import::{ImportError, import_file, import_text};

/// Runs fio with `args` writing `format` output to `out`; None (with a printed reason) when
/// fio is not installed.
fn run_fio(out: &Path, format: &str, args: &[&str]) -> Option<Value> {
    if Command::new("fio").arg("--version").output().is_err() {
        eprintln!("SKIP: fio is not installed");
        return None;
    }
    let status = Command::new("fio")
        .args(args)
        .arg(format!("--output-format={format}"))
        .arg(format!("--output={}", out.display()))
        .status()
        .expect("run fio");
    assert!(status.success(), "fio failed");
    Some(serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap())
}

const TWO_GROUPS: &[&str] = &[
    "--ioengine=null",
    "--size=32m",
    "--name=rand",
    "--rw=randrw",
    "--bs=4k",
    "--name=seq",
    "--stonewall",
    "--rw=read",
    "--bs=128k",
];

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-9)
}

/// Every job and direction of `run` agrees with fio's own figures in `doc`.
fn check_against(doc: &Value, run: &RunResult, with_bins: bool) {
    let jobs: Vec<_> = run.groups.iter().flat_map(|g| &g.jobs).collect();
    let fio_jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), fio_jobs.len());
    for (job, fj) in jobs.iter().zip(fio_jobs) {
        assert_eq!(job.name, fj["jobname"].as_str().unwrap());
        assert_eq!(job.groupid as u64, fj["groupid"].as_u64().unwrap());
        let fio_cpu = fj["usr_cpu"].as_f64().unwrap();
        let cpu = if job.runtime_ms == 0 {
            0.0
        } else {
            (job.cpu.usr_ns as f64) / (job.runtime_ms as f64 * 1e6) * 100.0
        };
        assert!(close(cpu, fio_cpu, 1e-6), "usr_cpu {cpu} vs {fio_cpu}");
        for (d, key) in ["read", "write", "trim"].iter().enumerate() {
            let (ours, theirs) = (&job.dirs[d], &fj[*key]);
            assert_eq!(ours.io_bytes, theirs["io_bytes"].as_u64().unwrap());
            assert_eq!(ours.total_ios, theirs["total_ios"].as_u64().unwrap());
            assert!(
                close(ours.iops(), theirs["iops"].as_f64().unwrap(), 1e-9),
                "{key} iops"
            );
            assert!(
                close(ours.bw_bytes(), theirs["bw_bytes"].as_f64().unwrap(), 1e-3),
                "{key} bw"
            );
            let clat = &theirs["clat_ns"];
            assert_eq!(ours.clat.samples, clat["N"].as_u64().unwrap());
            if ours.clat.samples == 0 {
                continue;
            }
            let mean = clat["mean"].as_f64().unwrap();
            assert!(
                (ours.clat.mean() - mean).abs() < 0.5,
                "{key} mean {} vs {mean}",
                ours.clat.mean()
            );
            assert!(
                close(ours.clat.stddev(), clat["stddev"].as_f64().unwrap(), 1e-4),
                "{key} sd"
            );
            assert_eq!(ours.clat.hist.is_empty(), !with_bins);
            for (p, v) in clat["percentile"].as_object().unwrap() {
                let p: f64 = p.parse().unwrap();
                let got = ours.clat.percentiles(&[p])[0];
                assert_eq!(got, v.as_u64().unwrap(), "{key} p{p} recomputed");
            }
        }
    }
}

#[test]
fn json_plus_histograms_reproduce_fios_percentiles() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plus.json");
    let Some(doc) = run_fio(&out, "json+", TWO_GROUPS) else {
        return;
    };
    let runs = import_file(&out).unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run.mode, RunMode::Fio);
    assert_eq!(run.tool_version, doc["fio version"].as_str().unwrap());
    assert_eq!(run.groups.len(), 2, "stonewall makes a second group");
    assert_eq!(run.finished_unix_ms, doc["timestamp_ms"].as_u64().unwrap());
    let rand = &run.groups[0].jobs[0];
    assert_eq!(rand.header.rw, "randrw");
    assert_eq!(rand.header.bs[0], (4096, 4096));
    assert_eq!(rand.header.ioengine, "null");
    assert_eq!(run.groups[1].jobs[0].header.bs[0], (131072, 131072));
    check_against(&doc, run, true);
    assert!(run.notes.iter().any(|n| n.code == "import.fio"));
}

#[test]
fn plain_json_keeps_fios_percentile_list() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plain.json");
    let Some(doc) = run_fio(&out, "json", TWO_GROUPS) else {
        return;
    };
    let run = import_file(&out).unwrap().remove(0);
    check_against(&doc, &run, false);
    assert!(run.notes.iter().any(|n| n.code == "import.no-histogram"));
}

#[test]
fn group_reporting_and_global_options() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g.json");
    let args = [
        "--ioengine=null",
        "--size=16m",
        "--bs=8k",
        "--numjobs=2",
        "--group_reporting",
        "--name=pair",
        "--rw=write",
    ];
    let Some(doc) = run_fio(&out, "json+", &args) else {
        return;
    };
    let run = import_file(&out).unwrap().remove(0);
    assert_eq!(run.groups[0].jobs.len(), 1, "fio already merged the pair");
    check_against(&doc, &run, true);
    assert_eq!(run.groups[0].jobs[0].dirs[1].io_bytes, 2 * (16 << 20));
    let globals: Vec<_> = run.global_options.iter().map(|(k, _)| k.as_str()).collect();
    assert!(globals.contains(&"ioengine"), "{globals:?}");
    assert_eq!(
        run.groups[0].jobs[0].header.ioengine, "null",
        "from the global options"
    );
}

#[test]
fn status_reports_and_leading_text() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("one.json");
    let Some(_) = run_fio(&out, "json", &["--ioengine=null", "--size=4m", "--name=a"]) else {
        return;
    };
    let doc = std::fs::read_to_string(&out).unwrap();
    let text = format!("note: fio printed this first\n{doc}{doc}");
    let run = import_text("two.json", &text, 0).unwrap().remove(0);
    assert!(run.notes.iter().any(|n| n.message.contains("last of 2")));

    // `--output-format=json,normal`: fio's normal text after the document.
    let text = format!("{doc}a: (groupid=0, jobs=1): err= 0: pid=1\n  read: IOPS=1\n");
    let run = import_text("both.out", &text, 0).unwrap().remove(0);
    assert!(
        run.notes
            .iter()
            .any(|n| n.message.contains("text after the JSON"))
    );
    // A second document that is broken is still an error, with its line.
    let broken = format!("{doc}{{\n\"fio version\": oops\n}}\n");
    let err = import_text("broken.json", &broken, 0).unwrap_err();
    let doc_lines = doc.lines().count();
    assert_eq!(err.line, Some(doc_lines + 2), "{err}");
}

#[test]
fn broken_json_names_file_and_line() {
    let text = "{\n  \"fio version\": \"fio-3.33\",\n  \"jobs\": [ oops ]\n}\n";
    let err: ImportError = import_text("bad.json", text, 0).unwrap_err();
    assert_eq!(err.file, "bad.json");
    assert_eq!(err.line, Some(3), "{err}");
    assert!(err.to_string().starts_with("bad.json:3: "), "{err}");

    let err = import_text("x.json", "{\"jobs\": []}", 0).unwrap_err();
    assert!(err.to_string().contains("fio version"), "{err}");
}

/// Nothing to import is an error naming the file and the problem, not an empty run dated
/// 1970 that sorts first in the history: no jobs, jobs without IO, no timestamp.
#[test]
fn empty_or_undated_documents_are_refused() {
    let job = r#"{"jobname":"a","groupid":0,"error":0,"elapsed":1,"job_runtime":1,
        "read":{"io_bytes":4096,"total_ios":1,"runtime":1,"bw":4,"iops":1}}"#;
    let idle = job.replace(r#""total_ios":1"#, r#""total_ios":0"#);
    for (doc, needle) in [
        (
            r#"{"fio version":"fio-3.33","timestamp":1700000000,"jobs":[]}"#.to_string(),
            "no jobs",
        ),
        (
            format!(r#"{{"fio version":"fio-3.33","timestamp":1700000000,"jobs":[{idle}]}}"#),
            "no job did any IO",
        ),
        (
            format!(r#"{{"fio version":"fio-3.33","jobs":[{job}]}}"#),
            "timestamp",
        ),
        (
            format!(r#"{{"fio version":"fio-3.33","timestamp":0,"jobs":[{job}]}}"#),
            "timestamp",
        ),
    ] {
        let err = import_text("n.json", &doc, 0).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("n.json: ") && text.contains(needle),
            "{text}"
        );
    }
    let ok = format!(r#"{{"fio version":"fio-3.33","timestamp":1700000000,"jobs":[{job}]}}"#);
    let run = import_text("ok.json", &ok, 0).unwrap().remove(0);
    assert_eq!(run.finished_unix_ms, 1_700_000_000_000);
    let err = import_text("h.csv", "# only a comment\nname,file_size\n", 0).unwrap_err();
    assert!(err.to_string().contains("no bonnie++ CSV line"), "{err}");
}

/// fio's terse and normal outputs are named as such with what to do, instead of being read as
/// a malformed bonnie++ CSV line.
#[test]
fn fio_text_outputs_are_named() {
    let terse = format!("3;fio-3.33;t;0;0;{}\n", ["0"; 125].join(";"));
    let err = import_text("t.txt", &terse, 0).unwrap_err().to_string();
    assert!(
        err.starts_with("t.txt:1: this is fio's terse output") && err.contains("json"),
        "{err}"
    );
    let normal = "a: (g=0): rw=read, bs=(R) 4096B-4096B\nfio-3.33\n\
        a: (groupid=0, jobs=1): err= 0: pid=1\n\nRun status group 0 (all jobs):\n";
    let err = import_text("n.txt", normal, 0).unwrap_err().to_string();
    assert!(
        err.starts_with("n.txt: this is fio's normal (text) output"),
        "{err}"
    );
}

/// Concatenated results of separate runs (`cat a.json b.json`) are separate runs; status
/// reports of one run (same jobs, growing counters) stay one run, the last report.
#[test]
fn concatenated_results_are_separate_runs() {
    let doc = |name: &str, bytes: u64, ts: u64| {
        format!(
            r#"{{"fio version":"fio-3.33","timestamp":{ts},"jobs":[{{"jobname":"{name}",
            "groupid":0,"error":0,"elapsed":1,"job_runtime":1000,
            "read":{{"io_bytes":{bytes},"total_ios":{},"runtime":1000}}}}]}}"#,
            bytes / 4096
        )
    };
    let status = [doc("a", 4096, 1), doc("a", 8192, 2), doc("a", 16384, 3)].join("\n");
    let runs = import_text("s.json", &status, 0).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].groups[0].jobs[0].dirs[0].io_bytes, 16384);

    let cat = [
        doc("a", 8192, 1),
        doc("b", 4096, 2),
        doc("b", 4096 * 3, 3),
        doc("b", 4096, 4),
    ]
    .join("\n");
    let runs = import_text("c.json", &cat, 0).unwrap();
    let got: Vec<(String, u64)> = runs
        .iter()
        .map(|r| {
            let j = &r.groups[0].jobs[0];
            (j.name.clone(), j.dirs[0].io_bytes)
        })
        .collect();
    assert_eq!(
        got,
        [
            ("a".into(), 8192),
            ("b".into(), 4096 * 3),
            ("b".into(), 4096)
        ]
    );
}

/// Real `fio --client` output (two fio 3.33 servers on one host, ports 8765 and 8766)
/// imports as one multi-host run: each server a rank, its job named `HOST#PORT:job`, the
/// "All clients" entry left out of the jobs (its figures are the aggregate's).
#[test]
fn fio_client_mode_json_imports_as_one_multi_host_run() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fio-3.33-client-mode.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let runs = import_file(&path).unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    let hosts = run.hosts.as_ref().expect("a multi-host run");
    assert_eq!(hosts.launcher, "fio --client");
    let names: Vec<&str> = hosts.ranks.iter().map(|r| r.host.as_str()).collect();
    assert_eq!(names, ["127.0.0.1#8765", "127.0.0.1#8766"]);
    let jobs: Vec<&str> = run.groups[0].jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(jobs, ["127.0.0.1#8765:x", "127.0.0.1#8766:x"]);
    let all = &doc["client_stats"][2];
    assert_eq!(all["jobname"], "All clients");
    let g = &hosts.groups[0];
    assert_eq!(g.bytes[0], all["read"]["io_bytes"].as_u64().unwrap());
    assert_eq!(g.per_rank.len(), 2);
}
