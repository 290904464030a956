//! One figure everywhere: a repeated quick run whose last round differs from its mean shows
//! the mean (with its interval where there is room) on the card, in the table and in
//! `compare`, never the last round's figure on one and the mean on another.

mod common;

use storbench_model::repeats::combine;
use storbench_model::result::RunResult;
use storbench_report::compare::{MetricId, NamedRun, compare};
use storbench_report::intervals::{of_run, plus_minus};
use storbench_report::numfmt::num;

/// The sample quick run with every test's bytes and IOs scaled by `f`.
fn round(f: f64, start: u64) -> RunResult {
    let mut r = common::sample::quick_run();
    r.started_unix_ms = start;
    r.finished_unix_ms = start + 40_000;
    for j in r.groups.iter_mut().flat_map(|g| &mut g.jobs) {
        for d in &mut j.dirs {
            d.io_bytes = (d.io_bytes as f64 * f) as u64;
            d.total_ios = (d.total_ios as f64 * f) as u64;
        }
    }
    r
}

#[test]
fn a_repeated_run_shows_its_mean_everywhere() {
    let run = combine(
        vec![round(1.3, 0), round(1.0, 60_000), round(0.7, 120_000)],
        3,
    )
    .unwrap();
    let test = "SEQ1M Q8T1 read";
    let ivs = of_run(&run);
    let bw = ivs
        .iter()
        .find(|t| t.test == test)
        .and_then(|t| t.get(MetricId::BandwidthMb))
        .unwrap()
        .clone();
    let last = storbench_report::quick::rows(&run)
        .into_iter()
        .find(|r| format!("{} {}", r.test, r.direction) == test)
        .unwrap()
        .mb_per_s;
    assert!(
        (bw.interval.mean - last).abs() > 0.2 * last,
        "{bw:?} {last}"
    );
    let mean = num(bw.interval.mean);

    let privacy = storbench_report::privacy::Privacy::default();
    let svg = storbench_report::card::svg(&run, None, &privacy).unwrap();
    assert!(
        svg.contains(&format!(">{mean}</text>")),
        "card lacks the mean {mean}: {svg}"
    );
    assert!(!svg.contains(&format!(">{}</text>", num(last))), "{svg}");
    assert!(svg.contains("means of 3 rounds"), "{svg}");

    let mut table = Vec::new();
    storbench_report::quick::render(&run, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    let cell = plus_minus(bw.interval.mean, bw.half_width);
    assert!(
        table
            .lines()
            .any(|l| l.contains("SEQ1M Q8T1") && l.contains(&cell)),
        "table lacks {cell}: {table}"
    );

    let named = [
        NamedRun {
            id: 1,
            name: "a".into(),
            run: &run,
        },
        NamedRun {
            id: 2,
            name: "b".into(),
            run: &run,
        },
    ];
    let c = compare(&named, 0);
    let row = &c.tests.iter().find(|t| t.test == test).unwrap().rows[0];
    assert_eq!(row.values[0], Some(bw.interval.mean));
}
