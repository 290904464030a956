//! Property tests: the number parsers against an independent model, expressions against
//! exact integer arithmetic, the job-file reader against the text it was rendered from, the
//! command line against the jobs it names, and no input that can make any of them panic.

mod common;

use common::{HOST, env};
use proptest::prelude::*;
use storbench_job::units::{SECOND_US, parse_size, parse_time_us};
use storbench_job::{parse_fio_args, parse_job_text};

/// (suffix, power, kind): kind 0 = follows kb_base, 1 = the inverted IEC form.
const SIZE_SUFFIXES: &[(&str, u32, u8)] = &[
    ("", 0, 0),
    ("b", 0, 0),
    ("B", 0, 0),
    ("k", 1, 0),
    ("K", 1, 0),
    ("kb", 1, 0),
    ("kB", 1, 0),
    ("ki", 1, 0),
    ("Ki", 1, 0),
    ("kib", 1, 1),
    ("KiB", 1, 1),
    ("m", 2, 0),
    ("MB", 2, 0),
    ("Mi", 2, 0),
    ("MiB", 2, 1),
    ("g", 3, 0),
    ("GiB", 3, 1),
    ("t", 4, 0),
    ("TiB", 4, 1),
    ("p", 5, 0),
    ("pib", 5, 1),
];

fn model_multiplier(power: u32, kind: u8, kb_base: u64) -> u64 {
    let base = match (kind, kb_base) {
        (0, b) => b,
        (_, 1024) => 1000,
        _ => 1024,
    };
    base.pow(power)
}

proptest! {
    #[test]
    fn sizes_follow_the_model(n in 0u64..100_000, i in 0..SIZE_SUFFIXES.len(), k1000 in any::<bool>()) {
        let (suffix, power, kind) = SIZE_SUFFIXES[i];
        let kb = if k1000 { 1000 } else { 1024 };
        let want = n.checked_mul(model_multiplier(power, kind, kb));
        let got = parse_size(&format!("{n}{suffix}"), kb as u32);
        match want {
            Some(w) => prop_assert_eq!(got, Ok(w)),
            None => prop_assert!(got.is_err()),
        }
    }

    #[test]
    fn times_follow_the_model(n in 0u64..1_000_000, i in 0usize..9) {
        let (suffix, us) = [
            ("", SECOND_US), ("s", SECOND_US), ("ms", 1_000), ("msec", 1_000), ("us", 1),
            ("usec", 1), ("m", 60 * SECOND_US), ("h", 3_600 * SECOND_US), ("d", 86_400 * SECOND_US),
        ][i];
        prop_assert_eq!(parse_time_us(&format!("{n}{suffix}"), SECOND_US), Ok(n * us));
    }

    #[test]
    fn expressions_compute_exactly(e in expr_tree()) {
        let (text, value) = e;
        let got = parse_size(&format!("({text})"), 1024);
        match value {
            Some(v) if v >= 0 && v <= i128::from(u64::MAX) => prop_assert_eq!(got, Ok(v as u64), "{}", text),
            _ => prop_assert!(got.is_err(), "{} gave {:?}", text, got),
        }
    }

    #[test]
    fn number_parsers_never_panic(s in "\\PC{0,24}") {
        let _ = parse_size(&s, 1024);
        let _ = parse_time_us(&s, SECOND_US);
        let _ = parse_size(&format!("({s})"), 1000);
        let _ = storbench_job::units::parse_size_or_percent(&s, 1024);
        let _ = storbench_job::units::parse_float(&s);
        let _ = storbench_job::units::split_dirs(&s);
    }

    #[test]
    fn every_option_survives_any_value(i in 0usize..200, v in "\\PC{0,20}") {
        let names: Vec<&str> = storbench_job::options::all().map(|o| o.name).collect();
        let name = names[i % names.len()];
        let args = vec!["--name=x".to_string(), format!("--{name}={v}")];
        let _ = parse_fio_args(&args, &HOST, &env);
    }

    #[test]
    fn job_text_never_panics(text in "[\\[\\]a-z=#; \\n$(){}0-9]{0,200}") {
        let mut none = |_: &str, _: &str| Err::<(String, String), String>("no includes".into());
        if let Ok(f) = parse_job_text("p.fio", &text, &mut none) {
            prop_assert!(f.sections.iter().all(|s| !s.name.is_empty()));
        }
    }

    #[test]
    fn job_files_read_back_what_was_written(file in job_file()) {
        let mut none = |_: &str, _: &str| Err::<(String, String), String>("no includes".into());
        let parsed = parse_job_text("p.fio", &render(&file), &mut none).unwrap();
        let back: Vec<Section> = parsed
            .sections
            .iter()
            .map(|s| (s.name.clone(), s.opts.iter().map(|o| (o.key.clone(), o.value.clone())).collect()))
            .collect();
        prop_assert_eq!(back, file);
    }

    #[test]
    fn command_line_jobs_keep_their_options(jobs in prop::collection::vec(job_opts(), 1..5)) {
        let mut args = Vec::new();
        for (i, opts) in jobs.iter().enumerate() {
            args.push(format!("--name=j{i}"));
            args.extend(opts.iter().map(|(k, v)| format!("--{k}={v}")));
        }
        let inv = parse_fio_args(&args, &HOST, &env).unwrap();
        prop_assert_eq!(inv.workload.jobs.len(), jobs.len());
        for (i, (job, opts)) in inv.workload.jobs.iter().zip(&jobs).enumerate() {
            let mut want = vec![("name".to_string(), format!("j{i}"))];
            want.extend(opts.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            prop_assert_eq!(&job.options, &want);
        }
    }
}

/// A small expression and its exact value (`None` when it divides by zero or overflows).
fn expr_tree() -> impl Strategy<Value = (String, Option<i128>)> {
    let leaf = (0i128..5000).prop_map(|n| (n.to_string(), Some(n)));
    leaf.prop_recursive(4, 24, 2, |inner| {
        (
            inner.clone(),
            prop::sample::select(vec!['+', '-', '*', '/', '%']),
            inner,
        )
            .prop_map(|((a, x), op, (b, y))| {
                let v = match (x, y) {
                    (Some(x), Some(y)) => match op {
                        '+' => x.checked_add(y),
                        '-' => x.checked_sub(y),
                        '*' => x.checked_mul(y),
                        '/' => x.checked_div(y),
                        _ => x.checked_rem(y),
                    },
                    _ => None,
                };
                (format!("({a}){op}({b})"), v)
            })
    })
}

type Section = (String, Vec<(String, Option<String>)>);

fn job_file() -> impl Strategy<Value = Vec<Section>> {
    let opt = ("[a-z][a-z_]{0,9}", prop::option::of("[a-z0-9$%{}/.]{1,8}"))
        .prop_filter("include is a directive", |(k, _)| !k.starts_with("include"));
    let section = ("[a-z][a-z0-9-]{0,7}", prop::collection::vec(opt, 0..6));
    prop::collection::vec(section, 0..5)
}

/// Renders with the noise fio tolerates: comments, blank lines, spaces around `=`.
fn render(file: &[Section]) -> String {
    let mut out = String::from("; generated\n\n");
    for (i, (name, opts)) in file.iter().enumerate() {
        out.push_str(&format!("[{name}]\n"));
        for (j, (k, v)) in opts.iter().enumerate() {
            let sp = if (i + j) % 2 == 0 { " " } else { "" };
            match v {
                Some(v) => out.push_str(&format!("{sp}{k}{sp}={sp}{v}{sp}\n")),
                None => out.push_str(&format!("{k}\n")),
            }
            if j % 3 == 1 {
                out.push_str("# comment\n\n");
            }
        }
    }
    out
}

fn job_opts() -> impl Strategy<Value = Vec<(&'static str, &'static str)>> {
    let pool = vec![
        ("bs", "8k"),
        ("iodepth", "16"),
        ("rw", "randread"),
        ("size", "64m"),
        ("direct", "1"),
        ("numjobs", "2"),
        ("ioengine", "libaio"),
        ("runtime", "10"),
        ("time_based", "1"),
        ("rwmixread", "70"),
        ("percentile_list", "50:99"),
    ];
    prop::collection::vec(prop::sample::select(pool), 0..6)
}
