//! Property tests: number formatting stays close to the value, machine outputs stay valid
//! whatever names, options and notes a run carries.

mod common;

use proptest::prelude::*;
use storbench_model::result::{Note, NoteLevel};
use storbench_report::fio::units::{Unit, num2str};
use storbench_report::fio::{self, FioFormat, FioOpts};
use storbench_report::quick;

use common::sample::{Shape, group, job, run};

/// The value a `num2str` string stands for.
fn parse(s: &str, pow2: bool) -> f64 {
    let end = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, rest) = s.split_at(end);
    let base: f64 = if pow2 { 1024.0 } else { 1000.0 };
    let power = ["", "k", "M", "G", "T", "P", "E"]
        .iter()
        .zip(["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"])
        .position(|(si, iec)| {
            rest.starts_with(if pow2 { iec } else { si })
                && !(if pow2 { iec } else { si }).is_empty()
        })
        .unwrap_or(0);
    num.parse::<f64>().unwrap() * base.powi(power as i32)
}

proptest! {
    #[test]
    fn num2str_stays_close(num in 1u64..(1u64 << 60), maxlen in 4u32..=8, pow2 in any::<bool>()) {
        let s = num2str(num, maxlen, 1, pow2, Unit::Byte);
        prop_assert!(s.ends_with('B'));
        let v = parse(&s, pow2);
        let rel = (v - num as f64).abs() / num as f64;
        prop_assert!(rel <= 10f64.powi(2 - maxlen as i32), "{num} -> {s} ({rel})");
        let digits = s.chars().take_while(|c| c.is_ascii_digit() || *c == '.').count();
        // fio's carry may add one digit past maxlen.
        prop_assert!(digits <= maxlen as usize + 1, "{num} -> {s}");
    }

    #[test]
    fn machine_outputs_stay_valid(name in "\\PC{0,12}", key in "\\PC{1,8}", value in "\\PC{0,12}",
                                  message in "\\PC{0,40}") {
        let mut s = Shape::psync_randrw();
        s.ios = [50, 20, 0];
        let mut j = job(&s, 0, 0);
        j.name = name.clone();
        j.options = vec![(key.clone(), value.clone())];
        j.description = Some(message.clone());
        let mut r = run(vec![group(0, false, vec![j])]);
        r.global_options = vec![(key, value)];
        r.notes = vec![Note { level: NoteLevel::Info, code: "info.x".into(), message }];
        for format in [FioFormat::Json, FioFormat::JsonPlus] {
            let mut out = Vec::new();
            fio::render(&r, format, &FioOpts::default(), &mut out).unwrap();
            let doc: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
            prop_assert_eq!(doc["jobs"][0]["jobname"].as_str(), Some(name.as_str()));
        }
        let mut out = Vec::new();
        quick::render_json(&r, &mut out).unwrap();
        prop_assert!(serde_json::from_slice::<serde_json::Value>(&out).is_ok());
    }
}
