//! fio's options about laying out files, cross-checked against fio 3.33 on the same job
//! file run by both tools in temp dirs of their own: the same jobs, the same IO counts and
//! the same files left behind, name by name and size by size. Skipped with a reason when
//! fio 3.33 is missing.

mod common;

use std::path::Path;

use common::system::{LoopDev, Mount, have_tool, root_or_skip, sh};
use common::{fio, fio_available, sb_fio};
use serde_json::Value;

/// Per job: name, read and write IOs, and the job's error.
fn jobs(doc: &Value) -> Vec<(String, u64, u64, i64)> {
    doc["jobs"]
        .as_array()
        .expect("jobs array")
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["read"]["total_ios"].as_u64().unwrap(),
                j["write"]["total_ios"].as_u64().unwrap(),
                j["error"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// The files in `dir` but the job file, with their sizes, by name.
fn files(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != "j.fio")
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Runs the job file `text` with both tools: (fio's jobs, files), (storbench's jobs, files).
type Outcome = (Vec<(String, u64, u64, i64)>, Vec<(String, u64)>);

fn both_job(text: &str) -> (Outcome, Outcome) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for d in [&fd, &sd] {
        std::fs::write(d.path().join("j.fio"), text).unwrap();
    }
    let args = ["j.fio", "--output-format=json"];
    let theirs = fio(fd.path(), &args).fio_json();
    let ours = sb_fio(sd.path(), &args);
    assert!(ours.success(), "{text}: {}", ours.stderr);
    (
        (jobs(&theirs), files(fd.path())),
        (jobs(&ours.json()), files(sd.path())),
    )
}

/// `create_only=1`: the files are laid out (three per job, a reading job's and a writing
/// job's) and kept, and no job does any IO.
#[test]
fn create_only_lays_files_out_and_does_no_io_like_fio() {
    if !fio_available() {
        return;
    }
    let job = "[global]\nsize=1m\nnrfiles=3\ncreate_only=1\n\
               [made]\nrw=randread\n\
               [written]\nrw=write\nfilesize=256k\n";
    let (f, s) = both_job(job);
    assert_eq!(f, s, "{job}");
    assert_eq!(s.0.len(), 2);
    assert!(
        s.0.iter().all(|j| j.1 == 0 && j.2 == 0 && j.3 == 0),
        "{s:?}"
    );
    assert_eq!(s.1.len(), 6, "three files per job: {:?}", s.1);
}

/// `allow_mounted_write=0` (fio's default): a write job on a mounted device is refused by
/// both tools, and the file system is left intact; a job on a file runs as in fio.
/// `allow_mounted_write=1` is refused in one line: storbench never writes to a mounted
/// device. Root only (a loop device), skipped otherwise.
#[test]
fn allow_mounted_write_refuses_a_mounted_device_like_fio() {
    if !fio_available() || !LoopDev::available() || !have_tool("mkfs.ext4") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let loopdev = LoopDev::new(dir.path(), 32 << 20);
    let dev = loopdev.dev.as_str();
    sh("mkfs.ext4", &["-q", "-F", dev]);
    let mnt = Mount::new("ext4", dev, &dir.path().join("mnt"), "");
    let job = format!("[w]\nfilename={dev}\nrw=randwrite\nsize=1m\nallow_mounted_write=0\n");
    std::fs::write(dir.path().join("j.fio"), &job).unwrap();
    // fio prints its refusal and ends with status 0, having done no IO.
    let theirs = fio(dir.path(), &["j.fio"]);
    assert!(
        theirs.stderr.contains("appears mounted"),
        "fio did not refuse: {}",
        theirs.stderr
    );
    let ours = sb_fio(dir.path(), &["j.fio"]);
    assert!(!ours.success(), "{job}");
    assert!(
        ours.one_error_line().contains("is mounted on"),
        "{}",
        ours.stderr
    );
    assert!(
        mnt.point.join("lost+found").exists(),
        "the file system is intact"
    );
    let on = job.replace("allow_mounted_write=0", "allow_mounted_write=1");
    std::fs::write(dir.path().join("j.fio"), &on).unwrap();
    let err = sb_fio(dir.path(), &["j.fio"]).one_error_line();
    assert!(err.contains("allow_mounted_write=1 is refused"), "{err}");
    let file = "[f]\nfilename=f\nrw=randwrite\nsize=1m\nallow_mounted_write=0\n";
    let (f, s) = both_job(file);
    assert_eq!(f, s, "{file}");
    assert_eq!(s.0[0].2, 256);
}

/// Per job: name, read and write IOs, and the job's error (as `jobs` gives them).
type Jobs = Vec<(String, u64, u64, i64)>;

/// Runs the job file `text` with both tools in `(fio's dir, storbench's dir)`, which may
/// hold mounts or files the test made: (fio's jobs, storbench's jobs).
fn both_in(dirs: (&Path, &Path), text: &str) -> (Jobs, Jobs) {
    for d in [dirs.0, dirs.1] {
        std::fs::write(d.join("j.fio"), text).unwrap();
    }
    let args = ["j.fio", "--output-format=json"];
    let theirs = fio(dirs.0, &args).fio_json();
    let ours = sb_fio(dirs.1, &args);
    assert!(ours.success(), "{text}: {}", ours.stderr);
    (jobs(&theirs), jobs(&ours.json()))
}

/// `fill_device=1` (and its alias `fill_fs`) on a file without a size: both tools write
/// until the file system (a tmpfs of 8 MiB each) is full, and the job ends there without
/// an error, with the same writes and the same file left. Root only (the mounts).
#[test]
fn fill_device_writes_a_file_until_the_file_system_is_full_like_fio() {
    if !fio_available() || !root_or_skip("tmpfs mounts") {
        return;
    }
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let _mounts =
        [fd.path(), sd.path()].map(|d| Mount::new("tmpfs", "tmpfs", &d.join("fs"), "size=8m"));
    for opt in ["fill_device=1", "fill_fs=1"] {
        let job = format!("[fill]\nfilename=fs/f\nrw=write\nbs=64k\n{opt}\n");
        let (f, s) = both_in((fd.path(), sd.path()), &job);
        assert_eq!(f, s, "{job}");
        assert_eq!(
            s[0].2, 129,
            "8 MiB in 64 KiB writes and the one that found it full: {s:?}"
        );
        assert_eq!(s[0].3, 0, "the full file system is no error: {s:?}");
        assert_eq!(files(&fd.path().join("fs")), files(&sd.path().join("fs")));
        assert_eq!(files(&sd.path().join("fs")), [("f".to_string(), 8 << 20)]);
        for d in [&fd, &sd] {
            std::fs::remove_file(d.path().join("fs/f")).unwrap();
        }
    }
}

/// `fill_device=1` in a job that reads: the file is laid out until the file system (a
/// tmpfs of 8 MiB each) is full, or to size= where there is room, and the job reads what
/// it holds, as fio does (random or sequential, a size larger than the room, a mix within
/// it). A mix without size= is refused in one line: fio 3.33 reads past the filled file's
/// end. Root only (the mounts).
#[test]
fn fill_device_in_a_reading_job_reads_what_was_filled_like_fio() {
    if !fio_available() || !root_or_skip("tmpfs mounts") {
        return;
    }
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let _mounts =
        [fd.path(), sd.path()].map(|d| Mount::new("tmpfs", "tmpfs", &d.join("fs"), "size=8m"));
    for (opts, reads) in [
        ("rw=read\n", 128),
        ("rw=randread\n", 128),
        ("rw=read\nsize=16m\n", 128),
        ("rw=randrw\nsize=4m\n", 29),
    ] {
        let job = format!("[fill]\nfilename=fs/f\nbs=64k\nfill_device=1\n{opts}");
        let (f, s) = both_in((fd.path(), sd.path()), &job);
        assert_eq!(f, s, "{job}");
        assert_eq!((s[0].1, s[0].3), (reads, 0), "{job}: {s:?}");
        assert_eq!(files(&fd.path().join("fs")), files(&sd.path().join("fs")));
        for d in [&fd, &sd] {
            std::fs::remove_file(d.path().join("fs/f")).unwrap();
        }
    }
    std::fs::write(
        sd.path().join("j.fio"),
        "[fill]\nfilename=fs/f\nbs=64k\nfill_device=1\nrw=rw\n",
    )
    .unwrap();
    let refused = sb_fio(sd.path(), &["j.fio"]);
    assert!(!refused.success());
    assert!(
        refused
            .one_error_line()
            .contains("fill_device without size= in a mixed job"),
        "{}",
        refused.stderr
    );
    assert!(
        files(&sd.path().join("fs")).is_empty(),
        "nothing was written"
    );
}

/// `fill_device=1` on a device: the region is the whole device, written to its end as
/// fio writes it; a device that holds a file system is refused before any write, as in
/// every storbench job that writes, and keeps its data. Root only (a loop device).
#[test]
fn fill_device_on_a_device_writes_it_all_and_refuses_one_holding_data() {
    if !fio_available() || !LoopDev::available() || !have_tool("mkfs.ext4") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let loopdev = LoopDev::new(dir.path(), 4 << 20);
    let job = format!(
        "[fill]\nfilename={}\nrw=write\nbs=64k\ndirect=1\nfill_device=1\n",
        loopdev.dev
    );
    std::fs::write(dir.path().join("j.fio"), &job).unwrap();
    let ours = sb_fio(dir.path(), &["j.fio", "--output-format=json"]);
    assert!(ours.success(), "{job}: {}", ours.stderr);
    let theirs = fio(dir.path(), &["j.fio", "--output-format=json"]).fio_json();
    assert_eq!(jobs(&theirs), jobs(&ours.json()), "{job}");
    assert_eq!(jobs(&ours.json())[0].2, 64, "4 MiB in 64 KiB writes");
    sh("mkfs.ext4", &["-q", "-F", &loopdev.dev]);
    let before = loopdev.hash();
    let refused = sb_fio(dir.path(), &["j.fio"]);
    assert!(!refused.success(), "a device holding data was written");
    assert!(
        refused.one_error_line().contains("refusing to write"),
        "{}",
        refused.stderr
    );
    assert_eq!(loopdev.hash(), before, "the device's data is unchanged");
}

/// Bytes of `path` in the page cache (mincore over a mapping of the whole file).
fn resident(path: &Path) -> u64 {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    let page = 4096usize;
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: a read-only shared mapping of an open file, unmapped before returning; the
    // vector has one byte per page of it.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        assert_eq!(libc::mincore(p, len, vec.as_mut_ptr()), 0);
        libc::munmap(p, len);
    }
    vec.iter().filter(|&&b| b & 1 == 1).count() as u64 * page as u64
}

/// `pre_read=1`: before a job that reads one block, both tools read the whole file into
/// the page cache (and do not drop it, `invalidate` being cleared); without it, each drops
/// the file's cache and only the block read (and its readahead) is cached after the job.
#[test]
fn pre_read_reads_the_files_into_the_cache_before_the_job_like_fio() {
    if !fio_available() {
        return;
    }
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let data: Vec<u8> = (0..16u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    for pre in [1, 0] {
        for d in [&fd, &sd] {
            std::fs::write(d.path().join("f"), &data).unwrap();
        }
        let job = format!("[r]\nfilename=f\nrw=read\nbs=4k\nnumber_ios=1\npre_read={pre}\n");
        let (f, s) = both_in((fd.path(), sd.path()), &job);
        assert_eq!(f, s, "{job}");
        assert_eq!(s[0].1, 1, "{s:?}");
        let cached = [fd.path(), sd.path()].map(|d| resident(&d.join("f")));
        for (tool, bytes) in ["fio", "storbench"].iter().zip(cached) {
            if pre == 1 {
                assert_eq!(bytes, 16 << 20, "{tool} pre-read it all");
            } else {
                assert!(
                    bytes <= 4 << 20,
                    "{tool} cached {bytes} bytes without pre_read"
                );
            }
        }
    }
}

/// The offsets of a job's IOs in the order they were issued, from its latency log.
fn logged_offsets(log: &Path) -> Vec<u64> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| l.split(',').nth(4).unwrap().trim().parse().unwrap())
        .collect()
}

/// `openfiles` below `nrfiles`: a clone works on that many files at a time and opens the
/// next when one is done, so its IOs come in fio's order (the offsets of fio's and
/// storbench's latency logs agree IO by IO), with the same counts and files; and storbench
/// never has more of the job's files open than `openfiles` (its descriptors sampled during
/// a slowed run).
#[test]
fn openfiles_keeps_that_many_files_open_in_fios_order() {
    if !fio_available() {
        return;
    }
    for (open, service) in [(1, "roundrobin"), (2, "roundrobin"), (2, "sequential")] {
        let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let job = format!(
            "[o]\nrw=read\nbs=4k\nsize=256k\nnrfiles=4\nopenfiles={open}\n\
             file_service_type={service}\nwrite_lat_log=l\nlog_offset=1\n"
        );
        let (f, s) = both_in((fd.path(), sd.path()), &job);
        assert_eq!(f, s, "{job}");
        assert_eq!(s[0].1, 64, "{s:?}");
        let [theirs, ours] = [&fd, &sd].map(|d| logged_offsets(&d.path().join("l_lat.1.log")));
        assert_eq!(theirs, ours, "{job}");
    }
    let dir = tempfile::tempdir().unwrap();
    let job = "[o]\nrw=read\nbs=4k\nsize=256k\nnrfiles=4\nopenfiles=2\nrate_iops=100\n";
    std::fs::write(dir.path().join("j.fio"), job).unwrap();
    let child = common::system::spawn(dir.path(), &["fio", "j.fio", "--no-save"]);
    let fds = format!("/proc/{}/fd", child.pid());
    let (mut most, mut seen) = (0, std::collections::BTreeSet::new());
    common::system::wait_for(std::time::Duration::from_secs(10), || {
        let open: Vec<String> = std::fs::read_dir(&fds)
            .map(|d| {
                d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                    .map(|p| p.to_string_lossy().into_owned())
                    .filter(|p| p.contains("/o.0."))
                    .collect()
            })
            .unwrap_or_default();
        most = most.max(open.len());
        let now_open = open.len();
        seen.extend(open);
        seen.len() == 4 && now_open == 0
    });
    let run = child.wait_output(std::time::Duration::from_secs(20));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(seen.len(), 4, "every file was opened in turn: {seen:?}");
    assert!(most <= 2, "{most} of the job's files were open at once");
}

/// `verify_dump=1`: a block that fails its pattern check is written as fio writes it,
/// `FILE.OFFSET.received` and `FILE.OFFSET.expected` in the working directory, with the
/// same bytes in both tools; both jobs end with fio's EILSEQ.
#[test]
fn verify_dump_writes_the_received_and_expected_blocks_like_fio() {
    if !fio_available() {
        return;
    }
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pattern = [0xaau8, 0x55, 0x5a, 0xa5];
    let mut data: Vec<u8> = pattern.iter().copied().cycle().take(64 << 10).collect();
    data[5 * 4096 + 100] ^= 0xff;
    let job = "[v]\nfilename=f\nrw=read\nbs=4k\nverify=pattern\nverify_pattern=0xaa555aa5\nverify_dump=1\n";
    for d in [&fd, &sd] {
        std::fs::write(d.path().join("f"), &data).unwrap();
        std::fs::write(d.path().join("j.fio"), job).unwrap();
    }
    let theirs = fio(fd.path(), &["j.fio", "--output-format=json"]).json_any();
    let ours = sb_fio(sd.path(), &["j.fio", "--output-format=json"]);
    assert!(!ours.success(), "a bad block ends the job");
    assert_eq!(jobs(&theirs)[0].3, libc::EILSEQ as i64);
    assert_eq!(jobs(&ours.json_any())[0].3, libc::EILSEQ as i64);
    let dumps = |d: &Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().starts_with("f."))
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let (f, s) = (dumps(fd.path()), dumps(sd.path()));
    let names: Vec<&str> = s.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["f.20480.expected", "f.20480.received"],
        "{}",
        ours.stderr
    );
    assert_eq!(f, s);
    assert_eq!(s[1].1, data[5 * 4096..6 * 4096]);
    assert!(
        ours.stderr
            .contains("received data dumped as f.20480.received"),
        "{}",
        ours.stderr
    );
}

/// `verify_dump=1` with checksums: the block expected is rebuilt from the seed in the bad
/// block's header, fio's random data with its headers and checksum, so both tools dump
/// the same `.received` and `.expected` bytes for a file either wrote (but the header's
/// time of the read and its crc). A data byte of the second block is flipped; the
/// expected block is the one written, but for the time and sequence number of the read.
#[test]
fn verify_dump_rebuilds_a_checksummed_block_like_fio() {
    if !fio_available() {
        return;
    }
    let checks: Vec<(&str, bool)> = ["crc32c", "md5", "sha256", "xxhash"]
        .into_iter()
        .flat_map(|kind| [(kind, true), (kind, false)])
        .collect();
    common::par_each(&checks, |&(kind, fio_writes)| {
        let w = tempfile::tempdir().unwrap();
        let write = format!(
            "[w]\nfilename=f\nsize=64k\nbs=16k\nrw=write\nverify={kind}\ndo_verify=0\n\
             verify_state_save=0\nverify_dump=1\n"
        );
        std::fs::write(w.path().join("w.fio"), &write).unwrap();
        let wrote = if fio_writes {
            fio(w.path(), &["w.fio"])
        } else {
            sb_fio(w.path(), &["w.fio"])
        };
        assert!(wrote.success(), "{write}: {}", wrote.stderr);
        let written = std::fs::read(w.path().join("f")).unwrap();
        let mut data = written.clone();
        data[16384 + 1000] ^= 0xff;
        let job =
            format!("[r]\nfilename=f\nsize=64k\nbs=16k\nrw=read\nverify={kind}\nverify_dump=1\n");
        let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for d in [&fd, &sd] {
            std::fs::write(d.path().join("f"), &data).unwrap();
            std::fs::write(d.path().join("j.fio"), &job).unwrap();
        }
        let theirs = fio(fd.path(), &["j.fio"]);
        let ours = sb_fio(sd.path(), &["j.fio"]);
        assert!(
            !theirs.success() && !ours.success(),
            "{kind}: a bad block ends the job"
        );
        let dump = |d: &Path, what: &str| std::fs::read(d.join(format!("f.16384.{what}")));
        let (f_got, s_got) = (dump(fd.path(), "received"), dump(sd.path(), "received"));
        assert_eq!(f_got.unwrap(), s_got.unwrap(), "{kind}: {}", ours.stderr);
        let (f_want, s_want) = (dump(fd.path(), "expected"), dump(sd.path(), "expected"));
        let (mut f_want, mut s_want) = (f_want.unwrap(), s_want.unwrap());
        let mut original = written[16384..32768].to_vec();
        // The read's time and sequence number, and so the header's crc.
        for b in [&mut f_want, &mut s_want, &mut original] {
            b[24..40].fill(0);
        }
        assert_eq!(f_want, s_want, "{kind}, written by fio: {fio_writes}");
        assert_eq!(
            s_want, original,
            "{kind}: the expected block is the one written"
        );
    });
}

/// `openfiles` below `nrfiles` with `verify`: the writes keep that many files open, the
/// verify after them opens each file again as it reaches its blocks, as fio's does: the
/// same reads and writes as fio for sequential, random and queued writers. A block spoilt
/// in the last file, closed when the writes ended, is found by a verifying read job of
/// each tool, each ending with fio's EILSEQ.
#[test]
fn openfiles_with_verify_checks_every_file_like_fio() {
    if !fio_available() {
        return;
    }
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let job = "[global]\nbs=4k\nsize=256k\nnrfiles=4\nopenfiles=2\nverify=crc32c\n\
               [a]\nrw=write\n\
               [b]\nstonewall\nrw=randwrite\nfile_service_type=sequential\n\
               [c]\nstonewall\nrw=write\nopenfiles=1\nioengine=libaio\niodepth=4\n";
    let (f, s) = both_in((fd.path(), sd.path()), job);
    assert_eq!(f, s, "{job}");
    assert_eq!(s.len(), 3);
    assert!(
        s.iter().all(|j| j.1 == 64 && j.2 == 64 && j.3 == 0),
        "{s:?}"
    );
    let read = "[r]\nrw=read\nbs=4k\nsize=256k\nnrfiles=4\nopenfiles=2\nverify=crc32c\n\
                filename_format=a.0.$filenum\n";
    for d in [&fd, &sd] {
        let last = d.path().join("a.0.3");
        let mut data = std::fs::read(&last).unwrap();
        data[3 * 4096 + 500] ^= 0x40;
        std::fs::write(&last, &data).unwrap();
        std::fs::write(d.path().join("r.fio"), read).unwrap();
    }
    let args = ["r.fio", "--output-format=json"];
    let theirs = fio(fd.path(), &args);
    let ours = sb_fio(sd.path(), &args);
    assert!(!ours.success(), "the spoilt block ends the job");
    for doc in [theirs.json_any(), ours.json_any()] {
        assert_eq!(jobs(&doc)[0].3, libc::EILSEQ as i64, "{}", ours.stderr);
    }
    assert!(
        ours.stderr.contains("a.0.3 offset 12288"),
        "{}",
        ours.stderr
    );
}
