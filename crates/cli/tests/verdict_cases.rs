//! Verdicts that were false or missed, each case built for real on this machine and run
//! through the CLI: the test asserts the right verdict and the absence of the wrong one.
//! docs/verdicts.md lists the rules these tests show.

mod common;

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use common::system::{ChildGuard, LoopDev, Mount, have_tool, sh};
use common::{Run, sb_fio};
use serde_json::Value;

/// The verdict on the entry named `job`.
fn verdict_of(run: &Run, job: &str) -> Value {
    let doc = run.json();
    doc["storbench"]["verdicts"]
        .as_array()
        .and_then(|a| a.iter().find(|v| v["job"] == job).cloned())
        .unwrap_or_else(|| panic!("no verdict on {job}: {doc:#}"))
}

fn reasons<'v>(v: &'v Value, check: &str) -> Vec<&'v str> {
    v["reasons"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|r| r["check"] == check)
                .filter_map(|r| r["message"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

/// A directory on a block-device file system (not tmpfs), removed on drop.
fn disk_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("storbench-cases-")
        .tempdir_in("/var/tmp")
        .unwrap()
}

fn random_bytes(bytes: usize) -> Vec<u8> {
    let mut data = vec![0u8; bytes];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for chunk in data.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    data
}

fn random_file(path: &Path, bytes: usize) {
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(&random_bytes(bytes)).unwrap();
    f.sync_all().unwrap();
}

/// Drops one file's pages from the page cache, so the next read must come from the disk.
fn evict(path: &Path) {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    f.sync_all().unwrap();
    // SAFETY: an advisory call on a descriptor we own.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0);
}

/// Reads a file once through the page cache, so it is warm.
fn warm(path: &Path) {
    std::io::copy(
        &mut std::fs::File::open(path).unwrap(),
        &mut std::io::sink(),
    )
    .unwrap();
}

fn json_args<'a>(args: &[&'a str]) -> Vec<&'a str> {
    [args, &["--output-format=json"]].concat()
}

/// A file of zeros written with O_DIRECT (as `dd oflag=direct` writes it) is data, not a
/// hole: its O_DIRECT read moves the bytes from the disk, so neither a sparse-file reason
/// nor a cache one. The same size left sparse is still named.
#[test]
fn written_zeros_read_with_o_direct_are_no_sparse_file() {
    if !have_tool("dd") {
        return;
    }
    let dir = disk_dir();
    let zeros = dir.path().join("z");
    sh(
        "dd",
        &[
            "if=/dev/zero",
            &format!("of={}", zeros.display()),
            "bs=1M",
            "count=64",
            "oflag=direct",
            "status=none",
        ],
    );
    let read = |file: &Path| {
        let filename = format!("--filename={}", file.display());
        sb_fio(
            dir.path(),
            &json_args(&[
                "--name=z",
                "--rw=read",
                "--bs=256k",
                "--size=64M",
                "--direct=1",
                "--ioengine=psync",
                &filename,
            ]),
        )
    };
    let v = verdict_of(&read(&zeros), "z");
    assert!(reasons(&v, "zeros").is_empty(), "{v:#}");
    assert!(reasons(&v, "cache").is_empty(), "{v:#}");
    assert_ne!(v["validity"], "invalid", "{v:#}");

    let sparse = dir.path().join("s");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let v = verdict_of(&read(&sparse), "z");
    assert_eq!(reasons(&v, "zeros").len(), 1, "{v:#}");
    assert_eq!(v["validity"], "invalid", "{v:#}");
}

/// A file with its first ¾ written and the rest a hole, read with O_DIRECT: the zeros
/// reason names the holes, and the quarter the disk did not move is not called cache.
#[test]
fn holes_in_a_partly_written_file_are_not_counted_as_cache() {
    let dir = disk_dir();
    let file = dir.path().join("part");
    random_file(&file, 48 << 20);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let run = sb_fio(
        dir.path(),
        &json_args(&[
            "--name=p",
            "--rw=read",
            "--bs=64k",
            "--size=64M",
            "--direct=1",
            "--ioengine=psync",
            &format!("--filename={}", file.display()),
        ]),
    );
    let v = verdict_of(&run, "p");
    let zeros = reasons(&v, "zeros");
    assert_eq!(zeros.len(), 1, "{v:#}");
    assert!(zeros[0].contains("returned zeros"), "{v:#}");
    assert!(reasons(&v, "cache").is_empty(), "{v:#}");
}

/// An O_DIRECT job and a buffered job on another, warm, file in one group: the buffered
/// one is served by the page cache and named; the direct one moved its bytes from the disk
/// and is not blamed for its neighbour (each job is judged on its own threads' reads).
#[test]
fn a_direct_job_is_not_blamed_for_its_buffered_neighbour() {
    let dir = disk_dir();
    let (cold, hot) = (dir.path().join("cold"), dir.path().join("hot"));
    random_file(&cold, 32 << 20);
    random_file(&hot, 32 << 20);
    evict(&cold);
    warm(&hot);
    let run = sb_fio(
        dir.path(),
        &json_args(&[
            "--ioengine=psync",
            "--rw=read",
            "--bs=1M",
            "--size=32M",
            "--time_based",
            "--runtime=2",
            "--name=direct",
            "--direct=1",
            &format!("--filename={}", cold.display()),
            "--name=buffered",
            "--direct=0",
            "--invalidate=0",
            &format!("--filename={}", hot.display()),
        ]),
    );
    let d = verdict_of(&run, "direct");
    assert!(reasons(&d, "cache").is_empty(), "{d:#}");
    let b = verdict_of(&run, "buffered");
    let cache = reasons(&b, "cache");
    assert_eq!(cache.len(), 1, "{b:#}");
    assert!(cache[0].contains("(use --direct=1)"), "{b:#}");
    assert_eq!(b["validity"], "invalid", "{b:#}");
}

/// A warm buffered re-read while another process reads the same disk with O_DIRECT: the
/// other process's bytes are not this job's, and the cache that served it is named.
#[test]
fn cache_is_found_behind_another_reader_of_the_same_disk() {
    if !have_tool("dd") {
        return;
    }
    let dir = disk_dir();
    let (mine, theirs) = (dir.path().join("mine"), dir.path().join("theirs"));
    random_file(&mine, 16 << 20);
    random_file(&theirs, 64 << 20);
    warm(&mine);
    let reader = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "while :; do dd if={} of=/dev/null bs=1M iflag=direct 2>/dev/null; done",
            theirs.display()
        ))
        .spawn()
        .unwrap();
    let reader = ChildGuard(Some(reader));
    // A rate the other reader outruns: its bytes alone exceed what this job reports.
    let run = sb_fio(
        dir.path(),
        &json_args(&[
            "--name=rr",
            "--rw=read",
            "--bs=1M",
            "--size=16M",
            "--rate=16m",
            "--time_based",
            "--runtime=2",
            "--ioengine=psync",
            "--invalidate=0",
            &format!("--filename={}", mine.display()),
        ]),
    );
    drop(reader);
    let v = verdict_of(&run, "rr");
    let cache = reasons(&v, "cache");
    assert_eq!(cache.len(), 1, "{v:#}");
    assert!(cache[0].contains("the page cache served"), "{v:#}");
    assert_eq!(v["validity"], "invalid", "{v:#}");
}

/// The CPUs /proc/stat counts: the machine's, whatever an affinity mask allows.
fn machine_cpus() -> usize {
    std::fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .filter(|l| {
            l.strip_prefix("cpu")
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count()
}

/// storbench pinned to CPU 0 and a busy loop on CPU 1: the load is judged against the
/// machine's CPUs, not the one the client may use, and the busy loop is named.
#[test]
fn a_pinned_client_still_sees_the_machines_load() {
    let cpus = machine_cpus();
    if !have_tool("taskset") || cpus < 2 {
        eprintln!("SKIP: needs taskset and two CPUs");
        return;
    }
    let spin = std::process::Command::new("taskset")
        .args(["-c", "1", "sh", "-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let spin = ChildGuard(Some(spin));
    let base = common::storbench();
    let mut c = std::process::Command::new("taskset");
    c.envs(base.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .args(["-c", "0"])
        .arg(base.get_program())
        .args([
            "fio",
            "--no-save",
            "--output-format=json",
            "--name=pinned",
            "--ioengine=null",
            "--rw=read",
            "--bs=4k",
            "--size=1G",
            "--rate_iops=1000",
            "--time_based",
            "--runtime=2",
        ]);
    let run = Run::of(&mut c);
    drop(spin);
    let v = verdict_of(&run, "pinned");
    let capacity = format!("of this machine's {}%", cpus * 100);
    let host = reasons(&v, "host");
    assert!(
        host.iter()
            .any(|m| m.contains("other processes used") && m.contains(&capacity)),
        "{v:#}"
    );
}

/// A file on tmpfs: the verdict says the data lives in memory, not "cache unknown".
#[test]
fn a_tmpfs_target_says_the_data_lives_in_memory() {
    if !common::system::root_or_skip("a tmpfs mount") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = Mount::new("tmpfs", "tmpfs", &dir.path().join("m"), "size=64m");
    let filename = format!("--filename={}", mnt.point.join("f").display());
    let run = sb_fio(
        dir.path(),
        &json_args(&[
            "--name=mem",
            "--rw=read",
            "--bs=1M",
            "--size=16M",
            "--ioengine=psync",
            &filename,
        ]),
    );
    let v = verdict_of(&run, "mem");
    let cache = reasons(&v, "cache");
    assert_eq!(cache.len(), 1, "{v:#}");
    assert!(cache[0].contains("the data lives in memory"), "{v:#}");
    assert!(!cache[0].contains("cache unknown"), "{v:#}");
}

const BLKIO: &str = "/sys/fs/cgroup/blkio";

/// A blkio cgroup capping reads of one device; removed on drop.
struct Throttle {
    dir: PathBuf,
}

impl Throttle {
    fn new(dev: &str, read_bps: u64) -> Option<Throttle> {
        if !Path::new(BLKIO)
            .join("blkio.throttle.read_bps_device")
            .exists()
        {
            eprintln!("SKIP: no cgroup v1 blkio throttling at {BLKIO}");
            return None;
        }
        let dir = Path::new(BLKIO).join(format!("storbench-cases-{}", std::process::id()));
        std::fs::create_dir(&dir).expect("make the blkio cgroup");
        let rdev = std::fs::metadata(dev).unwrap().rdev();
        let (major, minor) = (libc::major(rdev), libc::minor(rdev));
        let rule = format!("{major}:{minor} {read_bps}");
        std::fs::write(dir.join("blkio.throttle.read_bps_device"), rule).unwrap();
        Some(Throttle { dir })
    }

    /// `storbench fio <args>` run inside the cgroup.
    fn run(&self, args: &[&str]) -> Run {
        let base = common::storbench();
        let mut sh = std::process::Command::new("sh");
        sh.envs(base.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .env("PROCS", self.dir.join("cgroup.procs"))
            .args(["-c", r#"echo $$ > "$PROCS" && exec "$0" "$@""#])
            .arg(base.get_program())
            .args(["fio", "--no-save", "--output-format=json"])
            .args(args);
        Run::of(&mut sh)
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Little's law holds for every QD1 job; "latency-bound" needs the time per IO to be the
/// device's: QD1 O_DIRECT reads of the disk are (the device's service time is named), a
/// cached QD1 read is CPU work, and QD1 reads under a blkio cap wait in the throttle, not
/// on the device: neither of those is called latency-bound.
#[test]
fn latency_bound_needs_the_device_to_be_the_wait() {
    let dir = disk_dir();
    let file = dir.path().join("data");
    random_file(&file, 32 << 20);
    let filename = format!("--filename={}", file.display());
    let qd1 = |extra: &[&str]| {
        let args = [
            &[
                "--name=q",
                "--rw=randread",
                "--bs=4k",
                "--size=32M",
                "--iodepth=1",
                "--ioengine=psync",
                "--time_based",
                "--runtime=2",
                filename.as_str(),
            ][..],
            extra,
        ]
        .concat();
        sb_fio(dir.path(), &json_args(&args))
    };
    let v = verdict_of(&qd1(&["--direct=1"]), "q");
    let latency = reasons(&v, "latency");
    assert_eq!(latency.len(), 1, "{v:#}");
    assert!(latency[0].contains("of which the device ("), "{v:#}");

    warm(&file);
    let v = verdict_of(&qd1(&["--direct=0", "--invalidate=0"]), "q");
    assert!(reasons(&v, "latency").is_empty(), "{v:#}");

    if !LoopDev::available() {
        return;
    }
    let dev = LoopDev::new(dir.path(), 32 << 20);
    dev.write_at(0, &random_bytes(32 << 20));
    let Some(cap) = Throttle::new(&dev.dev, 2 << 20) else {
        return;
    };
    let run = cap.run(&[
        "--name=q",
        "--rw=randread",
        "--bs=64k",
        "--iodepth=1",
        "--direct=1",
        "--ioengine=psync",
        "--time_based",
        "--runtime=2",
        &format!("--filename={}", dev.dev),
    ]);
    let v = verdict_of(&run, "q");
    assert!(reasons(&v, "latency").is_empty(), "{v:#}");
}

/// A btrfs file system on a loop device, unmounted and detached on drop.
struct Btrfs {
    mount: Mount,
    _dev: LoopDev,
}

fn btrfs(dir: &Path, options: &str) -> Option<Btrfs> {
    if !LoopDev::available() {
        return None;
    }
    let _ = std::process::Command::new("modprobe").arg("btrfs").status();
    let have = std::fs::read_to_string("/proc/filesystems").is_ok_and(|f| f.contains("btrfs"));
    if !have_tool("mkfs.btrfs") || !have {
        eprintln!("SKIP: no btrfs (mkfs.btrfs or the kernel module)");
        return None;
    }
    let dev = LoopDev::new(dir, 512 << 20);
    sh("mkfs.btrfs", &["-q", "-f", &dev.dev]);
    let mount = Mount::new("btrfs", &dev.dev, &dir.join("mnt"), options);
    Some(Btrfs { mount, _dev: dev })
}

/// btrfs gives its files an anonymous device; its mount names the loop device, whose disks
/// are measured: a warm re-read is named as the page cache's, not "cache unknown".
#[test]
fn warm_reads_on_btrfs_name_the_cache() {
    let dir = disk_dir();
    let Some(fs) = btrfs(dir.path(), "") else {
        return;
    };
    let file = fs.mount.point.join("f");
    random_file(&file, 32 << 20);
    warm(&file);
    let run = sb_fio(
        dir.path(),
        &json_args(&[
            "--name=b",
            "--rw=read",
            "--bs=1M",
            "--size=32M",
            "--ioengine=psync",
            "--invalidate=0",
            "--time_based",
            "--runtime=1",
            &format!("--filename={}", file.display()),
        ]),
    );
    let v = verdict_of(&run, "b");
    let cache = reasons(&v, "cache");
    assert_eq!(cache.len(), 1, "{v:#}");
    assert!(cache[0].contains("the page cache served"), "{v:#}");
    assert_eq!(v["validity"], "invalid", "{v:#}");
}

/// Zero-filled writes to btrfs with `compress=zstd`: into extents fio's default
/// `fallocate=native` preallocated, btrfs stores them whole (its device writes every
/// byte), so no compression reason; without preallocation it compresses them and the
/// reason gives the device's figure.
#[test]
fn compression_is_judged_on_what_the_device_wrote() {
    let dir = disk_dir();
    let Some(fs) = btrfs(dir.path(), "compress=zstd") else {
        return;
    };
    let write = |name: &str, fallocate: &str| {
        let filename = format!("--filename={}", fs.mount.point.join(name).display());
        let fallocate = format!("--fallocate={fallocate}");
        let run = sb_fio(
            dir.path(),
            &json_args(&[
                "--name=c",
                "--rw=write",
                "--bs=1M",
                "--size=64M",
                "--ioengine=psync",
                "--zero_buffers=1",
                "--end_fsync=1",
                &fallocate,
                &filename,
            ]),
        );
        verdict_of(&run, "c")
    };
    let v = write("pre", "native");
    assert!(reasons(&v, "compressible").is_empty(), "{v:#}");
    let v = write("none", "none");
    let c = reasons(&v, "compressible");
    assert_eq!(c.len(), 1, "{v:#}");
    assert!(c[0].contains("(zstd)") && c[0].contains("wrote"), "{v:#}");
    assert_eq!(v["validity"], "invalid", "{v:#}");
}

/// A steady O_DIRECT job told what its drop was: advice for reads never names a write
/// cache, and a direct job's cache reason never says "use --direct=1". Built with a loop
/// device without direct IO, whose backing file the host's page cache serves.
#[test]
fn a_direct_job_served_by_a_cache_below_gets_advice_that_fits() {
    if !LoopDev::available() {
        return;
    }
    let dir = disk_dir();
    let dev = LoopDev::new(dir.path(), 32 << 20);
    dev.write_at(0, &random_bytes(32 << 20));
    // Read the backing file once, so the host's page cache holds it.
    warm(&dir.path().join("loop.img"));
    let run = sb_fio(
        dir.path(),
        &json_args(&[
            "--name=d",
            "--rw=read",
            "--bs=1M",
            "--size=32M",
            "--direct=1",
            "--ioengine=psync",
            "--time_based",
            "--runtime=1",
            &format!("--filename={}", dev.dev),
        ]),
    );
    let v = verdict_of(&run, "d");
    let cache = reasons(&v, "cache");
    assert_eq!(cache.len(), 1, "{v:#}");
    assert!(!cache[0].contains("use --direct=1"), "{v:#}");
    assert!(cache[0].contains("although the job used direct=1"), "{v:#}");
}

/// Clean cases stay clean: a cold buffered read (its pages dropped first) moved its bytes
/// from the disk, so no cache reason; and the same machine left alone, unpinned, is no busy
/// host. Runs alone (.config/nextest.toml): another test beside it is other load.
#[test]
fn a_cold_buffered_read_on_a_quiet_machine_is_clean() {
    let dir = disk_dir();
    let file = dir.path().join("cold");
    random_file(&file, 64 << 20);
    evict(&file);
    let filename = format!("--filename={}", file.display());
    let run = sb_fio(
        dir.path(),
        &json_args(&[
            "--name=cold",
            "--rw=read",
            "--bs=1M",
            "--size=64M",
            "--direct=0",
            "--ioengine=psync",
            &filename,
        ]),
    );
    let v = verdict_of(&run, "cold");
    assert!(reasons(&v, "cache").is_empty(), "{v:#}");
    assert!(reasons(&v, "zeros").is_empty(), "{v:#}");

    let quiet = sb_fio(
        dir.path(),
        &json_args(&[
            "--name=quiet",
            "--ioengine=null",
            "--rw=read",
            "--bs=4k",
            "--size=1G",
            "--rate_iops=1000",
            "--time_based",
            "--runtime=2",
        ]),
    );
    let v = verdict_of(&quiet, "quiet");
    let busy: Vec<&str> = reasons(&v, "host")
        .into_iter()
        .filter(|m| m.contains("other processes used") || m.contains("waited for a CPU"))
        .collect();
    assert!(busy.is_empty(), "{v:#}");
}
