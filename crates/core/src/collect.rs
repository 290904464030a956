//! Turns one worker's output and samples into a [`JobResult`].

use storbench_job::{JobSpec, UnifiedRw as JobUnified};

use crate::sampler::WorkerSamples;
use crate::worker::{WorkerFile, WorkerOutput};
use storbench_model::result::{
    JobHeader, JobResult, Measured, ReportSettings, SampleStats, UnifiedRw,
};

/// The start-of-job header; `engine` is the engine that actually ran, if known.
pub fn header_of(job: &JobSpec, engine: Option<&str>) -> JobHeader {
    let rw = if job.rw.nr > 1 {
        format!("{}:{}", job.rw.kind.fio_name(), job.rw.nr)
    } else if job.rw.hole > 0 {
        format!("{}:{}", job.rw.kind.fio_name(), job.rw.hole)
    } else {
        job.rw.kind.fio_name().to_string()
    };
    let ran = engine
        .filter(|e| !e.is_empty())
        .unwrap_or(&job.ioengine)
        .to_string();
    JobHeader {
        requested_ioengine: (ran != job.ioengine && !is_alias(&job.ioengine, &ran))
            .then(|| job.ioengine.clone()),
        rw,
        bs: std::array::from_fn(|d| (job.bs[d].min(), job.bs[d].max())),
        ioengine: if engine.is_some() {
            ran
        } else {
            job.ioengine.clone()
        },
        iodepth: job.iodepth,
        numjobs: job.numjobs,
        direct: job.direct,
    }
}

/// Names that are the same engine under the catalogue's aliases.
fn is_alias(requested: &str, ran: &str) -> bool {
    storbench_job::catalogue::find(requested).is_some_and(|e| e.answers_to(ran))
}

pub fn settings_of(job: &JobSpec) -> ReportSettings {
    ReportSettings {
        kb_base: job.kb_base,
        unit_base: job.unit_base,
        significant_figures: job.significant_figures,
        percentile_list: job.percentile_list.clone(),
        clat_percentiles: job.clat_percentiles,
        lat_percentiles: job.lat_percentiles,
        slat_percentiles: job.slat_percentiles,
        unified_rw: match job.unified_rw {
            JobUnified::None => UnifiedRw::None,
            JobUnified::Mixed => UnifiedRw::Mixed,
            JobUnified::Both => UnifiedRw::Both,
        },
        slat_measured: !job.disable_slat,
        clat_measured: !job.disable_clat,
        lat_measured: !job.disable_lat,
        bw_measured: !job.disable_bw,
    }
}

/// Builds the result of one job clone. `helper_ns` is this clone's share of CPU spent in
/// helper threads (io_uring workers, AIO threads), added to its system time.
pub fn job_result(
    job: &JobSpec,
    clone: u32,
    out: WorkerOutput,
    samples: &mut WorkerSamples,
    helper_ns: u64,
    files: &[WorkerFile],
) -> JobResult {
    let runtime_ns = out.measure_end.saturating_sub(out.measure_start).as_nanos() as u64;
    let runtime_ms = runtime_ns.div_ceil(1_000_000);
    let measured = measured_of(job, &out, files);
    let (error, error_text) = job_error(&out);
    let mut dirs = out.stats.dirs;
    let active: [bool; 3] = std::array::from_fn(|d| dirs[d].total_ios > 0);
    let (bw, iops) = samples.take_samples(active);
    // fio gives a direction a runtime (and so a rate, a group line and bandwidth samples)
    // only when it moved bytes: a job without files (cpuio, exec) counts IOs of 0 bytes.
    let no_file = job.has_no_file();
    for d in 0..3 {
        if active[d] {
            if !no_file {
                dirs[d].runtime_ms = runtime_ms.max(1);
                dirs[d].bw_samples = SampleStats::from_values(&bw[d]);
            }
            dirs[d].iops_samples = SampleStats::from_values(&iops[d]);
        }
    }
    let mut cpu = out.cpu.into_cpu_usage();
    cpu.sys_ns += helper_ns;
    cpu.helper_ns = helper_ns;
    let mut engine_details = out.engine_info.details.clone();
    if let Some(iface) = &out.engine_info.interface {
        engine_details.push(("interface".into(), iface.clone()));
    }
    JobResult {
        name: job.name.clone(),
        groupid: job.group,
        jobnum: clone,
        jobs: 1,
        pid: out.pid.unwrap_or_else(std::process::id),
        error,
        error_text,
        description: job.description.clone(),
        options: job.options.clone(),
        header: header_of(job, Some(out.engine_name)),
        settings: settings_of(job),
        targets: files.iter().map(|f| f.spec.path.clone()).collect(),
        elapsed_ms: out.elapsed.as_millis() as u64,
        runtime_ms,
        end_unix_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
        dirs,
        sync: out.stats.sync,
        cpu,
        depth: out.stats.depth,
        lat_buckets: out.stats.lat_buckets,
        timeline: std::mem::take(&mut samples.timeline),
        engine_details,
        disks: Vec::new(),
        server_cpu: Vec::new(),
        measured,
        steadystate: None,
        latency_target: out.latency_depth.map(|depth| {
            storbench_model::result::LatencyTargetResult {
                target_ns: job.latency.target_us.saturating_mul(1000),
                window_us: job.latency.window_us,
                percentile: job.latency.percentile,
                depth,
            }
        }),
    }
}

/// The job's error as fio shows it: the one that stopped it, else (fio's
/// `continue_on_error`) the first one it went past, whose text is kept only with
/// `error_dump`.
fn job_error(out: &WorkerOutput) -> (i32, Option<String>) {
    if let Some(e) = &out.error {
        return (e.errno.unwrap_or(libc::EIO), Some(e.message.clone()));
    }
    let counted = &out.stats.errors;
    match counted.total {
        0 => (0, None),
        _ => (
            counted.first,
            Some(counted.first_text.clone().unwrap_or_default()),
        ),
    }
}

/// What the verdicts need beyond the figures: the region the files span, the sampled
/// reads' zeros and the region's holes, and whether compressible data met a compressing target (looked up only
/// when the job wrote such data).
fn measured_of(job: &JobSpec, out: &WorkerOutput, files: &[WorkerFile]) -> Measured {
    let mut m = Measured {
        region_bytes: files.iter().map(|f| f.len).sum(),
        sampled_reads: out.stats.sampled_reads,
        zero_reads: out.stats.zero_reads,
        own_read_bytes: Some(out.cpu.read_bytes),
        errors: job
            .errors
            .counts()
            .then(|| storbench_model::result::ErrorCount {
                stopped: out.error.is_some(),
                ..out.stats.errors.clone()
            }),
        ..Default::default()
    };
    if out.stats.dirs[0].io_bytes > 0 && !storbench_job::catalogue::fakes_io(&job.ioengine) {
        m.hole_bytes = crate::holes::hole_bytes(files).or(out.stats.hole_bytes);
    }
    if out.stats.dirs[1].io_bytes > 0 && !storbench_job::catalogue::fakes_io(&job.ioengine) {
        m.compressible = crate::compress::compressible(&job.buffers);
    }
    if m.compressible.is_some() {
        let here = storbench_job::target::Target::Path(".".into());
        let target = files.first().map_or(&here, |f| &f.spec.target);
        match crate::compress::of_target(target) {
            Ok(c) => m.target_compression = Some(c),
            Err(why) => m.compression_unknown = Some(why),
        }
    }
    m
}

/// Each job's bytes read from block devices: its worker threads' own (`Usage::read_bytes`,
/// kept by `measured_of`) plus a share of what the process's other threads read over the
/// batch (io_uring and AIO helpers submit for the workers), shared by bytes reported read.
/// Kept only when the process's figure (/proc/self/io) was read: the kernel then keeps the
/// threads' too.
pub fn apportion_reads(results: &mut [(u32, JobResult)], process_read: Option<u64>) {
    let threads: u64 = results
        .iter()
        .map(|(_, r)| r.measured.own_read_bytes.unwrap_or(0))
        .sum();
    let reported: u64 = results.iter().map(|(_, r)| r.dirs[0].io_bytes).sum();
    for (_, r) in results.iter_mut() {
        r.measured.own_read_bytes = process_read.map(|process| {
            let helpers = process.saturating_sub(threads);
            let share = if reported > 0 {
                (helpers as f64 * r.dirs[0].io_bytes as f64 / reported as f64) as u64
            } else {
                0
            };
            r.measured.own_read_bytes.unwrap_or(0) + share
        });
    }
}
