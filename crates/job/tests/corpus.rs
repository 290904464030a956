//! The checked-in job files under tests/jobs: each resolves, to what it says it does.

mod common;

use std::time::Duration;

use common::{HOST, corpus_dir, parse_args};
use storbench_job::{
    BlockSize, FileService, JobSpec, RandomDistribution, RateProcess, RwKind, SizeSpec, Workload,
};

fn load(name: &str) -> Workload {
    let path = corpus_dir().join(name).display().to_string();
    match parse_args(&[path]) {
        Ok(inv) => inv.workload,
        Err(e) => panic!("{name}: {e}"),
    }
}

fn names_and_groups(w: &Workload) -> Vec<(&str, u32)> {
    w.jobs.iter().map(|j| (j.name.as_str(), j.group)).collect()
}

#[test]
fn every_corpus_file_resolves() {
    let mut seen = 0;
    for entry in std::fs::read_dir(corpus_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "fio") {
            let name = path.file_name().unwrap().to_str().unwrap();
            let w = load(name);
            assert!(!w.jobs.is_empty(), "{name}");
            seen += 1;
        }
    }
    assert!(seen >= 12, "corpus has only {seen} files");
}

#[test]
fn article() {
    let w = load("article-randrw.fio");
    let j = &w.jobs[0];
    assert_eq!((j.numjobs, j.group, j.iodepth), (12, 0, 32));
    assert_eq!(j.rw.kind, RwKind::RandRw);
    assert!(j.time_based && j.group_reporting && j.direct && j.disable_clat);
    // A job file's section name is not one of its options (fio's JSON agrees).
    assert!(!j.options.iter().any(|(k, _)| k == "name"));
}

#[test]
fn desktop_disk_mark_is_six_stonewalled_groups_on_one_file() {
    let w = load("desktop-disk-mark.fio");
    let groups: Vec<u32> = w.jobs.iter().map(|j| j.group).collect();
    assert_eq!(groups, [0, 1, 2, 3, 4, 5]);
    assert!(w.jobs.iter().all(|j| j.stonewall
        && j.filenames.len() == 1
        && j.filenames[0].expose() == "/tmp/sb-diskmark.bin"));
    assert!(
        w.jobs
            .iter()
            .all(|j| !j.randrepeat && j.norandommap && j.buffers.refill_buffers)
    );
    let q: Vec<(u64, u32)> = w.jobs.iter().map(|j| (j.bs[0].max(), j.iodepth)).collect();
    assert_eq!(q[..4], [(1 << 20, 8), (1 << 20, 1), (4096, 32), (4096, 1)]);
    assert_eq!(w.jobs[0].ramp_time, Duration::from_secs(1));
}

#[test]
fn oltp_mix() {
    let j = &load("oltp-mix.fio").jobs[0];
    assert_eq!(j.rwmixread, 70);
    assert_eq!(
        j.bs[0],
        BlockSize::Split(vec![(8192, 80), (16384, 10), (65536, 10)])
    );
    assert_eq!(j.bs[1], BlockSize::Split(vec![(8192, 60), (4096, 40)]));
    assert_eq!(j.bs[2], j.bs[1]);
    assert_eq!(j.rate_iops, [Some(2000), Some(800), Some(800)]);
    assert_eq!(j.rate_process, RateProcess::Poisson);
    assert_eq!(
        (j.iodepth_batch_submit, j.iodepth_batch_complete_max),
        (4, 8)
    );
    assert_eq!(j.fdatasync, 32);
    assert_eq!(j.percentile_list, [50.0, 90.0, 99.0, 99.9, 99.99]);
    assert_eq!(j.runtime, Some(Duration::from_secs(120)));
    assert_eq!(j.filename_format, "oltp.$jobnum");
}

#[test]
fn backup_stream() {
    let w = load("backup-stream.fio");
    assert_eq!(
        names_and_groups(&w),
        [("write-stream", 0), ("read-back", 1)]
    );
    let write = &w.jobs[0];
    assert_eq!(write.buffers.compress_percentage, 50);
    assert!(
        write.buffers.refill_buffers,
        "compression turns refill on, as in fio"
    );
    assert_eq!(write.buffers.compress_chunk, 4096);
    assert!(write.end_fsync);
    assert_eq!(write.size, Some(SizeSpec::Bytes(4 << 30)));
    assert!(w.jobs[1].overwrite, "a reading job lays its file out");
}

#[test]
fn vm_boot_storm() {
    let j = &load("vm-boot-storm.fio").jobs[0];
    assert_eq!(
        j.bs[0],
        BlockSize::Range {
            min: 4096,
            max: 65536
        }
    );
    assert_eq!(j.random_distribution, RandomDistribution::Zipf(1.2));
    assert!(
        j.norandommap,
        "a non-uniform distribution turns the map off"
    );
    assert_eq!((j.randseed, j.randrepeat), (1234, false));
    assert_eq!(j.startdelay, (Duration::ZERO, Duration::from_secs(10)));
    assert_eq!(j.offset_increment, SizeSpec::Bytes(256 << 20));
    assert_eq!(j.size, Some(SizeSpec::Bytes(256 << 20)));
    assert_eq!(
        j.description.as_deref(),
        Some("Golden image reads while eight guests boot")
    );
}

#[test]
fn latency_probe() {
    let j = &load("latency-probe.fio").jobs[0];
    assert_eq!(j.ioengine, "pvsync2");
    assert_eq!(j.engine_options.given(), ["hipri"]);
    assert!(!j.engine_options.hipri);
    assert_eq!(j.rate_iops[0], Some(100));
    assert!(j.lat_percentiles && j.clat_percentiles);
    assert_eq!(j.percentile_list.len(), 7);
    assert_eq!(j.significant_figures, 6);
}

#[test]
fn metadata_engines() {
    let w = load("metadata.fio");
    let engines: Vec<&str> = w.jobs.iter().map(|j| j.ioengine.as_str()).collect();
    assert_eq!(engines, ["filecreate", "filestat", "filedelete"]);
    assert!(
        w.jobs
            .iter()
            .all(|j| j.nrfiles == 10_000 && j.filesize == Some((4096, 4096)))
    );
    assert_eq!(
        names_and_groups(&w),
        [("create", 0), ("stat", 1), ("delete", 2)]
    );
}

#[test]
fn includes_nest() {
    let w = load("with-includes.fio");
    let seq = &w.jobs[0];
    assert_eq!((seq.ioengine.as_str(), seq.iodepth), ("libaio", 16));
    assert_eq!(seq.bs[0], BlockSize::Fixed(256 << 10));
    assert_eq!(w.jobs[1].bs[0], BlockSize::Fixed(4096));
    assert_eq!(w.jobs[1].iodepth, 1);
    assert_eq!(
        w.job_files.len(),
        4,
        "the file and its three includes are kept"
    );
}

#[test]
fn env_and_keywords() {
    let j = &load("env-and-keywords.fio").jobs[0];
    assert_eq!(j.size, Some(SizeSpec::Bytes(64 << 20)));
    assert_eq!(u64::from(j.numjobs), HOST.ncpus);
    assert_eq!(u64::from(j.iodepth), HOST.ncpus * 8);
    assert_eq!(u64::from(j.nrfiles), HOST.ncpus * 2);
    assert_eq!(j.runtime, Some(Duration::from_secs(90)));
    assert_eq!(j.ramp_time, Duration::from_secs(3));
}

#[test]
fn several_globals() {
    let w = load("several-globals.fio");
    let bs: Vec<(RwKind, u64)> = w.jobs.iter().map(|j| (j.rw.kind, j.bs[0].max())).collect();
    assert_eq!(
        bs,
        [
            (RwKind::RandRead, 4096),
            (RwKind::Write, 65536),
            (RwKind::Read, 65536),
            (RwKind::Write, 4000)
        ]
    );
    let si: &JobSpec = &w.jobs[3];
    assert_eq!((si.kb_base, si.size), (1000, Some(SizeSpec::Bytes(16_000))));
}

#[test]
fn io_uring_tuned() {
    let j = &load("io-uring-tuned.fio").jobs[0];
    let o = &j.engine_options;
    assert_eq!(
        o.given(),
        [
            "fixedbufs",
            "registerfiles",
            "sqthread_poll",
            "sqthread_poll_cpu",
            "nowait"
        ]
    );
    assert!(o.fixedbufs && o.registerfiles && o.sqthread_poll && !o.nowait);
    assert_eq!(o.sqthread_poll_cpu, Some(1));
}

#[test]
fn network_targets() {
    let w = load("nfs-share.fio");
    assert_eq!(
        names_and_groups(&w),
        [("nfs-seq-read", 0), ("nfs-rand-write", 1)]
    );
    assert!(w.jobs.iter().all(|j| j.ioengine == "nfs"
        && j.engine_options.given() == ["nfs_url"]
        && j.engine_options.nfs_url.as_ref().map(|u| u.text.expose())
            == Some("nfs://192.0.2.10/export/bench")));
    let lun = &load("iscsi-lun.fio").jobs[0];
    assert_eq!(lun.ioengine, "libiscsi");
    assert_eq!(
        lun.filenames[0].expose(),
        "iscsi://192.0.2.20:3260/iqn.2026-11.lab.nas:storage/1"
    );
    assert_eq!(lun.rwmixread, 70);
    assert_eq!(
        (lun.size, lun.offset),
        (Some(SizeSpec::Percent(10.0)), SizeSpec::Percent(50.0))
    );
    assert_eq!(lun.file_service, FileService::RoundRobin);
}
