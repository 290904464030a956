//! A slow IO never loses the result. The squares of latencies add past 2^64 ns² with one IO
//! of 4.3 s, or a few IOs of a second or more behind a deep queue (a NAS over a slow link, a
//! server restart); the sums are kept wide enough that such runs print and save their
//! figures. Here a real block device is made that slow with the kernel's own throttling (a
//! cgroup v1 blkio limit on a loop device), and the run must print, and save, its figures.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use common::Run;
use common::system::LoopDev;

const BLKIO: &str = "/sys/fs/cgroup/blkio";

/// A blkio cgroup limiting reads from one device; removed on drop.
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
        let dir = Path::new(BLKIO).join(format!("storbench-slow-io-{}", std::process::id()));
        std::fs::create_dir(&dir).expect("make the blkio cgroup");
        let rdev = std::fs::metadata(dev).unwrap().rdev();
        let rule = format!("{}:{} {read_bps}", libc::major(rdev), libc::minor(rdev));
        std::fs::write(dir.join("blkio.throttle.read_bps_device"), rule).unwrap();
        Some(Throttle { dir })
    }

    /// `storbench args…`, started inside the cgroup (the shell joins it, then execs).
    fn run(&self, db: &Path, args: &[&str]) -> Run {
        let base = common::storbench();
        let mut sh = std::process::Command::new("sh");
        sh.envs(base.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .env("STORBENCH_DB", db)
            .env("PROCS", self.dir.join("cgroup.procs"))
            .args(["-c", r#"echo $$ > "$PROCS" && exec "$0" "$@""#])
            .arg(base.get_program())
            .args(args);
        Run::of(&mut sh)
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn history_count(db: &Path) -> usize {
    let mut c = common::storbench();
    c.env("STORBENCH_DB", db)
        .args(["history", "--format", "json"]);
    let run = Run::of(&mut c);
    let doc: serde_json::Value = serde_json::from_str(run.ok()).expect("history JSON");
    doc.as_array().map_or(0, Vec::len)
}

#[test]
fn runs_with_multi_second_ios_are_printed_and_saved() {
    if !LoopDev::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let loopdev = LoopDev::new(dir.path(), 8 << 20);
    let dev = loopdev.dev.as_str();
    let db = dir.path().join("results.db");
    // 200 KiB/s: one 1 MiB read takes about 5 s (Σx² ≈ 2.6·10^19 ns² > 2^64).
    // 1 MiB/s with four 1 MiB reads in flight: 1, 2, 3 and 4 s (Σx² ≈ 3·10^19 ns²).
    let cases: [(u64, &str, u64); 2] = [
        (200 << 10, "--ioengine=psync --size=1M", 4_300_000_000),
        (
            1 << 20,
            "--ioengine=libaio --iodepth=4 --size=4M",
            3_000_000_000,
        ),
    ];
    for (n, (bps, line, slowest)) in cases.into_iter().enumerate() {
        let Some(throttle) = Throttle::new(dev, bps) else {
            return;
        };
        let mut args = vec!["fio", "--output-format=json", "--name=slow", "--rw=read"];
        let filename = format!("--filename={dev}");
        args.extend(["--bs=1M", "--direct=1", filename.as_str()]);
        args.extend(line.split(' '));
        let run = throttle.run(&db, &args);
        assert!(run.success(), "{line}: {}", run.stderr);
        let doc = run.fio_json();
        let read = &doc["jobs"][0]["read"];
        assert_eq!(
            read["io_bytes"].as_u64(),
            Some(if n == 0 { 1 } else { 4 } << 20)
        );
        let max = read["clat_ns"]["max"].as_u64().unwrap();
        assert!(
            max >= slowest,
            "{line}: slowest IO {max} ns, wanted a slow one"
        );
        let stddev = read["clat_ns"]["stddev"].as_f64().unwrap();
        assert!(stddev.is_finite(), "{line}: {stddev}");
        assert_eq!(history_count(&db), n + 1, "{line}: the run is saved");
    }
}
