//! `parse_fio_args` end to end: command lines, job files, precedence, groups, errors.

mod common;

use std::time::Duration;

use common::{Scratch, error, parse, parse_args, words};
use storbench_job::{BlockSize, Eta, OutputFormat, RwKind, SizeSpec};

const ARTICLE: &str = "--bs=128k --direct=1 --directory=/mnt/pool/bench --gtod_reduce=1 \
    --ioengine=posixaio --iodepth=32 --group_reporting --name=randrw --numjobs=12 \
    --ramp_time=10 --runtime=60 --rw=randrw --size=256M --time_based";

#[test]
fn the_article_command_line_is_twelve_jobs_in_one_group() {
    let inv = parse(ARTICLE).unwrap();
    let w = &inv.workload;
    assert_eq!(w.jobs.len(), 1);
    let j = &w.jobs[0];
    assert_eq!(j.name, "randrw");
    assert_eq!(j.numjobs, 12);
    assert_eq!(w.jobs.iter().map(|j| j.numjobs).sum::<u32>(), 12);
    assert_eq!(j.group, 0);
    assert_eq!(
        j.bs,
        [
            BlockSize::Fixed(131072),
            BlockSize::Fixed(131072),
            BlockSize::Fixed(131072)
        ]
    );
    assert!(j.direct);
    assert_eq!(j.directories[0].expose(), "/mnt/pool/bench");
    assert!(j.disable_lat && j.disable_clat && j.disable_slat && j.disable_bw);
    assert!(!j.clat_percentiles);
    assert_eq!(j.ioengine, "posixaio");
    assert_eq!(j.iodepth, 32);
    assert_eq!(j.iodepth_batch_submit, 1);
    assert!(j.group_reporting);
    assert_eq!(j.ramp_time, Duration::from_secs(10));
    assert_eq!(j.runtime, Some(Duration::from_secs(60)));
    assert!(j.time_based);
    assert_eq!(j.rw.kind, RwKind::RandRw);
    assert_eq!(j.rwmixread, 50);
    assert_eq!(j.size, Some(SizeSpec::Bytes(256 << 20)));
    // What fio's JSON shows: values as given; flags are recorded with an empty value (the
    // JSON leaves them out).
    assert!(
        w.global_options
            .contains(&("group_reporting".into(), String::new()))
    );
    let global: Vec<(&str, &str)> = w
        .global_options
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        global,
        [
            ("bs", "128k"),
            ("direct", "1"),
            ("directory", "/mnt/pool/bench"),
            ("gtod_reduce", "1"),
            ("ioengine", "posixaio"),
            ("iodepth", "32")
        ]
    );
    let own: Vec<(&str, &str)> = j
        .options
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        own,
        [
            ("name", "randrw"),
            ("numjobs", "12"),
            ("ramp_time", "10"),
            ("runtime", "60"),
            ("rw", "randrw"),
            ("size", "256M")
        ]
    );
    assert!(inv.warnings.is_empty(), "{:?}", inv.warnings);
    assert_eq!(inv.output_formats, [OutputFormat::Normal]);
    assert_eq!(inv.eta, Eta::Auto);
}

#[test]
fn job_file_precedence_is_fios() {
    let dir = Scratch::new("prec");
    let f = dir.write(
        "p.fio",
        "[global]\nruntime=2\nbs=16k\n[a]\nbs=8k\n[b]\n[global]\nrw=write\n[c]\n",
    );
    let inv = parse(&format!("--runtime=1 --bs=4k --iodepth=8 {f}")).unwrap();
    let jobs = &inv.workload.jobs;
    let names: Vec<_> = jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    // job section > [global] above it > command-line globals > defaults
    assert_eq!(jobs[0].bs[0], BlockSize::Fixed(8192));
    assert_eq!(jobs[1].bs[0], BlockSize::Fixed(16384));
    assert!(
        jobs.iter()
            .all(|j| j.runtime == Some(Duration::from_secs(2)))
    );
    assert!(jobs.iter().all(|j| j.iodepth == 8));
    // a [global] applies only to the jobs below it
    assert_eq!(jobs[1].rw.kind, RwKind::Read);
    assert_eq!(jobs[2].rw.kind, RwKind::Write);
    let keys: Vec<_> = inv
        .workload
        .global_options
        .iter()
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(keys, ["runtime", "bs", "iodepth", "runtime", "bs", "rw"]);
    assert!(jobs[0].options == [("bs".to_string(), "8k".to_string())]);
    assert_eq!(inv.workload.job_files.len(), 1);
    assert_eq!(inv.workload.job_files[0].0, f);
}

#[test]
fn groups_from_stonewall_new_group_and_several_files() {
    let dir = Scratch::new("groups");
    let a = dir.write(
        "a.fio",
        "[global]\nioengine=null\nsize=1m\n[a1]\n[a2]\nstonewall\n[a3]\n[a4]\nnew_group\n",
    );
    let b = dir.write("b.fio", "[global]\nsize=1m\n[b1]\n[b2]\n");
    let inv = parse(&format!("{a} {b}")).unwrap();
    let groups: Vec<_> = inv
        .workload
        .jobs
        .iter()
        .map(|j| (j.name.as_str(), j.group, j.stonewall))
        .collect();
    assert_eq!(
        groups,
        [
            ("a1", 0, false),
            ("a2", 1, true),
            ("a3", 1, false),
            ("a4", 2, false),
            ("b1", 3, true),
            ("b2", 3, false)
        ]
    );
    // b.fio does not inherit a.fio's [global]
    assert_eq!(inv.workload.jobs[4].ioengine, "psync");
}

#[test]
fn command_line_jobs_and_global_sections() {
    let inv = parse(
        "--size=1m --name=global --rw=write --name=one --bs=8k --name=two --name=global --rw=randread --name=three",
    )
    .unwrap();
    let jobs = &inv.workload.jobs;
    assert_eq!(jobs.len(), 3);
    assert_eq!(jobs[0].rw.kind, RwKind::Write);
    assert_eq!(jobs[1].rw.kind, RwKind::Write);
    assert_eq!(jobs[1].bs[0], BlockSize::Fixed(4096));
    assert_eq!(jobs[2].rw.kind, RwKind::RandRead);
    assert!(
        jobs.iter()
            .all(|j| j.size == Some(SizeSpec::Bytes(1 << 20)))
    );
    assert_eq!(
        inv.workload.global_options[1],
        ("name".into(), "global".into())
    );
}

#[test]
fn section_filter() {
    let dir = Scratch::new("section");
    let f = dir.write("s.fio", "[global]\nsize=1m\n[a]\n[b]\nrw=write\n[c]\n");
    let inv = parse(&format!("--section=b --section c {f}")).unwrap();
    let names: Vec<_> = inv.workload.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["b", "c"]);
    assert!(
        inv.workload
            .jobs
            .iter()
            .all(|j| j.size == Some(SizeSpec::Bytes(1 << 20)))
    );
    assert_eq!(
        error(&format!("--section=zz {f}")),
        "no job section named 'zz'"
    );
}

#[test]
fn env_keywords_and_includes() {
    let dir = Scratch::new("inc");
    dir.write("common.inc", "ioengine=libaio\niodepth=($ncpus*4)\n");
    let f = dir.write(
        "k.fio",
        "[global]\nsize=${SIZE}\nnumjobs=${JOBS}\ninclude common.inc\n[k]\nbs=$pagesize\nnrfiles=$ncpus*2\n",
    );
    let inv = parse(&f).unwrap();
    let j = &inv.workload.jobs[0];
    assert_eq!(j.size, Some(SizeSpec::Bytes(64 << 20)));
    assert_eq!(j.numjobs, 3);
    assert_eq!(j.ioengine, "libaio");
    assert_eq!(j.iodepth, 16);
    assert_eq!(j.bs[1], BlockSize::Fixed(4096));
    assert_eq!(j.nrfiles, 8);
    assert!(j.options.contains(&("nrfiles".into(), "8".into())));
    assert!(
        inv.workload
            .global_options
            .contains(&("size".into(), "64m".into()))
    );
    assert_eq!(inv.workload.job_files.len(), 2);
}

#[test]
fn errors_are_one_line_and_say_where() {
    let dir = Scratch::new("errors");
    let f = dir.write("bad.fio", "[global]\nioengine=null\n\n[x]\nbs=4q\n");
    assert_eq!(
        error(&f),
        format!(
            "{f}:5: bs=4q: 'q' is not a size unit (use k, m, g, t, p, optionally followed by b, i or ib)"
        )
    );
    let f = dir.write("combo.fio", "[global]\nrate=1m\n\n[x]\nrate_iops=10\n");
    assert_eq!(
        error(&f),
        format!("{f}:4: job 'x': rate and rate_iops are mutually exclusive")
    );
    for (args, want) in [
        ("--name=x --bs=4q", "--bs=4q: 'q' is not a size unit"),
        (
            "--name=x --rw=randrw --rwmixread=150",
            "--rwmixread=150: 150 is more than 100 percent",
        ),
        (
            "--name=x --iodepth=0",
            "--iodepth=0: iodepth must be at least 1",
        ),
        (
            "--name=x --numjobs=0",
            "--numjobs=0: numjobs must be at least 1",
        ),
        (
            "--name=x --percentile_list=50:0",
            "--percentile_list=50:0: percentile 0 is not above 0",
        ),
        (
            "--name=x --bssplit=4k/60:8k/60",
            "--bssplit=4k/60:8k/60: weights add up to 120",
        ),
        (
            "--name=x --rate=1m --rate_iops=10",
            "job 'x': rate and rate_iops are mutually exclusive",
        ),
        (
            "--name=x --hipri",
            "job 'x': hipri is an option of the io_uring and pvsync2 engines",
        ),
        (
            "--name=x --size=1k",
            "job 'x': size=1024 is smaller than the smallest block size (4096)",
        ),
        (
            "--name=x --ioengine=sg",
            "--ioengine=sg: fio's sg engine is not supported by storbench",
        ),
        (
            "--name=x --verify=md6",
            "--verify=md6: unknown verify type 'md6'",
        ),
        (
            "--name=x --random_distribution=zoned:50/5:30/15",
            "--random_distribution=zoned:50/5:30/15: the zones' access shares must add up to 100% (got 80%)",
        ),
        (
            "--name=x --rw=read:-0",
            "--rw=read:-0: ':-0': a backward step of 0 bytes",
        ),
        (
            "--name=x --iodpeth=4",
            "--iodpeth: unknown option 'iodpeth'; did you mean 'iodepth'?",
        ),
        (
            "--name=x --size=1.5m",
            "--size=1.5m: fractional values are not accepted",
        ),
        (
            "--name=x --runtime=10sec",
            "--runtime=10sec: 'sec' is not a time unit",
        ),
        (
            "--name=x --bs=4k-8k",
            "--bs=4k-8k: bs takes read,write,trim sizes; for a range of sizes use bsrange=4k-8k",
        ),
        (
            "--readonly --name=x --rw=write",
            "job 'x': rw=write writes, but --readonly was given",
        ),
        ("--rw=write", "no jobs defined"),
        (
            "--name=x --numjobs=$ncpus-8",
            "--numjobs=$ncpus-8 (= 4-8): the arithmetic gives -4, a negative value",
        ),
        (
            "/nonexistent/job.fio",
            "cannot read job file '/nonexistent/job.fio': No such file or directory",
        ),
    ] {
        let e = error(args);
        assert!(e.starts_with(want), "{args}\n got: {e}\nwant: {want}");
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn warnings_like_fios() {
    let inv = parse("--name=x --time_based --iodepth=8").unwrap();
    assert_eq!(inv.warnings.len(), 2, "{:?}", inv.warnings);
    assert!(inv.warnings[0].contains("time_based needs a runtime"));
    assert!(inv.warnings[1].contains("iodepth=8 has no effect with the synchronous psync engine"));
    assert!(!inv.workload.jobs[0].time_based);
    let e = error("--warnings-fatal --name=x --time_based");
    assert!(e.ends_with("(--warnings-fatal)"), "{e}");
}

/// The engine a URL implies is the one the checks consider: `--filename=nbd://…` with
/// `--iodepth=8` runs the nbd engine, which uses the queue depth, so no psync warning; a
/// local engine chosen explicitly for a URL is refused.
#[test]
fn the_engine_a_url_implies_is_the_one_the_depth_warning_considers() {
    let inv = parse("--name=x --filename=nbd://127.0.0.1:10809/e --iodepth=8").unwrap();
    assert_eq!(inv.workload.jobs[0].ioengine, "nbd");
    assert!(
        !inv.warnings.iter().any(|w| w.contains("iodepth")),
        "{:?}",
        inv.warnings
    );
    let e = error("--name=x --ioengine=psync --filename=nbd://127.0.0.1:10809/e");
    assert!(
        e.contains("ioengine=psync cannot reach nbd://127.0.0.1:10809/e; use --ioengine=nbd"),
        "{e}"
    );
}

#[test]
fn flag_options_and_values() {
    let inv =
        parse("--name=x --time_based=1 --runtime=1 --norandommap=0 --group_reporting").unwrap();
    let j = &inv.workload.jobs[0];
    assert!(j.time_based && !j.norandommap && j.group_reporting);
    let keys: Vec<_> = j.options.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "name",
            "time_based",
            "runtime",
            "norandommap",
            "group_reporting"
        ]
    );
    assert_eq!(j.options[4].1, "", "a flag is recorded without a value");
}

#[test]
fn informational_invocations_need_no_jobs() {
    assert!(parse("--version").unwrap().version);
    assert_eq!(parse("--cmdhelp").unwrap().cmdhelp, Some(None));
    assert_eq!(
        parse("--enghelp=io_uring").unwrap().enghelp,
        Some(Some("io_uring".into()))
    );
    assert!(parse("-h").unwrap().help);
}

#[test]
fn showcmd_turns_a_job_file_into_a_command_line() {
    let dir = Scratch::new("showcmd");
    let f = dir.write(
        "s.fio",
        "[global]\nioengine=null\nsize=${SIZE}\n[job one]\nblocksize=8k\ntime_based\n",
    );
    let inv = parse_args(&[words("--showcmd").remove(0), f]).unwrap();
    assert_eq!(
        inv.showcmd.as_deref(),
        Some("fio --ioengine=null --size=64m --name='job one' --bs=8k --time_based\n")
    );
}

/// fio's backward sequential IO (its examples/backwards-read.fio line) and the options of
/// wild job files that now run: thinktime, blockalign (which turns the random map off, as
/// fio says), rate_min, rate_iops_min.
#[test]
fn wild_job_options_parse_as_fio_reads_them() {
    let inv = parse("--name=x --rw=read:-8k --bs=4k").unwrap();
    let j = &inv.workload.jobs[0];
    assert_eq!((j.rw.back, j.rw.hole), (8192, 0));
    let inv = parse(
        "--name=x --rw=randread --thinktime=2ms --thinktime_spin=500 --thinktime_blocks=8 \
         --thinktime_blocks_type=issue --thinktime_iotime=1s --ba=16k --rate_min=1m,2m \
         --rate_iops_min=,,5",
    )
    .unwrap();
    let j = &inv.workload.jobs[0];
    let t = j.think;
    assert_eq!((t.think_us, t.spin_us, t.blocks), (2000, 500, 8));
    assert!(t.blocks_given && t.on_issue);
    assert_eq!(t.iotime_us, 1_000_000);
    assert_eq!(j.blockalign, [Some(16384); 3]);
    assert!(j.norandommap);
    assert!(
        inv.warnings
            .iter()
            .any(|w| w.contains("blockalign= turns off randommap"))
    );
    assert_eq!(j.rate_min, [Some(1 << 20), Some(2 << 20), Some(2 << 20)]);
    assert_eq!(j.rate_iops_min, [None, None, Some(5)]);
    for (line, err) in [
        ("--name=x --thinktime_blocks=0", "give 1 or more"),
        (
            "--name=x --thinktime_blocks_type=sometimes",
            "not one of complete, issue",
        ),
        ("--name=x --ba=0", "an alignment of 0 bytes"),
        (
            "--name=x --rate=1m --rate_min=2m",
            "rate_min (2097152 B/s) exceeds rate",
        ),
        (
            "--name=x --rate_iops=10 --rate_iops_min=20",
            "rate_iops_min (20) exceeds",
        ),
    ] {
        let e = parse(line).unwrap_err().to_string();
        assert!(e.contains(err), "{line}: {e}");
    }
}
