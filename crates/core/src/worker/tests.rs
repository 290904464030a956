//! The worker's tests: cache drops, rounds, loops and closing syncs, against a recording
//! engine. The pass rule's own table is tested in `passes.rs`.

use std::sync::Mutex;

use storbench_job::RwKind;

use super::*;
use crate::engine::OpenOptions;
use crate::gate::StartGate;
use crate::testing::{Recorder, SYNC_TIME};

const BLOCKS: u64 = 4;
/// The worker's region starts inside the file (offset=, or a clone's share).
const REGION_START: u64 = 8192;

/// Runs `job` for `ios` 4 KiB IOs over a 4-block region; returns the recorded calls.
fn calls(job: JobSpec, ios: u64) -> Vec<String> {
    run(job, ios).0
}

/// Like [`calls`], with the worker's output.
fn run(job: JobSpec, ios: u64) -> (Vec<String>, WorkerOutput) {
    let setup = Setup {
        io_limit: Some(ios * 4096),
        ..Setup::default()
    };
    run_on(job, &setup, ios)
}

/// Where and how a test worker runs.
struct Setup {
    /// Region starts, one file each (a drop is logged with its region's start).
    starts: Vec<u64>,
    /// The regions run to the end of their files (else the files go on for 1 MiB).
    ends_file: bool,
    skip_wraps: bool,
    io_limit: Option<u64>,
    /// The engine queues IO; `in_flight`: and keeps it in flight until reaped.
    queued: bool,
    in_flight: bool,
    /// The engine notes each IO's offset.
    log_ios: bool,
    iodepth: u32,
    /// How long the engine takes to drop a region's page cache.
    drop_time: Duration,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            starts: vec![REGION_START],
            ends_file: true,
            skip_wraps: false,
            io_limit: None,
            queued: false,
            in_flight: false,
            log_ios: false,
            iodepth: 1,
            drop_time: Duration::ZERO,
        }
    }
}

/// Runs `job` as `setup` says until it has done `ios` 4 KiB IOs over 4-block regions.
fn run_on(job: JobSpec, setup: &Setup, ios: u64) -> (Vec<String>, WorkerOutput) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let file = |start: &u64| WorkerFile {
        spec: FileSpec::new(
            storbench_job::target::Target::Path("f".into()),
            OpenOptions::default(),
        ),
        start: *start,
        len: BLOCKS * 4096,
        size: *start + BLOCKS * 4096 + if setup.ends_file { 0 } else { 1 << 20 },
        ends_file: setup.ends_file,
        skip_wraps: setup.skip_wraps,
    };
    let mut job = job;
    job.iodepth = setup.iodepth;
    let plan = WorkerPlan {
        job: Arc::new(job),
        clone: 0,
        thread: 0,
        seed: 1,
        files: setup.starts.iter().map(file).collect(),
        io_limit: setup.io_limit,
        counters: Arc::new(crate::progress::WorkerCounters::default()),
        clock: Clock::new(Instant::now()),
        log: None,
        own_process: false,
        together: Default::default(),
    };
    let engine_log = log.clone();
    let (queued, in_flight, log_ios) = (setup.queued, setup.in_flight, setup.log_ios);
    let drop_time = setup.drop_time;
    let factory = move |_: &JobSpec| -> Result<Box<dyn Engine>, EngineError> {
        let (log, size) = (engine_log.clone(), REGION_START + BLOCKS * 4096);
        Ok(Box::new(if in_flight {
            Recorder::in_flight(log, size)
        } else if queued {
            Recorder::queued(log, size)
        } else if log_ios {
            Recorder::logging_ios(log, size)
        } else if !drop_time.is_zero() {
            Recorder::dropping_slowly(log, size, drop_time)
        } else {
            Recorder::new(log, size)
        }))
    };
    let gate = StartGate::new(1, plan.clock);
    let out = run_worker(plan, &factory, &gate);
    assert!(out.error.is_none(), "{:?}", out.error);
    let done: u64 = out.stats.dirs.iter().map(|d| d.total_ios).sum();
    assert_eq!(done, ios);
    let calls = log.lock().unwrap().clone();
    (calls, out)
}

/// The cache drops of a time-based `job` doing `ios` IOs as `setup` says.
fn time_based_drops(mut job: JobSpec, setup: &Setup, ios: u64) -> Vec<String> {
    job.time_based = true;
    job.runtime = Some(Duration::from_secs(60));
    job.number_ios = Some(ios);
    job.fadvise_hint = FadviseHint::None;
    run_on(job, setup, ios).0
}

fn job(kind: RwKind) -> JobSpec {
    let mut j = JobSpec::new("t");
    j.rw.kind = kind;
    j
}

#[test]
fn files_are_advised_as_fio_does() {
    assert_eq!(calls(job(RwKind::RandRead), 1), ["Random"]);
    assert_eq!(calls(job(RwKind::Write), 1), ["Sequential"]);
    let mut j = job(RwKind::RandRead);
    j.fadvise_hint = FadviseHint::Sequential;
    assert_eq!(calls(j, 1), ["Sequential"]);
    let mut j = job(RwKind::RandRead);
    j.fadvise_hint = FadviseHint::None;
    assert!(calls(j, 1).is_empty());
}

/// A size-bound job on a synchronous engine makes one round in fio: a file whose pass
/// ends is done, and fio drops its cache when it opens it again, direct IO too.
#[test]
fn a_pass_that_ends_a_file_drops_its_cache_on_reopening_direct_or_not() {
    // 10 IOs over 4 blocks: passes start at the 5th and the 9th IO, and only the
    // region's pages go (fio's range; the whole file also dropped readahead past it).
    for kind in [RwKind::Read, RwKind::RandRead] {
        let mut j = job(kind);
        j.fadvise_hint = FadviseHint::None;
        let drops = ["invalidate 8192+16384"; 2];
        assert_eq!(calls(j.clone(), 10), drops, "{kind:?}");
        assert!(calls(j.clone(), 4).is_empty(), "{kind:?}: one pass");
        j.direct = true;
        assert_eq!(calls(j.clone(), 10), drops, "{kind:?}: direct");
        j.invalidate = false;
        assert!(calls(j, 10).is_empty(), "{kind:?}: invalidate=0");
    }
}

/// fio's `loop_cache_invalidate`: a time-based job over one file wraps a sequential
/// pass, or starts a full random map over, in place, and drops buffered pages only.
#[test]
fn a_time_based_pass_wraps_in_place_and_drops_buffered_pages_only() {
    let one = Setup::default();
    for kind in [RwKind::Read, RwKind::RandRead] {
        let drops = ["invalidate 8192+16384"; 2];
        assert_eq!(time_based_drops(job(kind), &one, 10), drops, "{kind:?}");
        let mut direct = job(kind);
        direct.direct = true;
        assert!(time_based_drops(direct, &one, 10).is_empty(), "{kind:?}");
    }
}

/// With several files, a time-based sequential pass ends the file: fio waits for the
/// others and reopens them all, dropping each one's cache, direct IO too.
#[test]
fn a_time_based_job_over_several_files_drops_them_on_reopening() {
    let two = Setup {
        starts: vec![REGION_START, 65536],
        ..Setup::default()
    };
    for direct in [false, true] {
        let mut j = job(RwKind::Read);
        j.direct = direct;
        // 20 IOs round robin: 10 per file, passes start at their 5th and 9th IO.
        let calls = time_based_drops(j, &two, 20);
        let mut drops = calls.clone();
        drops.sort();
        assert_eq!(
            drops,
            ["invalidate 65536+16384", "invalidate 65536+16384"]
                .into_iter()
                .chain(["invalidate 8192+16384"; 2])
                .collect::<Vec<_>>(),
            "direct={direct}: {calls:?}"
        );
    }
}

/// `rw=read:4k`: the skip after the last block steps past the end of the file, and fio
/// wraps silently, keeping the cache, only when the region starts at 0 (`skip_wraps`); a
/// region that starts further in (the last clone of `offset_increment=25% size=25%`), or
/// stops short of the end of the file, is done there instead, and reopened.
#[test]
fn a_skip_wraps_silently_only_where_fio_s_arithmetic_wraps() {
    let mut j = job(RwKind::Read);
    j.rw.hole = 4096;
    // 2 reads per pass over 4 blocks: 9 reads wrap 4 times.
    let at_zero = Setup {
        starts: vec![0],
        skip_wraps: true,
        ..Setup::default()
    };
    assert!(time_based_drops(j.clone(), &at_zero, 9).is_empty());
    let inside = Setup::default();
    assert!(inside.ends_file && !inside.skip_wraps);
    let calls = time_based_drops(j.clone(), &inside, 9);
    assert_eq!(calls, ["invalidate 8192+16384"; 4]);
    let short = Setup {
        ends_file: false,
        ..Setup::default()
    };
    let calls = time_based_drops(j, &short, 9);
    assert_eq!(calls, ["invalidate 8192+16384"; 4]);
}

/// The offsets of `ios` reads logged by a run as `setup` says, and the log.
fn read_offsets(job: JobSpec, setup: &Setup, ios: u64) -> (Vec<u64>, Vec<String>) {
    let setup = Setup {
        log_ios: true,
        starts: setup.starts.clone(),
        ..*setup
    };
    let mut job = job;
    job.fadvise_hint = FadviseHint::None;
    let calls = run_on(job, &setup, ios).0;
    let reads = calls
        .iter()
        .filter_map(|c| c.strip_prefix("read ")?.parse().ok())
        .collect();
    (reads, calls)
}

/// A random job's sequential IOs (`percentage_random`, `rw=randread:N`) that reach the
/// end of the file jump to a random block in fio, keeping the cache, unless the job is
/// time-based over one file (then they wrap in place).
#[test]
fn a_random_jobs_sequential_run_jumps_at_the_end_of_the_file() {
    let mut j = job(RwKind::RandRead);
    j.percentage_random = [0; 3];
    j.norandommap = true;
    let two = Setup {
        starts: vec![REGION_START, 65536],
        ..Setup::default()
    };
    assert!(time_based_drops(j.clone(), &two, 40).is_empty());
    let size_bound = Setup {
        io_limit: Some(40 * 4096),
        ..Setup::default()
    };
    let (reads, calls) = read_offsets(j.clone(), &size_bound, 40);
    assert!(calls.iter().all(|c| c.starts_with("read ")), "{calls:?}");
    // After the last block, a random block: not always the region's start (a silent
    // wrap), and never outside the region.
    let last = REGION_START + (BLOCKS - 1) * 4096;
    let after_last: Vec<u64> = reads
        .windows(2)
        .filter(|w| w[0] == last)
        .map(|w| w[1])
        .collect();
    assert!(after_last.len() >= 5, "{reads:?}");
    assert!(
        after_last.iter().any(|&o| o != REGION_START),
        "no jump: {reads:?}"
    );
    assert!(
        reads
            .iter()
            .all(|&o| (REGION_START..=last).contains(&o) && o % 4096 == 0),
        "{reads:?}"
    );
    let drops = time_based_drops(j, &Setup::default(), 10);
    assert_eq!(drops, ["invalidate 8192+16384"; 2]);
}

/// fio opens a file again with a fresh random map (`fio_file_reset`): a random job
/// (`rw=randread:2`) whose sequential run reaches the end of a region short of the end of
/// the file reopens it, and its map starts over, so the map fills only after a whole
/// pass of draws since the file was last opened.
#[test]
fn reopening_a_file_starts_its_random_map_over() {
    let mut j = job(RwKind::RandRead);
    j.rw.nr = 2;
    let short = Setup {
        ends_file: false,
        io_limit: Some(200 * 4096),
        ..Setup::default()
    };
    let (_, calls) = read_offsets(j, &short, 200);
    // Every other IO is a random draw (the first of each run of 2); a drop before a draw
    // ends a full map, before a sequential IO the end of the region.
    let (mut ios, mut draws, mut drops) = (0u64, 0u64, 0);
    for c in &calls {
        if c.starts_with("read ") {
            if ios % 2 == 0 {
                draws += 1;
            }
            ios += 1;
        } else if ios % 2 == 0 {
            assert_eq!(draws, BLOCKS, "a map filled early: {calls:?}");
            draws = 0;
            drops += 1;
        } else {
            draws = 0;
            drops += 1;
        }
    }
    assert!(drops > 0, "{calls:?}");
}

/// fio's `do_io` ends a round after size= bytes when the engine queues IO, and the next
/// round reopens the files: loops of a job whose files never end (norandommap, skips)
/// drop the cache per loop on libaio but not on psync, which makes one round.
#[test]
fn a_queued_engine_reopens_the_files_each_loop() {
    let mut j = job(RwKind::RandRead);
    j.norandommap = true;
    j.fadvise_hint = FadviseHint::None;
    for (queued, drops) in [(true, 2), (false, 0)] {
        let loops = Setup {
            io_limit: Some(3 * BLOCKS * 4096),
            queued,
            ..Setup::default()
        };
        let mut j = j.clone();
        j.loops = 3;
        let calls = run_on(j, &loops, 3 * BLOCKS).0;
        assert_eq!(calls.len(), drops, "queued={queued}: {calls:?}");
    }
}

/// fio's `do_io` reaps what is in flight and closes the files before the next round opens
/// them: no drop while IOs are in flight.
#[test]
fn a_new_round_drains_in_flight_ios_before_dropping() {
    let mut j = job(RwKind::RandRead);
    j.norandommap = true;
    j.fadvise_hint = FadviseHint::None;
    j.loops = 3;
    // Rounds of 4 IOs at depth 3: the 5th IO begins a round with the 4th in flight.
    let setup = Setup {
        io_limit: Some(3 * BLOCKS * 4096),
        in_flight: true,
        iodepth: 3,
        ..Setup::default()
    };
    let calls = run_on(j, &setup, 3 * BLOCKS).0;
    assert_eq!(calls, ["invalidate 8192+16384"; 2]);
}

/// fio ends each of a job's loops with its closing syncs, so overwriting one region
/// three times writes it out three times instead of once (measured: buffered
/// `loops=4 end_fsync=1` ran at twice fio's rate with one sync at the end).
#[test]
fn each_loop_ends_with_the_closing_syncs() {
    for (end_fsync, fsync_on_close, expected) in [
        (true, false, 3),
        (false, true, 4), // and once more, untimed, at close
        (false, false, 0),
    ] {
        let mut j = job(RwKind::Write);
        j.fadvise_hint = FadviseHint::None;
        j.loops = 3;
        j.end_fsync = end_fsync;
        j.fsync_on_close = fsync_on_close;
        let what = format!("end_fsync={end_fsync} fsync_on_close={fsync_on_close}");
        // Three loops over the 4-block region.
        let (calls, out) = run(j, 3 * BLOCKS);
        let syncs = calls.iter().filter(|c| *c == "fsync").count();
        assert_eq!(syncs, expected, "{what}: {calls:?}");
        assert_eq!(out.stats.sync.total_ios, 0, "{what}");
        let measured = out.measure_end - out.measure_start;
        if end_fsync || fsync_on_close {
            assert!(measured >= SYNC_TIME * 3, "{what}: measured {measured:?}");
        }
    }
}

#[test]
fn closing_syncs_are_timed_but_not_counted_as_in_fio() {
    for (end_fsync, fsync_on_close) in [(true, false), (false, true)] {
        let mut j = job(RwKind::Write);
        j.fadvise_hint = FadviseHint::None;
        j.fsync = 2;
        j.end_fsync = end_fsync;
        j.fsync_on_close = fsync_on_close;
        let what = format!("end_fsync={end_fsync} fsync_on_close={fsync_on_close}");
        let (calls, out) = run(j, 4);
        // 4 writes at fsync=2 make one sync of the job's own (the due one after the
        // last write is left to the closing sync); fio's JSON says sync total_ios=1.
        let syncs = calls.iter().filter(|c| *c == "fsync").count();
        assert!(syncs >= 2, "{what}: {calls:?}");
        assert_eq!(out.stats.sync.total_ios, 1, "{what}");
        // The closing sync is inside the measured runtime, as fio's bandwidth has it.
        let measured = out.measure_end - out.measure_start;
        assert!(measured >= SYNC_TIME * 2, "{what}: measured {measured:?}");
    }
}

/// Latency starts with the IO ready to go, as fio's start_time does: a slow page-cache
/// drop where a pass wraps (made while choosing the next offset) is in no IO's latency.
#[test]
fn a_drop_at_a_wrap_is_in_no_latency() {
    let setup = Setup {
        drop_time: Duration::from_millis(40),
        ..Setup::default()
    };
    let mut j = job(RwKind::Read);
    j.time_based = true;
    j.runtime = Some(Duration::from_secs(60));
    j.number_ios = Some(3 * BLOCKS);
    j.fadvise_hint = FadviseHint::None;
    let (calls, out) = run_on(j, &setup, 3 * BLOCKS);
    assert_eq!(
        calls
            .iter()
            .filter(|c| c.starts_with("invalidate "))
            .count(),
        2
    );
    let lat = &out.stats.dirs[0].lat;
    assert_eq!(lat.samples, 3 * BLOCKS);
    assert!(lat.max_ns < 40_000_000, "max latency {} ns", lat.max_ns);
}
