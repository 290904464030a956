use super::*;
use crate::fixtures::{bonnie, bonnie_run, bonnie_test};
use crate::result::BonnieTestId::{PutBlock, SeqCreate};

fn rank(rank: u32, host: &str, offset_ms: f64, tests: Vec<crate::result::BonnieTest>) -> RankRun {
    let mut b = bonnie(host);
    b.tests = tests;
    RankRun {
        rank,
        host: host.into(),
        clock_offset_ms: offset_ms,
        result: Ok(bonnie_run(b)),
    }
}

#[test]
fn each_test_aggregates_all_work_over_the_earliest_start_to_the_latest_end() {
    // Block write: rank 0 writes 8192 KiB from 10 s to 12 s; rank 1 the same from 10.5 s
    // to 12.5 s on a clock 500 ms ahead (10 s to 12 s on rank 0's); rank 2 from 10 s to
    // 14 s. Creates: 1024 files each, 100 ms apart, too short for a rate of their own.
    let ranks = vec![
        rank(
            0,
            "a",
            0.0,
            vec![
                bonnie_test(PutBlock, 10_000, 2_000, 8192.0),
                bonnie_test(SeqCreate, 20_000, 100, 1024.0),
            ],
        ),
        rank(
            1,
            "b",
            500.0,
            vec![
                bonnie_test(PutBlock, 10_500, 2_000, 8192.0),
                bonnie_test(SeqCreate, 20_600, 100, 1024.0),
            ],
        ),
        rank(
            2,
            "c",
            0.0,
            vec![
                bonnie_test(PutBlock, 10_000, 4_000, 8192.0),
                bonnie_test(SeqCreate, 20_200, 100, 1024.0),
            ],
        ),
    ];
    let run = merge("mpi", ranks).unwrap();
    let h = run.hosts.as_ref().unwrap().bonnie.as_ref().unwrap();
    let names: Vec<&str> = h.hosts.iter().map(|h| h.result.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    let put = &h.tests[0];
    assert_eq!(put.id, PutBlock);
    assert_eq!(put.work, 3.0 * 8192.0);
    assert_eq!(
        (put.first_done_ns, put.last_done_ns),
        (2_000_000_000, 4_000_000_000)
    );
    assert!((put.rate - 3.0 * 8192.0 / 4.0).abs() < 1e-9, "{put:?}");
    let spans: Vec<(u64, u64)> = put
        .per_rank
        .iter()
        .map(|p| (p.start_ns, p.end_ns))
        .collect();
    assert_eq!(
        spans,
        [(0, 2_000_000_000), (0, 2_000_000_000), (0, 4_000_000_000)]
    );
    // The aggregate suite: named for the hosts, IOR's rate, all ranks' CPU over its span.
    let all = run.bonnie.as_ref().unwrap();
    assert_eq!(all.name, "all 3");
    assert_eq!(all.tests[0].rate, Some(put.rate));
    let cpu = all.tests[0].cpu_pct.unwrap();
    assert!(
        (cpu - 20.0).abs() < 1e-9,
        "(0.2 + 0.2 + 0.4) s over 4 s: {cpu}"
    );
    assert_eq!(all.tests[0].max_latency_ns, Some(4_000_000));
    // Creates: 300 ms from the first start to the last end, shorter than bonnie++'s
    // minimum: no rate shown, the figure kept.
    let create = &h.tests[1];
    assert_eq!(create.last_done_ns, 300_000_000);
    assert!((create.rate - 3072.0 / 0.3).abs() < 1e-6);
    assert_eq!(all.tests[1].rate, None);
    assert_eq!(all.tests[1].cpu_pct, None);
    assert!(run.notes.iter().any(|n| {
        n.code == "info.hosts.bonnie"
            && n.message
                .starts_with("all 3: each test's work on every host")
    }));
    // Rank 2's block write at half the others' rate is a straggler; nothing else is.
    let slow: Vec<&str> = run
        .notes
        .iter()
        .filter(|n| n.code == "warn.straggler")
        .map(|n| n.message.as_str())
        .collect();
    assert_eq!(slow.len(), 1, "{slow:?}");
    assert!(
        slow[0].starts_with("block write: c (rank 2) at 2048.0 KiB/s"),
        "{}",
        slow[0]
    );
}

#[test]
fn a_failed_rank_is_left_out_of_the_aggregate_and_named() {
    let mut ranks = vec![
        rank(
            0,
            "a",
            0.0,
            vec![bonnie_test(PutBlock, 10_000, 1_000, 100.0)],
        ),
        rank(1, "b", 0.0, vec![]),
    ];
    ranks[1].result = Err("rank 1 could not go on".into());
    let run = merge("mpi", ranks).unwrap();
    let h = run.hosts.as_ref().unwrap().bonnie.as_ref().unwrap();
    assert_eq!(h.hosts.len(), 1);
    assert_eq!(h.tests[0].work, 100.0);
    assert_eq!(run.bonnie.as_ref().unwrap().name, "all 1");
    assert!(run.notes.iter().any(|n| n.code == "warn.rank"));
}

#[test]
fn fio_runs_have_no_bonnie_part() {
    let r = RankRun {
        rank: 0,
        host: "a".into(),
        clock_offset_ms: 0.0,
        result: Ok(crate::fixtures::run_with(crate::fixtures::job())),
    };
    let run = merge("mpi", vec![r]).unwrap();
    assert!(run.hosts.unwrap().bonnie.is_none());
    assert!(run.bonnie.is_none());
}
