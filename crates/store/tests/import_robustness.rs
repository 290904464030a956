//! Importers never panic on arbitrary input: they return runs or one error naming the file.

use proptest::prelude::*;
use storbench_store::import::import_text;

const LINE_200A: &str = "1.98,2.00a,anchor,1,1795972858,512M,,8192,5,836,98,250784,51,458356,35,1325,99,+++++,+++,14015,47,8,4096,1024,,2,4990,85,+++++,+++,5170,24,1817,95,+++++,+++,4039,24,21385us,957us,1887us,11173us,362us,17761us,1375us,4080us,2819us,5957us,112us,4199us";

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in ".{0,400}") {
        if let Err(e) = import_text("f", &text, 0) {
            prop_assert!(e.to_string().starts_with("f"));
        }
    }

    /// Each field of a real line replaced by arbitrary text: parsed or rejected, never a panic.
    #[test]
    fn mangled_bonnie_fields(idx in 0usize..50, field in "[-+0-9a-zA-Z.:/]{0,12}") {
        let mut fields: Vec<&str> = LINE_200A.split(',').collect();
        fields[idx] = &field;
        let line = fields.join(",");
        match import_text("b.csv", &line, 0) {
            Ok(runs) => prop_assert_eq!(runs.len(), 1),
            Err(e) => prop_assert!(e.to_string().starts_with("b.csv:1: "), "{}", e),
        }
    }

    /// fio-shaped JSON with arbitrary values where numbers belong.
    #[test]
    fn odd_fio_json_values(v in prop_oneof![
        Just("null".to_string()), Just("-1".to_string()), Just("1e308".to_string()),
        Just("\"x\"".to_string()), Just("[]".to_string()), Just("{}".to_string()),
        "-?[0-9]{1,20}".prop_map(|s| s),
    ]) {
        let doc = format!(
            r#"{{"fio version":"fio-3.33","timestamp_ms":{v},"jobs":[{{"jobname":"a","groupid":{v},
            "elapsed":{v},"job_runtime":{v},"usr_cpu":{v},"read":{{"io_bytes":{v},"total_ios":{v},
            "runtime":{v},"clat_ns":{{"N":{v},"mean":{v},"stddev":{v},"min":{v},"max":{v},
            "bins":{{"{v}":{v},"100":{v}}},"percentile":{{"50.000000":{v}}}}}}},
            "iodepth_level":{{"1":{v}}},"latency_ms":{{"2":{v}}}}}]}}"#
        );
        let _ = import_text("f.json", &doc, 0);
    }
}

/// Found by cargo-fuzz: counts whose sum across directions overflows 64 bits.
#[test]
fn fuzz_regression_overflowing_counts() {
    let text = include_str!("data/fuzz-overflowing-counts.json");
    if let Ok(runs) = import_text("crash.json", text, 0) {
        // Saving computes headline figures from the same counts.
        let dir = tempfile::tempdir().unwrap();
        let mut store = storbench_store::Store::open(dir.path().join("r.db")).unwrap();
        store
            .save(&runs[0], &storbench_store::RunMeta::default())
            .unwrap();
    }
}
