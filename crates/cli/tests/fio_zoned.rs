//! fio's `zoned` and `zoned_abs` random distributions and its strided zones
//! (`zonemode=strided`), cross-checked against fio 3.33: both tools run the same job
//! through the psync engine under strace, and the offsets of their `pread64`/`pwrite64`
//! calls, counted per zone and direction, must agree with each other and with the zones'
//! shares; strided zones visit the same offsets in the same order. Skipped with a reason when fio 3.33 or
//! strace is missing, or tracing is not allowed here.

mod common;

use std::path::Path;
use std::process::Command;

use common::system::have_tool;
use common::{Run, fio_available, storbench, words};

const MIB: u64 = 1 << 20;

/// The offsets of the `bs`-byte reads and writes a traced command made.
fn traced(dir: &Path, program: &Path, args: &[&str], bs: u64) -> [Vec<u64>; 2] {
    let trace = dir.join("trace.txt");
    let mut c = Command::new("strace");
    c.current_dir(dir)
        .args(["-f", "-qq", "-e", "trace=pread64,pwrite64", "-o"])
        .arg(&trace)
        .arg(program)
        .args(args)
        .env("STORBENCH_DB", "/dev/null/storbench-tests-must-not-save.db");
    let run = Run::of(&mut c);
    assert!(run.success(), "{program:?} {args:?}: {}", run.stderr);
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut out = [Vec::new(), Vec::new()];
    for line in text.lines() {
        let d = if line.contains("pread64(") { 0 } else { 1 };
        // `… = N` with the call's `, len, offset)` before it.
        let Some(args) = line.rsplit_once(") = ").map(|(a, _)| a) else {
            continue;
        };
        let mut tail = args.rsplit(", ");
        let (Some(off), Some(len)) = (tail.next(), tail.next()) else {
            continue;
        };
        if len.parse::<u64>() == Ok(bs) {
            out[d].push(off.parse().unwrap());
        }
    }
    out
}

/// Share (percent) of `offsets` in each zone ending at `ends` bytes.
fn shares(offsets: &[u64], ends: &[u64]) -> Vec<f64> {
    let mut n = vec![0u64; ends.len()];
    for &o in offsets {
        let z = ends
            .iter()
            .position(|&e| o < e)
            .expect("offset inside the file");
        n[z] += 1;
    }
    n.iter()
        .map(|&c| c as f64 * 100.0 / offsets.len().max(1) as f64)
        .collect()
}

fn tracing_works() -> bool {
    if !have_tool("strace") {
        eprintln!("SKIP: strace is not installed");
        return false;
    }
    let ok = Command::new("strace")
        .args(["-qq", "-o", "/dev/null", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIP: strace cannot trace here (ptrace not permitted)");
    }
    ok
}

/// Runs `job` with fio and storbench over a 16 MiB file made beforehand and checks each
/// direction's share per zone: within 4 points of `want` for both tools.
fn same_zones(job: &str, bs: u64, ends: &[u64], want: [&[f64]; 2]) {
    if !fio_available() || !tracing_works() {
        return;
    }
    let fio = (which("fio"), false);
    zone_shares(&[fio, ours()], job, bs, ends, want);
}

fn ours() -> (std::path::PathBuf, bool) {
    (assert_cmd::cargo::cargo_bin("storbench"), true)
}

/// Each of `runs` (program, is storbench) traced over `job`: every direction's share per
/// zone within 4 points of `want`.
fn zone_shares(
    runs: &[(std::path::PathBuf, bool)],
    job: &str,
    bs: u64,
    ends: &[u64],
    want: [&[f64]; 2],
) {
    for (program, ours) in runs {
        let got = run_traced(program, *ours, job, bs);
        for (d, offs) in got.iter().enumerate() {
            if want[d].is_empty() {
                assert!(
                    offs.is_empty(),
                    "{program:?}: no IO expected in direction {d}"
                );
                continue;
            }
            assert!(offs.len() > 1000, "{program:?} {job}: {} IOs", offs.len());
            let s = shares(offs, ends);
            for (z, (got, want)) in s.iter().zip(want[d]).enumerate() {
                assert!(
                    (got - want).abs() < 4.0,
                    "{program:?} {job}: direction {d} zone {z}: {got:.1}% of {} IOs, want {want}% ({s:?})",
                    offs.len()
                );
            }
        }
    }
}

/// The offsets of the `bs`-byte reads and writes of `job` run by `program` (storbench when
/// `ours`) through the psync engine over a 16 MiB file made beforehand.
fn run_traced(program: &Path, ours: bool, job: &str, bs: u64) -> [Vec<u64>; 2] {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("zf"), vec![7u8; 16 * MIB as usize]).unwrap();
    let mut args = if ours {
        vec!["fio", "--no-save"]
    } else {
        vec![]
    };
    args.extend(words(job));
    args.extend(["--filename=zf", "--ioengine=psync", "--output-format=terse"]);
    traced(dir.path(), program, &args, bs)
}

fn which(program: &str) -> std::path::PathBuf {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| program.into())
}

/// fio's examples/rand-zones.fio shape, one list for every direction: 60% of the reads in
/// the first 10% of the file, 30% in the next 20%, 10% in the remaining 70%.
#[test]
fn zoned_offsets_follow_the_zones_as_fios() {
    same_zones(
        "--name=z --rw=randread --bs=4k --size=16m --random_distribution=zoned:60/10:30/20:10/70",
        4096,
        &[16 * MIB / 10, 16 * MIB * 30 / 100, 16 * MIB],
        [&[60.0, 30.0, 10.0], &[]],
    );
}

/// Zones per direction, separated by a comma as fio documents them: reads 80% in the
/// first half, writes 80% in the second. fio 3.33 itself refuses any comma in this option
/// (its value matching stops at the first comma: "failed parsing random_distribution"),
/// so only storbench runs here; the single-list cases are cross-checked.
#[test]
fn zones_per_direction() {
    if !tracing_works() {
        return;
    }
    zone_shares(
        &[ours()],
        "--name=z --rw=randrw --bs=4k --size=16m --random_distribution=zoned:80/50:20/50,20/50:80/50",
        4096,
        &[8 * MIB, 16 * MIB],
        [&[80.0, 20.0], &[20.0, 80.0]],
    );
}

/// `zoned_abs` sizes its zones in bytes: half the reads in the first 2 MiB.
#[test]
fn absolute_zones_follow_fio() {
    same_zones(
        "--name=z --rw=randread --bs=4k --size=16m --random_distribution=zoned_abs:50/2m:50/14m",
        4096,
        &[2 * MIB, 16 * MIB],
        [&[50.0, 50.0], &[]],
    );
}

/// Zones that reach past the file are the job's one-line error, as fio refuses them.
#[test]
fn absolute_zones_past_the_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = storbench();
    c.current_dir(dir.path()).args([
        "fio",
        "--name=z",
        "--rw=randread",
        "--size=1m",
        "--random_distribution=zoned_abs:50/2m:50/14m",
        "--no-save",
    ]);
    let run = Run::of(&mut c);
    assert!(!run.success());
    assert!(
        run.stderr.contains("zoned_abs sizes exceed"),
        "{}",
        run.stderr
    );
}

/// Runs `job` (strided zones) with fio and storbench and checks the offsets: sequential
/// jobs in the same order; random ones zone visit by zone visit (`per_visit` IOs each),
/// the same zone and the same set of blocks, in any order.
fn same_strides(job: &str, bs: u64, per_visit: usize) {
    if !fio_available() || !tracing_works() {
        return;
    }
    let theirs = run_traced(&which("fio"), false, job, bs);
    let ours = run_traced(&assert_cmd::cargo::cargo_bin("storbench"), true, job, bs);
    for d in 0..2 {
        assert_eq!(ours[d].len(), theirs[d].len(), "{job}: direction {d}");
        if per_visit == 0 {
            assert_eq!(ours[d], theirs[d], "{job}: direction {d}");
            continue;
        }
        for (i, (a, b)) in ours[d]
            .chunks(per_visit)
            .zip(theirs[d].chunks(per_visit))
            .enumerate()
        {
            let (mut a, mut b) = (a.to_vec(), b.to_vec());
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "{job}: visit {i}");
        }
    }
}

/// fio's examples/disk-zone-profile.fio, scaled to a 16 MiB file: 1 MiB read in each
/// zone, 2 MiB skipped, back to the start past the end, until `size` bytes were read.
#[test]
fn strided_zones_read_where_fio_reads() {
    same_strides(
        "--name=s --rw=read --bs=256k --zonemode=strided --zonesize=1m --zoneskip=2m",
        256 << 10,
        0,
    );
}

/// A `zonesize` above `zonerange` goes through the zone again before moving on, and a
/// smaller one leaves the rest of the zone untouched; `offset` is where the zones start.
#[test]
fn strided_zone_ranges_and_offsets_as_fios() {
    for (job, bs) in [
        (
            "--name=s --rw=read --bs=256k --zonemode=strided --zonesize=1m --zonerange=512k --zoneskip=2m",
            256 << 10,
        ),
        (
            "--name=s --rw=read --bs=256k --zonemode=strided --zonesize=1m --zonerange=2m",
            256 << 10,
        ),
        (
            "--name=s --rw=write --bs=256k --zonemode=strided --zonesize=1m --zoneskip=2m --offset=1m",
            256 << 10,
        ),
        (
            "--name=s --rw=read --bs=64k --zonemode=strided --zonesize=256k --zoneskip=64k --size=4m",
            64 << 10,
        ),
    ] {
        same_strides(job, bs, 0);
    }
}

/// Random IO stays in the zone, each visit covering its blocks once (fio's random map
/// starts over with each zone).
#[test]
fn strided_random_io_covers_each_zone_as_fios() {
    same_strides(
        "--name=s --rw=randread --bs=256k --zonemode=strided --zonesize=1m --zoneskip=2m",
        256 << 10,
        4,
    );
    same_strides(
        "--name=s --rw=randread --bs=256k --zonemode=strided --zonesize=1m --zonerange=512k --zoneskip=2m",
        256 << 10,
        2,
    );
}
