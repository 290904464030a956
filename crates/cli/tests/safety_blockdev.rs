//! "Never lose data" on real block devices: loop devices over sparse files (root only,
//! skipped with a reason otherwise, detached on drop). Jobs on a blank device work; writes
//! to a device holding a partition table, a file system or swap are refused with the name
//! of what was found and leave every byte as it was, unless --allow-destructive; a mounted
//! device is refused.

mod common;

use std::path::Path;

use common::system::{LoopDev, Mount, have_tool, sh};
use common::{Run, sb_fio, storbench, words};

/// Large enough for mkfs.btrfs (at least 109 MiB).
const DEV_BYTES: u64 = 128 << 20;

fn quick_on(dev: &str, extra: &[&str]) -> Run {
    let mut c = storbench();
    c.args([
        "quick",
        "--size",
        "8m",
        "--runtime",
        "200ms",
        dev,
        "--no-save",
    ])
    .args(extra);
    Run::of(&mut c)
}

#[test]
fn jobs_on_a_blank_loop_device_work_like_fio() {
    if !LoopDev::available() || !common::fio_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let loopdev = LoopDev::new(dir.path(), DEV_BYTES);
    let dev = loopdev.dev.as_str();
    for rw in ["randwrite", "read", "randrw"] {
        let line = format!(
            "--output-format=json --name=d --ioengine=libaio --direct=1 --iodepth=4 --filename={dev} --rw={rw} --bs=4k --size=4m"
        );
        let ours = sb_fio(dir.path(), &words(&line)).json();
        let theirs = common::fio(dir.path(), &words(&line)).fio_json();
        let total = |doc: &serde_json::Value| -> u64 {
            ["read", "write"]
                .iter()
                .map(|d| doc["jobs"][0][d]["total_ios"].as_u64().unwrap())
                .sum()
        };
        assert_eq!(total(&ours), 1024, "{rw}");
        assert_eq!(total(&ours), total(&theirs), "{rw}");
        let disk = &ours["disk_util"][0];
        assert_eq!(
            disk["name"],
            dev.trim_start_matches("/dev/"),
            "{rw}: {disk}"
        );
        assert!(disk["read_ios"].as_u64().unwrap() + disk["write_ios"].as_u64().unwrap() > 0);
    }
    // The device now holds random data but no signature: quick may use it.
    let run = quick_on(dev, &["--json"]);
    let doc = run.json();
    assert_eq!(doc["tests"].as_array().map(Vec::len), Some(8));
    // losetup without --direct-io: the host's page cache is under every IO, and says so.
    let notes = doc["notes"].as_array().unwrap();
    let cached = notes.iter().find(|n| n["code"] == "warn.loop-cache");
    let message = cached
        .and_then(|n| n["message"].as_str())
        .unwrap_or_default();
    assert!(
        message.contains(dev.trim_start_matches("/dev/")) && message.contains("loop.img"),
        "{notes:?}"
    );
    assert!(
        notes.iter().all(|n| n["code"] != "limit.device"),
        "{notes:?}"
    );
    assert!(
        dir.path().join("loop.img").exists(),
        "a device is never removed"
    );
}

/// What a test writes on a fresh device, and the name the refusal must give.
struct Signature {
    what: &'static str,
    needle: &'static str,
    make: fn(&LoopDev),
}

fn partition_tables() -> Vec<Signature> {
    vec![
        Signature {
            what: "MBR",
            needle: "MBR partition table",
            make: |d| d.write_at(510, &[0x55, 0xAA]),
        },
        Signature {
            what: "GPT",
            needle: "GPT partition table",
            make: |d| {
                d.write_at(510, &[0x55, 0xAA]);
                d.write_at(512, b"EFI PART");
            },
        },
    ]
}

/// The file systems and swap whose mkfs tool is installed (the others are skipped).
fn formatted() -> Vec<Signature> {
    let all = [
        (
            "mkfs.ext4",
            Signature {
                what: "ext4",
                needle: "ext2/3/4 file system",
                make: |d| {
                    sh("mkfs.ext4", &["-q", "-F", &d.dev]);
                },
            },
        ),
        (
            "mkswap",
            Signature {
                what: "swap",
                needle: "swap area",
                make: |d| {
                    sh("mkswap", &[&d.dev]);
                },
            },
        ),
        (
            "mkfs.xfs",
            Signature {
                what: "XFS",
                needle: "XFS file system",
                make: |d| {
                    // xfsprogs 5.19+ refuses file systems under 300 MB unless it runs under
                    // fstests, which it recognises by these three variables.
                    let fstests = ["TEST_DIR=1", "TEST_DEV=1", "QA_CHECK_FS=1"];
                    let mut args = fstests.to_vec();
                    args.extend(["mkfs.xfs", "-q", "-f", &d.dev]);
                    sh("env", &args);
                },
            },
        ),
        (
            "mkfs.btrfs",
            Signature {
                what: "btrfs",
                needle: "btrfs file system",
                make: |d| {
                    sh("mkfs.btrfs", &["-q", "-f", &d.dev]);
                },
            },
        ),
    ];
    all.into_iter()
        .filter(|(tool, sig)| {
            let ok = have_tool(tool);
            if !ok {
                eprintln!("SKIP: {} signature: {tool} is not installed", sig.what);
            }
            ok
        })
        .map(|(_, sig)| sig)
        .collect()
}

#[test]
fn writes_to_a_partitioned_device_are_refused_and_change_nothing() {
    if LoopDev::available() {
        refused_and_unchanged(partition_tables());
    }
}

#[test]
fn writes_to_a_formatted_device_are_refused_and_change_nothing() {
    if LoopDev::available() {
        refused_and_unchanged(formatted());
    }
}

/// For each signature on a fresh device: fio writes (plain, mixed, trim) and quick are
/// refused naming what was found, the bytes stay the same, reads work, and
/// --allow-destructive writes.
fn refused_and_unchanged(signatures: Vec<Signature>) {
    let dir = tempfile::tempdir().unwrap();
    for sig in signatures {
        let loopdev = LoopDev::new(dir.path(), DEV_BYTES);
        let dev = loopdev.dev.as_str();
        (sig.make)(&loopdev);
        let before = loopdev.hash();
        for rw in ["write", "randrw", "trim"] {
            let line = format!("--name=x --ioengine=psync --filename={dev} --rw={rw} --size=4m");
            let err = sb_fio(dir.path(), &words(&line)).one_error_line();
            assert_refusal(&err, dev, sig.needle, sig.what);
        }
        assert_refusal(
            &quick_on(dev, &[]).one_error_line(),
            dev,
            sig.needle,
            sig.what,
        );
        assert_eq!(
            loopdev.hash(),
            before,
            "{}: the device's bytes changed",
            sig.what
        );
        let read = format!("--name=r --ioengine=psync --filename={dev} --rw=read --size=1m");
        sb_fio(dir.path(), &words(&read)).ok();
        let forced = format!(
            "--name=f --ioengine=psync --direct=1 --filename={dev} --rw=write --size=2m --allow-destructive"
        );
        sb_fio(dir.path(), &words(&forced)).ok();
        assert_ne!(
            loopdev.hash(),
            before,
            "{}: --allow-destructive wrote nothing",
            sig.what
        );
    }
}

fn assert_refusal(err: &str, dev: &str, needle: &str, what: &str) {
    assert!(
        err.contains(&format!("refusing to write to {dev}")) && err.contains(needle),
        "{what}: {err}"
    );
    assert!(
        err.contains("--allow-destructive"),
        "{what}: the way out is named: {err}"
    );
}

#[test]
fn a_mounted_device_is_refused() {
    if !LoopDev::available() || !have_tool("mkfs.ext4") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let loopdev = LoopDev::new(dir.path(), DEV_BYTES);
    let dev = loopdev.dev.as_str();
    sh("mkfs.ext4", &["-q", "-F", dev]);
    let mnt = Mount::new("ext4", dev, &dir.path().join("mnt"), "");
    let line = format!("--name=x --ioengine=psync --filename={dev} --rw=randwrite --size=1m");
    let err = sb_fio(dir.path(), &words(&line)).one_error_line();
    let mounted_on = format!("is mounted on {}", mnt.point.display());
    assert!(err.contains(dev) && err.contains(&mounted_on), "{err}");
    let err = quick_on(dev, &[]).one_error_line();
    assert!(err.contains(&mounted_on), "{err}");
    // --allow-destructive overrides what the device holds, never that it is mounted.
    let err = sb_fio(dir.path(), &words(&format!("{line} --allow-destructive"))).one_error_line();
    assert!(
        err.contains(&mounted_on) && !err.contains("pass --allow"),
        "{err}"
    );
    let err = quick_on(dev, &["--allow-destructive"]).one_error_line();
    assert!(err.contains(&mounted_on), "{err}");
    assert!(
        Path::new(&mnt.point.join("lost+found")).exists(),
        "the file system is intact"
    );
}

/// A file system starting at 100 MiB refuses `--offset=100M`: the region a job writes is
/// sampled at every MiB, not only its first and last.
#[test]
fn a_file_system_inside_the_written_region_is_refused() {
    if !LoopDev::available() || !have_tool("mkfs.ext4") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("fs.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    sh("mkfs.ext4", &["-q", "-F", img.to_str().unwrap()]);
    let fs_head = std::fs::read(&img).unwrap()[..128 << 10].to_vec();
    let loopdev = LoopDev::new(dir.path(), DEV_BYTES);
    let dev = loopdev.dev.as_str();
    loopdev.write_at(100 << 20, &fs_head);
    let before = loopdev.hash();
    let line = format!("--name=o --ioengine=psync --direct=1 --filename={dev} --rw=write --bs=1m");
    let err = sb_fio(
        dir.path(),
        &words(&format!("{line} --offset=100M --size=16M")),
    )
    .one_error_line();
    assert!(
        err.contains("ext2/3/4 file system starting at byte 104857600")
            && err.contains("128 KiB at every MiB boundary")
            && err.contains("--allow-destructive"),
        "{err}"
    );
    let err = sb_fio(
        dir.path(),
        &words(&format!("{line} --offset=96M --size=8M")),
    )
    .one_error_line();
    assert!(err.contains("starting at byte 104857600"), "{err}");
    assert_eq!(loopdev.hash(), before, "a refused run wrote");
    // Outside that region the device may be written, as before.
    let run = sb_fio(dir.path(), &words(&format!("{line} --offset=0 --size=64M")));
    assert!(run.success(), "{}", run.stderr);
    let run = sb_fio(
        dir.path(),
        &words(&format!(
            "{line} --offset=100M --size=16M --allow-destructive"
        )),
    );
    assert!(run.success(), "{}", run.stderr);
}
