//! `storbench quick --json` output against the checked-in `docs/quick.schema.json`.
//!
//! The schema uses a small subset of JSON Schema (type, const, enum, minimum, required,
//! properties, additionalProperties: false, items, local `$ref`); the validator below
//! implements exactly that subset and fails on any keyword it does not know, so the schema
//! cannot silently grow past what is checked.

mod common;

use serde_json::{Value, json};
use storbench_report::quick;

fn schema() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/quick.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("schema file")).unwrap()
}

const KNOWN: [&str; 13] = [
    "$schema",
    "$id",
    "title",
    "description",
    "type",
    "const",
    "enum",
    "minimum",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "$ref",
];

/// Errors of `v` against `s` (empty when valid), with JSON-pointer-like paths.
fn validate(root: &Value, s: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    let s = s.as_object().expect("schema node is an object");
    for k in s.keys() {
        assert!(
            KNOWN.contains(&k.as_str()) || k == "$defs",
            "unsupported keyword {k}"
        );
    }
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").expect("local ref");
        return validate(root, &root["$defs"][name], v, path, errors);
    }
    if let Some(t) = s.get("type").and_then(Value::as_str) {
        let ok = match t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "boolean" => v.is_boolean(),
            "integer" => v.is_u64() || v.is_i64(),
            "number" => v.is_number(),
            _ => panic!("unsupported type {t}"),
        };
        if !ok {
            errors.push(format!("{path}: not {t}: {v}"));
            return;
        }
    }
    if let Some(c) = s.get("const").filter(|c| *c != v) {
        errors.push(format!("{path}: {v} is not {c}"));
    }
    if let Some(e) = s
        .get("enum")
        .and_then(Value::as_array)
        .filter(|e| !e.contains(v))
    {
        errors.push(format!("{path}: {v} not in {e:?}"));
    }
    let min = s.get("minimum").and_then(Value::as_f64);
    if let (Some(m), Some(x)) = (min, v.as_f64())
        && x < m
    {
        errors.push(format!("{path}: {x} below {m}"));
    }
    if let Some(obj) = v.as_object() {
        let props = s.get("properties").and_then(Value::as_object);
        for r in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !obj.contains_key(r.as_str().unwrap()) {
                errors.push(format!("{path}: missing {r}"));
            }
        }
        for (k, item) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(ps) => validate(root, ps, item, &format!("{path}/{k}"), errors),
                None if s.get("additionalProperties") == Some(&json!(false)) => {
                    errors.push(format!("{path}: unexpected key {k}"))
                }
                None => {}
            }
        }
    }
    if let (Some(items), Some(arr)) = (s.get("items"), v.as_array()) {
        for (i, item) in arr.iter().enumerate() {
            validate(root, items, item, &format!("{path}[{i}]"), errors);
        }
    }
}

fn errors_of(doc: &Value) -> Vec<String> {
    let root = schema();
    let mut errors = Vec::new();
    validate(&root, &root, doc, "", &mut errors);
    errors
}

#[test]
fn quick_json_matches_schema() {
    let mut out = Vec::new();
    quick::render_json(&common::sample::quick_run(), &mut out).unwrap();
    let doc: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(doc["tests"].as_array().unwrap().len(), 8);
    assert_eq!(errors_of(&doc), Vec::<String>::new());
}

#[test]
fn quick_json_with_server_cpu_matches_schema() {
    let mut out = Vec::new();
    quick::render_json(&common::sample::loopback_quick_run(), &mut out).unwrap();
    let doc: Value = serde_json::from_slice(&out).unwrap();
    let server = &doc["tests"][4]["server_cpu"];
    assert_eq!(server["process"], "tgtd");
    assert_eq!(server["pid"], 4242);
    assert!((server["cpu_percent"].as_f64().unwrap() - 95.0).abs() < 1e-9);
    assert!(doc["tests"][7].get("server_cpu").is_none());
    assert_eq!(errors_of(&doc), Vec::<String>::new());
    let mut bad = doc.clone();
    bad["tests"][0]["server_cpu"]["threads"] = json!(4);
    assert!(!errors_of(&bad).is_empty());
}

#[test]
fn schema_rejects_what_it_should() {
    let mut out = Vec::new();
    quick::render_json(&common::sample::quick_run(), &mut out).unwrap();
    let good: Value = serde_json::from_slice(&out).unwrap();
    let mut extra = good.clone();
    extra["tests"][0]["surprise"] = json!(1);
    let mut missing = good.clone();
    missing["tests"][1]["latency_ns"]
        .as_object_mut()
        .unwrap()
        .remove("p99");
    let mut typed = good.clone();
    typed["tests"][2]["iops"] = json!("fast");
    let mut level = good.clone();
    level["notes"][0]["level"] = json!("fatal");
    for bad in [extra, missing, typed, level] {
        assert!(!errors_of(&bad).is_empty(), "accepted: {bad}");
    }
}

/// Rows show the total latency (fio's `lat`); only where it was not measured the
/// completion latency, and then the row and the footnote say so.
#[test]
fn rows_use_total_latency_else_say_completion() {
    use storbench_model::result::LatStats;
    let mut run = common::sample::quick_run();
    let row = &quick::rows(&run)[0];
    let mut all = LatStats::default();
    run.groups[0]
        .jobs
        .iter()
        .for_each(|j| all.merge(&j.dirs[0].lat));
    assert_eq!(row.latency_ns.p50, all.percentiles(&[50.0])[0]);
    assert_eq!(row.latency_ns.measured, quick::LatencyKind::Total);
    for j in run.groups.iter_mut().flat_map(|g| &mut g.jobs) {
        j.dirs.iter_mut().for_each(|d| d.lat = LatStats::default());
    }
    let row = &quick::rows(&run)[0];
    assert_eq!(row.latency_ns.measured, quick::LatencyKind::Completion);
    assert!(row.latency_ns.p50 > 0);
    let mut out = Vec::new();
    quick::render(&run, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("from the end of submission to completion (total latency was not measured)"),
        "{text}"
    );
}

/// A quick run whose first test was judged: the table gets its Valid column, the JSON
/// each judged test's verdict, and both stay within the schema.
#[test]
fn quick_verdicts_show_as_a_column_and_in_the_schema() {
    use storbench_model::result::{Reason, Validity, Verdict};
    let mut run = common::sample::quick_run();
    let first = run.groups[0].jobs[0].name.clone();
    run.verdicts = vec![Verdict {
        job: first,
        validity: Validity::Invalid,
        reasons: vec![Reason {
            check: "cache".into(),
            validity: Validity::Invalid,
            message: "the disk (vda) read 2% of the bytes reported".into(),
        }],
    }];
    let mut out = Vec::new();
    quick::render_json(&run, &mut out).unwrap();
    let doc: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(doc["tests"][0]["verdict"]["validity"], "invalid");
    assert_eq!(doc["tests"][0]["verdict"]["reasons"][0]["check"], "cache");
    assert!(doc["tests"][1].get("verdict").is_none());
    assert_eq!(errors_of(&doc), Vec::<String>::new());
    let mut bad = doc.clone();
    bad["tests"][0]["verdict"]["validity"] = json!("fine");
    assert!(!errors_of(&bad).is_empty());

    let mut table = Vec::new();
    quick::render(&run, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[2].ends_with("Valid"), "{table}");
    assert!(lines[3].ends_with("INVALID"), "{table}");
    assert!(lines[4].ends_with(" -"), "{table}");
    assert!(
        !table.contains("  verdict  "),
        "the Valid column holds the verdicts: {table}"
    );
    let mut verbose = Vec::new();
    let layout = storbench_report::notes::Layout {
        width: None,
        verdicts: true,
    };
    quick::render_for(&run, layout, &mut verbose).unwrap();
    let verbose = String::from_utf8(verbose).unwrap();
    assert!(verbose.contains("  verdict  "), "{verbose}");
}

/// fio's normal output ends its notes block with the verdicts; fio JSON carries them
/// under `storbench` only, fio's own keys untouched; the HTML report lists them.
#[test]
fn fio_outputs_and_the_report_carry_the_verdicts() {
    use storbench_model::result::{Reason, RunMode, Validity, Verdict};
    let mut run = common::sample::quick_run();
    run.mode = RunMode::Fio;
    let plain = {
        let mut out = Vec::new();
        storbench_report::registry::write_run("json", &run, &mut out).unwrap();
        serde_json::from_slice::<Value>(&out).unwrap()
    };
    run.verdicts = vec![Verdict {
        job: run.groups[0].jobs[0].name.clone(),
        validity: Validity::Suspect,
        reasons: vec![Reason {
            check: "steady".into(),
            validity: Validity::Suspect,
            message: "the rate fell from 900.0 MB/s to 200.0 MB/s at second 3".into(),
        }],
    }];
    let mut out = Vec::new();
    storbench_report::registry::write_run("json", &run, &mut out).unwrap();
    let doc: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(doc["storbench"]["verdicts"][0]["validity"], "suspect");
    assert_eq!(doc["jobs"], plain["jobs"]);
    assert!(plain["storbench"].get("verdicts").is_none());

    let mut out = Vec::new();
    storbench_report::registry::write_run("normal", &run, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let name = &run.groups[0].jobs[0].name;
    assert!(
        text.contains(&format!("  verdict  {name}: suspect (steady)\n")),
        "{text}"
    );

    let mut html = Vec::new();
    storbench_report::html::render(
        &[storbench_report::compare::NamedRun {
            id: 1,
            name: "run 1".into(),
            run: &run,
        }],
        0,
        &Default::default(),
        &mut html,
    )
    .unwrap();
    let html = String::from_utf8(html).unwrap();
    assert!(
        html.contains(&format!(
            "<li class=\"suspect\">{name}: suspect (steady)</li>"
        )),
        "no verdict in the report"
    );
}
