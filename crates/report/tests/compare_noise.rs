//! `compare`'s decision rule over a whole comparison: noise across many metrics is not
//! called change (the p-values of one comparison are adjusted together), a short run that
//! cannot decide says "cannot tell", a load change between runs is named, and the rule's
//! error rates hold in a seeded simulation (docs/statistics.md states them).

use storbench_model::repeats::combine;
use storbench_model::result::*;
use storbench_model::rng::Rng;
use storbench_report::compare::noise::{Evidence, FALSE_CHANGE_RATE, adjust, judge};
use storbench_report::compare::{Call, Format, NamedRun, Verdict, compare, render};

/// One read job at `mb_per_s` over 10 s with fixed latencies and CPU.
fn job(name: &str, mb_per_s: f64) -> JobResult {
    let mut dirs: [DirResult; 3] = Default::default();
    dirs[0].io_bytes = (mb_per_s * 1e6 * 10.0) as u64;
    dirs[0].total_ios = dirs[0].io_bytes / 4096;
    dirs[0].runtime_ms = 10_000;
    (0..100).for_each(|_| dirs[0].clat.record(50_000));
    JobResult {
        name: name.into(),
        groupid: 0,
        jobnum: 0,
        jobs: 1,
        pid: 1,
        error: 0,
        error_text: None,
        description: None,
        options: Vec::new(),
        header: JobHeader::default(),
        settings: ReportSettings::default(),
        targets: Vec::new(),
        elapsed_ms: 10_000,
        runtime_ms: 10_000,
        end_unix_ms: 0,
        dirs,
        sync: SyncResult::default(),
        cpu: CpuUsage {
            usr_ns: 1_000_000_000,
            ..CpuUsage::default()
        },
        depth: DepthStats::default(),
        lat_buckets: LatBuckets::default(),
        timeline: Vec::new(),
        engine_details: Vec::new(),
        disks: Vec::new(),
        server_cpu: Vec::new(),
        measured: Default::default(),
        steadystate: None,
        latency_target: None,
    }
}

/// A run of one group per job (`rates[j]` is job j's MB/s), lasting 10 s.
fn round(rates: &[f64], started: u64) -> RunResult {
    RunResult {
        groups: rates
            .iter()
            .enumerate()
            .map(|(i, r)| GroupResult {
                id: i as u32,
                group_reporting: false,
                jobs: vec![job(&format!("job{i}"), *r)],
            })
            .collect(),
        ..RunResult::new(
            RunMode::Fio,
            "storbench test".into(),
            started,
            started + 10_000,
        )
    }
}

/// A run of three rounds; `per_round[r][j]` is job j's rate in round r.
fn repeated(per_round: &[Vec<f64>]) -> RunResult {
    let rounds = per_round
        .iter()
        .enumerate()
        .map(|(i, rates)| round(rates, 1_000 + i as u64 * 20_000))
        .collect();
    combine(rounds, per_round.len() as u32).unwrap()
}

fn named<'a>(runs: &[(&str, &'a RunResult)]) -> Vec<NamedRun<'a>> {
    runs.iter()
        .enumerate()
        .map(|(i, (name, run))| NamedRun {
            id: i as i64 + 1,
            name: name.to_string(),
            run,
        })
        .collect()
}

fn verdicts(c: &storbench_report::compare::Comparison) -> Vec<Verdict> {
    c.tests
        .iter()
        .flat_map(|t| &t.rows)
        .filter_map(|r| r.verdicts[1])
        .collect()
}

/// Two repeated runs of one set-up: 3 of 20 tests differ by what a single 5% test calls
/// real (p ≈ 0.047, bandwidth and IOPS alike), the rest not at all. Judged alone each of
/// the six differences is "real"; judged as the one comparison they are, none is.
#[test]
fn noise_across_many_metrics_is_not_called_change() {
    let base = [1000.0, 1040.0, 960.0];
    let shifted: Vec<f64> = base.iter().map(|v| v + 92.5).collect();
    let rounds = |shift: &[usize]| -> Vec<Vec<f64>> {
        (0..3)
            .map(|r| {
                (0..20)
                    .map(|j| {
                        if shift.contains(&j) {
                            shifted[r]
                        } else {
                            // The same values in another order: the same mean and spread.
                            base[(r + j) % 3]
                        }
                    })
                    .collect()
            })
            .collect()
    };
    let a = repeated(&rounds(&[]));
    let b = repeated(&rounds(&[3, 7, 11]));
    let c = compare(&named(&[("a", &a), ("b", &b)]), 0);
    let all = verdicts(&c);
    let low: Vec<&Verdict> = all.iter().filter(|v| v.p < FALSE_CHANGE_RATE).collect();
    // Seven metrics per test; bandwidth in MB/s and MiB/s and IOPS move in three tests.
    assert_eq!((all.len(), low.len()), (20 * 7, 9));
    assert!(low.iter().all(|v| v.p > 0.04), "{low:?}");
    assert!(
        all.iter().all(|v| v.call != Call::Real),
        "noise called real"
    );
    // The six could be a change of up to 18%: not shown to be noise either.
    assert!(low.iter().all(|v| v.call == Call::CannotTell), "{low:?}");
    assert!(low.iter().all(|v| v.q >= FALSE_CHANGE_RATE), "{low:?}");

    // A change that is there is still found among them: job 5 at half the rate.
    let mut halved = rounds(&[3, 7, 11]);
    for r in &mut halved {
        r[5] /= 2.0;
    }
    let b = repeated(&halved);
    let c = compare(&named(&[("a", &a), ("b", &b)]), 0);
    let job5 = c.tests.iter().find(|t| t.test.starts_with("job5")).unwrap();
    let bw = job5.rows[0].verdicts[1].unwrap();
    assert_eq!((bw.call, bw.mark()), (Call::Real, "real"), "{bw:?}");
    assert!(
        verdicts(&c).iter().filter(|v| v.call == Call::Real).count() <= 3,
        "{c:?}"
    );
}

/// A 5 s single-round run held to 839 MB/s against one at 1,027–1,178: five seconds make
/// two batches of two, too few to tell a 24% drop from noise. Said as "cannot tell",
/// never as noise.
#[test]
fn a_short_run_that_cannot_decide_says_so() {
    let a = Evidence {
        rounds: vec![],
        seconds: Some(vec![1100.0, 1178.0, 1098.6, 1027.0, 1118.4]),
    };
    let b = Evidence {
        rounds: vec![],
        seconds: Some(vec![839.0; 5]),
    };
    let mut v = judge(&a, &b).unwrap();
    assert!(v.p > 0.05 && v.p < 0.1, "{v:?}");
    assert!((v.change_pct + 24.1).abs() < 0.2, "{v:?}");
    adjust(&mut [&mut v]);
    assert_eq!(
        (v.call, v.mark()),
        (Call::CannotTell, "cannot tell~"),
        "{v:?}"
    );
    assert!(!v.mark().contains("noise"));
    // Thirty seconds of the same rates decide it.
    let long = |s: &[f64]| Evidence {
        rounds: vec![],
        seconds: Some(s.iter().cycle().take(30).copied().collect()),
    };
    let mut v = judge(
        &long(&[1100.0, 1178.0, 1098.6, 1027.0, 1118.4]),
        &long(&[839.0]),
    )
    .unwrap();
    adjust(&mut [&mut v]);
    assert_eq!(v.call, Call::Real, "{v:?}");
}

/// Runs that recorded the machine's CPU: other load differing by 40 points is named.
#[test]
fn a_load_change_between_runs_is_named() {
    let cpu = |busy: f64| SystemCpu {
        ncpus: 2,
        user: busy,
        idle: 200.0 - busy,
        ..SystemCpu::default()
    };
    let mut a = round(&[1000.0], 0);
    let mut b = round(&[900.0], 0);
    // Each run's own job used 10% of one CPU (1 s over 10 s).
    a.system_cpu = Some(cpu(14.0));
    b.system_cpu = Some(cpu(94.0));
    let c = compare(&named(&[("a", &a), ("b", &b)]), 0);
    let line = c
        .environment
        .iter()
        .find(|l| l.starts_with("CPU load besides storbench"))
        .unwrap_or_else(|| panic!("{:?}", c.environment));
    assert!(line.contains("a 2%, b 42%"), "{line}");
    b.system_cpu = Some(cpu(20.0));
    let c = compare(&named(&[("a", &a), ("b", &b)]), 0);
    assert!(c.environment.iter().all(|l| !l.starts_with("CPU load")));
}

/// A standard normal deviate (Box–Muller).
fn normal(rng: &mut Rng) -> f64 {
    let u = 1.0 - rng.unit();
    let v = rng.unit();
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// `n` rounds around `mean` with a 5% coefficient of variation.
fn rounds(rng: &mut Rng, n: usize, mean: f64) -> Evidence {
    Evidence {
        rounds: (0..n).map(|_| mean * (1.0 + 0.05 * normal(rng))).collect(),
        seconds: None,
    }
}

/// One comparison of `tests` tests with two metrics each that carry the same measurement
/// (bandwidth and IOPS): `shift[t]` is test t's true change. Returns each test's call.
fn simulate(rng: &mut Rng, n: usize, shift: &[f64]) -> Vec<Call> {
    let mut vs: Vec<Verdict> = Vec::new();
    for s in shift {
        let a = rounds(rng, n, 1000.0);
        let b = rounds(rng, n, 1000.0 * (1.0 + s));
        let v = judge(&a, &b).unwrap();
        vs.push(v);
        vs.push(v);
    }
    let mut refs: Vec<&mut Verdict> = vs.iter_mut().collect();
    adjust(&mut refs);
    vs.iter().step_by(2).map(|v| v.call).collect()
}

const COMPARISONS: usize = 2000;

/// The stated rates (docs/statistics.md): two runs of one set-up, 20 tests of 2 metrics,
/// 3 rounds each: a comparison calls anything real at most 5% of the time (with the
/// simulation's sampling slack); 5 rounds: a 25% change that is the only one is found at
/// least 80% of the time, and a 15% drop of every test at least 90% per test.
#[test]
fn error_rates_hold_in_simulation() {
    let mut rng = Rng::seeded(0x5354_4e5a);
    let same = vec![0.0; 20];
    let false_alarms = (0..COMPARISONS)
        .filter(|_| simulate(&mut rng, 3, &same).contains(&Call::Real))
        .count();
    let rate = false_alarms as f64 / COMPARISONS as f64;
    // Sampling slack: three standard errors of a 5% rate over 2000 comparisons.
    assert!(rate <= 0.05 + 0.015, "false-change rate {rate}");

    let mut one = vec![0.0; 20];
    one[0] = 0.25;
    let mut found = 0;
    let mut others_real = 0;
    for _ in 0..COMPARISONS {
        let calls = simulate(&mut rng, 5, &one);
        found += usize::from(calls[0] == Call::Real);
        others_real += usize::from(calls[1..].contains(&Call::Real));
    }
    let power = found as f64 / COMPARISONS as f64;
    let power_one = power;
    assert!(power >= 0.8, "power for one 25% change {power}");
    assert!(others_real as f64 / COMPARISONS as f64 <= 0.065);

    let all = vec![-0.15; 20];
    let hits: usize = (0..COMPARISONS / 10)
        .map(|_| {
            simulate(&mut rng, 5, &all)
                .iter()
                .filter(|c| **c == Call::Real)
                .count()
        })
        .sum();
    let power = hits as f64 / (COMPARISONS / 10 * 20) as f64;
    assert!(power >= 0.9, "power for a 15% change everywhere {power}");
    eprintln!(
        "false-change rate {rate}, power {power_one} (one 25% change), {power} (15% everywhere)"
    );
}

/// Two repeated runs of three tests: job0 four times faster, job1 unchanged, job2 spread
/// too widely to tell.
fn answer_runs() -> (RunResult, RunResult) {
    let a = repeated(&[
        vec![1000.0, 500.0, 200.0],
        vec![1040.0, 505.0, 80.0],
        vec![960.0, 495.0, 320.0],
    ]);
    let b = repeated(&[
        vec![4000.0, 501.0, 260.0],
        vec![4100.0, 499.0, 90.0],
        vec![3900.0, 500.0, 380.0],
    ]);
    (a, b)
}

fn render_to(c: &storbench_report::compare::Comparison, f: Format) -> String {
    let mut out = Vec::new();
    render(c, f, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// `compare` answers first: the line under the heading counts the calls and names the
/// largest change as a factor with its interval, advice follows when some differences
/// cannot be told; a terminal under 100 columns gets one line per run, which fits 80.
#[test]
fn compare_answers_first_and_fits_the_terminal() {
    let (a, b) = answer_runs();
    let c = compare(&named(&[("a", &a), ("b", &b)]), 0);
    let wide = render_to(
        &c,
        Format::Text {
            color: false,
            width: None,
        },
    );
    let lines: Vec<&str> = wide.lines().collect();
    assert!(lines[1].starts_with("answer: "), "{wide}");
    assert!(
        lines[1].contains("; largest: job0 read bandwidth 4.00× faster ["),
        "{wide}"
    );
    assert!(lines[2].starts_with("advice: "), "{wide}");
    insta::assert_snapshot!("compare_wide", wide);
    let narrow = render_to(
        &c,
        Format::Text {
            color: false,
            width: Some(80),
        },
    );
    insta::assert_snapshot!("compare_narrow", narrow);
    // On a terminal every line fits, prose broken at spaces.
    for l in narrow.lines() {
        assert!(
            l.chars().count() <= 80,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    // The legend and the answer are prose; the tables fit: the wide layout a terminal of
    // 100 columns or more (or a pipe), the narrow one 80.
    for (text, columns) in [(&wide, 100), (&narrow, 80)] {
        for l in text.lines().filter(|l| l.starts_with(' ')) {
            assert!(
                l.chars().count() <= columns,
                "{} columns: {l}",
                l.chars().count()
            );
        }
    }
    let md = render_to(&c, Format::Markdown);
    assert!(
        md.lines().nth(2).is_some_and(|l| l.starts_with("answer: ")),
        "{md}"
    );
}
