//! A multi-host bonnie run in its table, its CSV, `compare` and the HTML report
//! (docs/multihost.md): one row per host and the aggregate row (IOR's rule) in the table,
//! one bonnie++ line per host in the CSV, each host's tests and All clients in `compare`,
//! and the per-test table of ranks in the report.

use storbench_model::fixtures::{bonnie, bonnie_run, bonnie_test};
use storbench_model::hosts::{RankRun, merge};
use storbench_model::result::BonnieTestId::{PutBlock, SeqCreate};
use storbench_model::result::RunResult;
use storbench_report::bonnie_csv::{self, CsvFormat};
use storbench_report::bonnie_table;
use storbench_report::compare::{MetricId, NamedRun, compare};

/// Three hosts writing 8192 KiB each from 10 s, for 2 s, 2 s and `c_ms`, then creating
/// 1024 files each in a second.
fn three_hosts(c_ms: u64) -> RunResult {
    hosts_named(["a", "b", "c"], c_ms)
}

fn hosts_named(names: [&str; 3], c_ms: u64) -> RunResult {
    let ranks = names
        .iter()
        .enumerate()
        .map(|(r, host)| {
            let mut b = bonnie(host);
            let ms = if r == 2 { c_ms } else { 2_000 };
            b.tests = vec![
                bonnie_test(PutBlock, 10_000, ms, 8192.0),
                bonnie_test(SeqCreate, 20_000, 1_000, 1024.0),
            ];
            RankRun {
                rank: r as u32,
                host: host.to_string(),
                clock_offset_ms: 0.0,
                result: Ok(bonnie_run(b)),
            }
        })
        .collect();
    merge("mpi", ranks).unwrap()
}

#[test]
fn the_table_has_a_row_per_host_and_the_aggregate_row() {
    let mut out = Vec::new();
    bonnie_table::render(&three_hosts(4_000), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| ["a ", "b ", "c ", "all 3"].iter().any(|p| l.starts_with(p)))
        .collect();
    // Each host's block write: 4096 KiB/s for a and b, 2048 for c; all three: 24576 KiB
    // over the 4 s from the first start to the last end, 6144 KiB/s.
    assert_eq!(
        rows.len(),
        8,
        "an IO and a file row per host and all 3:\n{text}"
    );
    assert!(
        rows[0].starts_with("a") && rows[0].contains(" 4096k "),
        "{}",
        rows[0]
    );
    assert!(rows[2].contains(" 2048k "), "{}", rows[2]);
    assert!(
        rows[3].starts_with("all 3") && rows[3].contains(" 6144k "),
        "{}",
        rows[3]
    );
    // Files: 3072 over 1 s.
    assert!(
        rows[7].starts_with("all 3") && rows[7].contains("  3072 "),
        "{}",
        rows[7]
    );
    assert!(text.contains("[info.hosts.bonnie]"), "{text}");
    assert!(
        text.contains("c (rank 2) at 2048.0 KiB/s"),
        "the straggler:\n{text}"
    );
}

#[test]
fn the_csv_has_one_bonnie_line_per_host() {
    let mut out = Vec::new();
    bonnie_csv::render(&three_hosts(2_000), CsvFormat::V198, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(lines.len(), 3, "{text}");
    for (l, host) in lines.iter().zip(["a", "b", "c"]) {
        assert_eq!((l.len(), l[0], l[2]), (50, "1.98", host), "{l:?}");
        assert_eq!(l[11], "4096", "{l:?}");
    }
}

#[test]
fn compare_and_the_report_show_each_host_and_all_clients() {
    let runs = [(1, three_hosts(2_000)), (2, three_hosts(4_000))];
    let named: Vec<NamedRun> = runs
        .iter()
        .map(|(id, run)| NamedRun {
            id: *id,
            name: format!("run {id}"),
            run,
        })
        .collect();
    let c = compare(&named, 0);
    let mb = |test: &str| {
        let t = c.tests.iter().find(|t| t.test == test);
        let t = t.unwrap_or_else(|| panic!("no {test} in {:?}", c.tests));
        let r = t.rows.iter().find(|r| r.metric == MetricId::BandwidthMib);
        r.unwrap().values.clone()
    };
    assert_eq!(mb("c:Sequential Output Block"), [Some(4.0), Some(2.0)]);
    assert_eq!(
        mb("All clients Sequential Output Block"),
        [Some(12.0), Some(6.0)]
    );
    let mut out = Vec::new();
    storbench_report::html::render(&named[1..], 0, &Default::default(), &mut out).unwrap();
    let html = String::from_utf8(out).unwrap();
    assert!(html.contains("bonnie on 3 ranks"), "no per-rank table");
    assert!(
        html.contains("<td>block write</td><td>2</td><td>c</td>")
            && html.contains("straggler: below 70% of the median 4096.0"),
        "the straggler's row"
    );
    assert!(
        html.contains(
            "<td>block write</td><td colspan=\"3\">All clients</td><td>24576</td><td>6144.0</td>"
        ),
        "the All clients row"
    );
}

#[test]
fn a_shared_report_hides_the_hosts_rows_are_named_by() {
    let run = hosts_named(["client-one", "client-two", "client-six"], 4_000);
    let privacy = storbench_report::privacy::Privacy {
        hide_host: true,
        ..Default::default()
    };
    let text = serde_json::to_string(&privacy.apply(&run)).unwrap();
    assert!(!text.contains("client-"), "{text}");
}
