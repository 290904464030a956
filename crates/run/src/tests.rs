use std::sync::Mutex;

use storbench_job::target::Target;
use storbench_job::{FadviseHint, SizeSpec};

use super::*;
use storbench_core::engine::Engine;
use storbench_core::testing::Recorder;

fn ran(start_ms: u64, elapsed_ms: u64) -> WorkerOutput {
    let mut out = panic_output();
    out.error = None;
    out.elapsed = Duration::from_millis(elapsed_ms);
    out.measure_end = Duration::from_millis(start_ms + elapsed_ms);
    out
}

/// The devices' busy time is read around the whole batch, so it is divided by the
/// span the jobs were active (ramp and start delays included), not by a runtime.
#[test]
fn the_active_span_runs_from_the_first_start_to_the_last_end() {
    assert_eq!(active_span_ms(&[ran(100, 10_000)]), Some(10_000));
    // A job delayed by 3 s that ends 1 s after the first one.
    let outputs = [ran(100, 10_000), ran(3_100, 8_000), panic_output()];
    assert_eq!(active_span_ms(&outputs), Some(11_000));
    assert_eq!(active_span_ms(&[panic_output()]), None);
}

/// A block device node a job can name; the recorder engine never touches it.
fn some_block_device() -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    std::fs::read_dir("/dev")
        .ok()?
        .flatten()
        .find(|e| e.file_type().is_ok_and(|t| t.is_block_device()))
        .map(|e| e.path().display().to_string())
}

#[test]
fn block_devices_are_invalidated_before_the_job_like_files() {
    let Some(dev) = some_block_device() else {
        eprintln!("skipped: no block device node in /dev");
        return;
    };
    let mut job = JobSpec::new("d");
    job.filenames = vec![Target::classify(&dev)];
    job.size = Some(SizeSpec::Bytes(16384));
    job.fadvise_hint = FadviseHint::None;
    let log = Arc::new(Mutex::new(Vec::new()));
    let engine_log = log.clone();
    run_jobs(vec![job], move || {
        Recorder::new(engine_log.clone(), 1 << 30)
    });
    // fio drops a device's cache (BLKFLSBUF) when the job opens it, as a file's.
    assert_eq!(*log.lock().unwrap(), ["invalidate"]);
}

/// A cache drop that fails (BLKFLSBUF for a user who is not root) does not stop a
/// job, as in fio, but a buffered job is warned that its reads may come from memory.
#[test]
fn a_refused_cache_drop_warns_buffered_jobs() {
    for direct in [false, true] {
        let mut job = JobSpec::new("d");
        job.filenames = vec![Target::classify("/nonexistent/storbench-recorder-only")];
        job.size = Some(SizeSpec::Bytes(16384));
        job.direct = direct;
        let log = Arc::new(Mutex::new(Vec::new()));
        let run = run_jobs(vec![job], move || {
            Recorder::refusing_drops(log.clone(), 1 << 20)
        });
        let warned: Vec<&str> = run
            .notes
            .iter()
            .filter(|n| n.code == "warn.cache-drop")
            .map(|n| n.message.as_str())
            .collect();
        if direct {
            assert!(warned.is_empty(), "{warned:?}");
        } else {
            assert_eq!(
                warned,
                [
                    "d: the page cache of /nonexistent/storbench-recorder-only was not dropped (only root may drop a block device's cache): buffered reads may be served from memory"
                ]
            );
        }
    }
}

/// The runner tells a worker whether its region ends the file, which fio's rule needs:
/// a time-based `rw=read:4k` over a whole 16 KiB file wraps past its end silently and
/// keeps the cache, while over the first 16 KiB of a larger file each pass ends the file
/// and reopening it drops the region's cache.
#[test]
fn a_skip_wraps_silently_only_where_the_region_ends_the_file() {
    for (file_size, drops) in [(16384, 0), (1 << 20, 3)] {
        let mut job = JobSpec::new("s");
        job.filenames = vec![Target::classify("/nonexistent/storbench-recorder-only")];
        job.size = Some(SizeSpec::Bytes(16384));
        job.rw.hole = 4096;
        job.time_based = true;
        job.runtime = Some(Duration::from_secs(60));
        // 2 reads per pass: the 3rd, 5th and 7th start a new one.
        job.number_ios = Some(7);
        job.fadvise_hint = FadviseHint::None;
        let log = Arc::new(Mutex::new(Vec::new()));
        let engine_log = log.clone();
        run_jobs(vec![job], move || {
            Recorder::new(engine_log.clone(), file_size)
        });
        let calls = log.lock().unwrap().clone();
        // The first drop is the runner's, when the job opens its file.
        assert_eq!(calls[0], "invalidate", "{file_size}");
        assert_eq!(calls[1..], vec!["invalidate 0+16384"; drops], "{file_size}");
    }
}

/// Runs `jobs` with engines from `engine`, no observer.
fn run_jobs(jobs: Vec<JobSpec>, engine: impl Fn() -> Recorder + Sync + 'static) -> RunResult {
    let workload = Workload {
        jobs,
        global_options: vec![],
        job_files: vec![],
    };
    let factory =
        move |_: &JobSpec| -> Result<Box<dyn Engine>, EngineError> { Ok(Box::new(engine())) };
    let req = RunRequest {
        workload: &workload,
        mode: RunMode::Fio,
        command_line: vec![],
        always_remove_created: false,
    };
    run_with(req, &factory, &mut NoObserver).unwrap()
}

/// A time-based job `name` of `runtime_ms` on the recorder's pretend file.
fn timed_job(name: &str, runtime_ms: u64) -> JobSpec {
    let mut job = JobSpec::new(name);
    job.filenames = vec![Target::classify("/nonexistent/storbench-recorder-only")];
    job.size = Some(SizeSpec::Bytes(1 << 20));
    job.time_based = true;
    job.runtime = Some(Duration::from_millis(runtime_ms));
    job
}

/// A job whose engine is connected to a server on this host records the server's CPU
/// over the job, judged like the client's. The "server" is a child shell spinning
/// while it holds a listening socket of the test's. The recorder takes 300 ms to close
/// its file: the server's CPU is read when the measurement ends, not after that.
#[test]
fn a_server_on_this_host_has_its_cpu_measured_around_the_job() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&listener);
    let mut server = storbench_core::testing::child_holding(fd, "while :; do :; done");
    drop(listener);
    let log = Arc::new(Mutex::new(Vec::new()));
    let result = std::panic::catch_unwind(|| {
        run_jobs(vec![timed_job("j", 1000)], move || {
            Recorder::connected_to(log.clone(), 1 << 20, addr)
                .closing_in(Duration::from_millis(300))
        })
    });
    server.kill().unwrap();
    server.wait().unwrap();
    let run = result.unwrap();
    let job = &run.groups[0].jobs[0];
    assert_eq!(job.server_cpu.len(), 1, "{:?}", job.server_cpu);
    let s = &job.server_cpu[0];
    assert_eq!((s.process.as_str(), s.pid), ("sh", server.id()));
    assert_eq!(s.addr, addr.to_string());
    assert!(s.same_host);
    // Read by the sampler within a poll (50 ms) of the measurement's start and end: the
    // 300 ms close is outside. Either reading may come late on a loaded machine, so only
    // the close is bounded tightly.
    assert!((500..1300).contains(&s.duration_ms), "{s:?}");
    // A spinning shell on a machine this test shares gets some CPU, never more than one
    // (its one thread; ticks of 10 ms make up the rest).
    assert!(s.cpu_ns() > 0 && s.percent() < 110.0, "{s:?}");
    assert_eq!(s.busiest_thread_ns, Some(s.cpu_ns()), "{s:?}");
}

/// The sum of a timeline's IOs is the job's, and its last point ends with the job's own
/// measurement (the point's time and the runtime are read a few microseconds apart).
fn assert_timeline_ends_with_the_job(job: &JobResult) {
    let last = job.timeline.last().expect("a timeline");
    assert!(
        last.t_ms.abs_diff(job.runtime_ms) <= 2,
        "{}: the last point ends at {} ms, the measurement at {} ms: {:?}",
        job.name,
        last.t_ms,
        job.runtime_ms,
        job.timeline
            .iter()
            .map(|p| (p.t_ms, p.ios[0]))
            .collect::<Vec<_>>()
    );
    let total: u64 = job.timeline.iter().map(|p| p.ios[0]).sum();
    assert_eq!(total, job.dirs[0].total_ios);
    assert!(
        job.timeline.iter().all(|p| p.ios[0] > 0),
        "{:?}",
        job.timeline
    );
}

/// An iSCSI job's last partial second ends where the measurement ended, not when the
/// sampler sees the worker gone after closing its files (an iSCSI logout), which would
/// spread the final completions over time with no IO and end the timeline far low.
#[test]
fn the_last_timeline_point_ends_with_the_measurement_not_the_close() {
    let mut job = timed_job("j", 1500);
    job.numjobs = 2;
    let log = Arc::new(Mutex::new(Vec::new()));
    let run = run_jobs(vec![job], move || {
        Recorder::closing_slowly(log.clone(), 1 << 20, Duration::from_millis(400))
    });
    let jobs = &run.groups[0].jobs;
    assert_eq!(jobs.len(), 2);
    jobs.iter().for_each(assert_timeline_ends_with_the_job);
}

/// A job of 1.8 s whose close takes 400 ms: the sampler's tick at 2 s lands in the close;
/// the last point ends at 1.8 s, not there (23% low).
#[test]
fn a_tick_during_the_close_does_not_stamp_the_last_point() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let run = run_jobs(vec![timed_job("j", 1800)], move || {
        Recorder::closing_slowly(log.clone(), 1 << 20, Duration::from_millis(400))
    });
    assert_timeline_ends_with_the_job(&run.groups[0].jobs[0]);
}

/// Jobs of one batch that end at different times each end their timeline with
/// their own measurement, not the batch's last one.
#[test]
fn jobs_ending_at_different_times_each_end_their_own_timeline() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let run = run_jobs(
        vec![timed_job("short", 1200), timed_job("long", 2500)],
        move || Recorder::new(log.clone(), 1 << 20),
    );
    let jobs: Vec<&JobResult> = run.groups.iter().flat_map(|g| &g.jobs).collect();
    assert_eq!(jobs.len(), 2);
    jobs.into_iter().for_each(assert_timeline_ends_with_the_job);
}

#[test]
fn stonewall_splits_batches() {
    let mut a = JobSpec::new("a");
    let b = JobSpec::new("b");
    let mut c = JobSpec::new("c");
    c.stonewall = true;
    a.group = 0;
    let jobs: Vec<Arc<JobSpec>> = [a, b, c].into_iter().map(Arc::new).collect();
    let bs = batches(&jobs);
    assert_eq!(bs.len(), 2);
    assert_eq!(bs[0].len(), 2);
    assert_eq!(bs[1][0].name, "c");
}

/// The sampler's wake-up counts every worker, also one that panicked, so a batch whose
/// worker panics still ends (the count is what ends the sampling loop).
#[test]
fn finished_workers_are_counted_also_when_they_panic() {
    let finished = Finished::new(2);
    std::thread::scope(|s| {
        let f = &finished;
        let ok = s.spawn(move || {
            let _tell = f.on_exit();
        });
        let panicked = s.spawn(move || {
            let _tell = f.on_exit();
            panic!("a worker that panics");
        });
        ok.join().unwrap();
        assert!(panicked.join().is_err());
    });
    assert_eq!(finished.count(), 2);
}

/// What is local or networked is asked of the typed target: a URL directory is not looked
/// for on this machine and has no local device below it; a missing local one is one line.
#[test]
fn network_directories_are_told_from_local_ones_by_their_typed_target() {
    let networked = |text: &str| {
        let job = Arc::new(JobSpec {
            directories: vec![Target::classify(text)],
            ..JobSpec::new("n")
        });
        let targets = targets_of(&[job]);
        assert_eq!(targets.len(), 1);
        targets[0].caps().network
    };
    assert!(networked("nfs://127.0.0.1/export/d?version=3"));
    assert!(networked("smb://127.0.0.1:4455/share/d"));
    assert!(!networked("/tmp"));
    assert!(!networked("relative/dir"));

    let mut remote = JobSpec::new("r");
    remote.directories = vec![Target::classify("nfs://127.0.0.1/export/absent")];
    assert!(check_directories(&[Arc::new(remote.clone())]).is_ok());
    assert!(local_devices(&[Arc::new(remote)]).is_empty());

    let mut local = JobSpec::new("l");
    local.directories = vec![Target::classify("/nonexistent/storbench-dir")];
    let err = check_directories(&[Arc::new(local)]).unwrap_err();
    assert!(
        err.message.contains("directory=") && !err.message.contains('\n'),
        "{err}"
    );
}
