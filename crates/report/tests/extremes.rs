//! Extreme figures go through every output, the database and the importers: hours-long IOs
//! (latency sums of squares far past 2^64 ns²), totals of 2^63 bytes, a runtime of 0 ms,
//! empty and one-sample histograms. No reporter may panic or fail, the JSON outputs stay
//! valid, and a run saved and loaded again keeps its figures.

mod common;

use proptest::prelude::*;
use storbench_model::result::{
    BonnieResult, BonnieTest, BonnieTestId, LatStats, RunMode, RunResult,
};
use storbench_report::compare::{self, NamedRun};
use storbench_report::fio::{self, FioFormat, FioOpts};
use storbench_report::{bonnie_csv, bonnie_table, html, quick};
use storbench_store::{RunMeta, Store};

use common::sample::{Shape, group, job, quick_run, run};

/// Latencies from nothing to hours, and the largest a u64 holds.
fn latency() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(4_300_000_000),
        Just(3_600_000_000_000),
        Just(36 * 3_600_000_000_000),
        Just(u64::MAX),
        any::<u64>(),
    ]
}

fn big() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(1 << 63),
        Just(u64::MAX),
        any::<u64>()
    ]
}

fn lat_stats(lats: &[u64]) -> LatStats {
    let mut s = LatStats::default();
    for &ns in lats {
        s.record(ns);
    }
    s
}

/// Overwrites the figures of every job of `r` with extreme ones.
fn make_extreme(r: &mut RunResult, lats: &[u64], bytes: u64, ios: u64, runtime_ms: u64) {
    for j in r.groups.iter_mut().flat_map(|g| &mut g.jobs) {
        j.runtime_ms = runtime_ms;
        j.elapsed_ms = runtime_ms;
        for d in &mut j.dirs[..2] {
            d.io_bytes = bytes;
            d.total_ios = ios;
            d.runtime_ms = runtime_ms;
            d.clat = lat_stats(lats);
            d.lat = lat_stats(lats);
            d.slat = lat_stats(&lats[..lats.len().min(1)]);
        }
        j.sync.lat = lat_stats(lats);
    }
}

fn bonnie(rate: f64, lat: u64) -> BonnieResult {
    let t = |id| BonnieTest {
        id,
        rate: Some(rate),
        cpu_pct: Some(100.0),
        elapsed_ns: lat,
        max_latency_ns: Some(lat),
        span: None,
    };
    BonnieResult {
        tests: vec![t(BonnieTestId::PutBlock), t(BonnieTestId::SeqCreate)],
        file_size_mib: u64::MAX >> 20,
        ..BonnieResult::default()
    }
}

/// Every reporter of one run, and of a comparison of it with itself.
fn render_all(r: &RunResult) -> Result<(), TestCaseError> {
    let fio_formats = [
        FioFormat::Normal,
        FioFormat::Json,
        FioFormat::JsonPlus,
        FioFormat::Terse,
    ];
    // fio's layouts read jobs; a bonnie run has none (its own reporters follow).
    let fio_formats = if r.mode == RunMode::Bonnie {
        &[][..]
    } else {
        &fio_formats[..]
    };
    for &format in fio_formats {
        let mut out = Vec::new();
        fio::render(r, format, &FioOpts::default(), &mut out).unwrap();
        if matches!(format, FioFormat::Json | FioFormat::JsonPlus) {
            let doc: Result<serde_json::Value, _> = serde_json::from_slice(&out);
            prop_assert!(doc.is_ok(), "{format:?}: {:?}", doc.err());
        }
    }
    let mut out = Vec::new();
    match r.mode {
        RunMode::Quick => {
            quick::render(r, &mut out).unwrap();
            quick::render_json(r, &mut out).unwrap();
        }
        RunMode::Bonnie => {
            bonnie_table::render(r, &mut out).unwrap();
            for f in [bonnie_csv::CsvFormat::V198, bonnie_csv::CsvFormat::V103] {
                bonnie_csv::render(r, f, &mut out).unwrap();
            }
        }
        RunMode::Fio | RunMode::Diagnose => {}
    }
    let named = [
        NamedRun {
            id: 1,
            name: "a".into(),
            run: r,
        },
        NamedRun {
            id: 2,
            name: "b".into(),
            run: r,
        },
    ];
    let c = compare::compare(&named, 0);
    for f in [
        compare::Format::Text {
            color: true,
            width: None,
        },
        compare::Format::Markdown,
        compare::Format::Csv,
        compare::Format::Json,
    ] {
        compare::render(&c, f, &mut out).unwrap();
    }
    html::render(&named, 0, &Default::default(), &mut out).unwrap();
    Ok(())
}

/// Saves `r`, loads it back and checks the figures survived; imports its fio JSON.
fn store_and_import(r: &RunResult) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("r.db")).unwrap();
    let id = store.save(r, &RunMeta::default());
    prop_assert!(id.is_ok(), "save: {:?}", id.err());
    let back = store.load(id.unwrap()).unwrap().run;
    let pairs = back
        .groups
        .iter()
        .flat_map(|g| &g.jobs)
        .zip(r.groups.iter().flat_map(|g| &g.jobs));
    for (b, a) in pairs {
        prop_assert_eq!(b.dirs[0].io_bytes, a.dirs[0].io_bytes);
        prop_assert_eq!(b.dirs[0].clat.max_ns, a.dirs[0].clat.max_ns);
        let (mb, ma) = (b.dirs[0].clat.mean(), a.dirs[0].clat.mean());
        prop_assert!((mb - ma).abs() <= ma * 1e-9, "{mb} vs {ma}");
    }
    let mut json = Vec::new();
    fio::render(r, FioFormat::JsonPlus, &FioOpts::default(), &mut json).unwrap();
    let text = String::from_utf8(json).unwrap();
    // An importer may refuse a figure it cannot hold, in one line; it must not panic.
    if let Ok(runs) = storbench_store::import::import_text("x.json", &text, 0) {
        for imported in &runs {
            render_all(imported)?;
            prop_assert!(store.save(imported, &RunMeta::default()).is_ok());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn extreme_fio_runs_render_save_and_import(
        lats in prop::collection::vec(latency(), 0..4),
        bytes in big(), ios in big(), runtime_ms in big(),
    ) {
        let mut s = Shape::libaio_randread();
        s.ios = [300, 200, 0];
        let mut r = run(vec![group(0, true, vec![job(&s, 0, 0), job(&s, 0, 1)])]);
        make_extreme(&mut r, &lats, bytes, ios, runtime_ms);
        render_all(&r)?;
        store_and_import(&r)?;
    }

    #[test]
    fn extreme_quick_and_bonnie_runs_render_and_save(
        lats in prop::collection::vec(latency(), 0..3),
        bytes in big(), runtime_ms in big(), rate in any::<f64>(), lat in latency(),
    ) {
        let mut r = quick_run();
        make_extreme(&mut r, &lats, bytes, bytes / 4096, runtime_ms);
        render_all(&r)?;
        store_and_import(&r)?;
        let mut b = run(Vec::new());
        b.mode = RunMode::Bonnie;
        b.bonnie = Some(bonnie(rate.abs(), lat));
        render_all(&b)?;
        store_and_import(&b)?;
    }
}
