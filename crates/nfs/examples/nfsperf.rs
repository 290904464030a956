//! A minimal load generator straight on the client (no runner): sequential or random reads
//! or writes of one file with N requests in flight. For profiling the client itself.
//!
//! `nfsperf <nfs-url-of-file> <read|write|randread> <bs> <iodepth> <bytes>`
//!
//! A URL with `version=4`, `4.1` or `4.2` runs the same load over the NFSv4 client, with a
//! session as wide as the depth (an IO larger than the session's rsize/wsize becomes
//! several requests, all in flight).

use std::time::Instant;

use storbench_nfs::v4::{self, Client4};
use storbench_nfs::{Client, NfsStat, NfsUrl, NfsVersion, Stable};

fn cpu_secs() -> f64 {
    // SAFETY: getrusage fills the struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 6 {
        eprintln!("usage: nfsperf <nfs-url-of-file> <read|write|randread> <bs> <iodepth> <bytes>");
        std::process::exit(2);
    }
    let url = NfsUrl::parse(&a[1]).unwrap_or_else(|e| panic!("{e}"));
    let (mode, bs, depth, total): (&str, u32, usize, u64) = (
        &a[2],
        a[3].parse().unwrap(),
        a[4].parse().unwrap(),
        a[5].parse().unwrap(),
    );
    if url.version.is_some_and(NfsVersion::is_v4) {
        return run_v4(&url, mode, bs, depth, total);
    }
    let mut c = Client::mount(&url).unwrap_or_else(|e| panic!("{e}"));
    let rel = c.relative(&url.path).unwrap().to_string();
    let fh = match c.lookup(&rel) {
        Ok((fh, _)) => fh,
        Err(e) if e.nfs_status() == Some(NfsStat::NOENT) => c.create(&rel, 0o644).unwrap(),
        Err(e) => panic!("{e}"),
    };
    let (rsize, wsize) = (c.rsize(), c.wsize());
    let mut bufs = vec![0xa5u8; bs as usize * depth];
    let n = total / bs as u64;
    let blocks = n.max(1);
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let (t0, c0) = (Instant::now(), cpu_secs());
    let (mut issued, mut done) = (0u64, 0u64);
    let mut free: Vec<usize> = (0..depth).collect();
    while done < n {
        while issued < n {
            let Some(slot) = free.pop() else { break };
            let off = if mode == "randread" {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                (rng % blocks) * bs as u64
            } else {
                issued * bs as u64
            };
            let p = bufs[slot * bs as usize..].as_mut_ptr();
            let t = c.transport();
            // SAFETY: each slot's buffer is used by one request at a time.
            unsafe {
                if mode == "write" {
                    t.write(&fh, 0, off, p, bs, wsize, Stable::Unstable, slot as u64)
                        .unwrap();
                } else {
                    t.read(&fh, 0, off, p, bs, rsize, slot as u64).unwrap();
                }
            }
            issued += 1;
        }
        c.transport().flush().unwrap();
        c.transport()
            .wait(1, &mut |u, _| {
                free.push(u as usize);
                done += 1;
            })
            .unwrap_or_else(|e| panic!("{e}"));
    }
    if mode == "write" {
        c.commit_sync(&fh, 0).unwrap();
    }
    let secs = t0.elapsed().as_secs_f64();
    let cpu = cpu_secs() - c0;
    println!(
        "{mode} bs={bs} iodepth={depth}: {:.1} MB/s, {:.0} IOPS, client CPU {:.0}% ({:.2} us/IO), rsize={rsize} wsize={wsize}",
        (n * bs as u64) as f64 / secs / 1e6,
        n as f64 / secs,
        cpu / secs * 100.0,
        cpu / n as f64 * 1e6
    );
}

/// Next offset: sequential, or a random block for `randread`.
fn offset(mode: &str, rng: &mut u64, issued: u64, blocks: u64, bs: u32) -> u64 {
    if mode == "randread" {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        (*rng % blocks) * u64::from(bs)
    } else {
        issued * u64::from(bs)
    }
}

fn run_v4(url: &NfsUrl, mode: &str, bs: u32, depth: usize, total: u64) {
    let (dir, name) = url.path.rsplit_once('/').unwrap_or(("", &url.path));
    let dir_url = NfsUrl {
        path: if dir.is_empty() {
            "/".into()
        } else {
            dir.into()
        },
        ..url.clone()
    };
    let probe = Client4::connect_url(&dir_url, 1).unwrap_or_else(|e| panic!("{e}"));
    let max = if mode == "write" {
        probe.wsize()
    } else {
        probe.rsize()
    };
    drop(probe);
    // Requests of at most the session's size, as many in flight as bytes at `depth` × `bs`.
    let req = bs.min(max);
    let depth = depth * (bs / req).max(1) as usize;
    let mut c = Client4::connect_url(&dir_url, depth as u32).unwrap_or_else(|e| panic!("{e}"));
    let create = (mode == "write").then_some(v4::Create::Unchecked { mode: 0o644 });
    let f = c
        .open(name, v4::SHARE_ACCESS_BOTH, create)
        .unwrap_or_else(|e| panic!("{e}"));
    let depth = depth.min(c.slots() as usize);
    let mut bufs = vec![0xa5u8; req as usize * depth];
    let n = total / u64::from(req);
    let blocks = n.max(1);
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let (t0, c0) = (Instant::now(), cpu_secs());
    let (mut issued, mut done) = (0u64, 0u64);
    let mut free: Vec<usize> = (0..depth).collect();
    while done < n {
        while issued < n {
            let Some(slot) = free.pop() else { break };
            let off = offset(mode, &mut rng, issued, blocks, req);
            let p = bufs[slot * req as usize..].as_mut_ptr();
            // SAFETY: each slot's buffer is used by one request at a time.
            unsafe {
                if mode == "write" {
                    c.submit_write(f, off, p, req, v4::Stable4::Unstable, slot as u64)
                } else {
                    c.submit_read(f, off, p, req, slot as u64)
                }
            }
            .unwrap_or_else(|e| panic!("{e}"));
            issued += 1;
        }
        c.flush().unwrap();
        c.reap(1, &mut |u, _| {
            free.push(u as usize);
            done += 1;
        })
        .unwrap_or_else(|e| panic!("{e}"));
    }
    if mode == "write" {
        c.commit(f).unwrap_or_else(|e| panic!("{e}"));
    }
    let secs = t0.elapsed().as_secs_f64();
    let cpu = cpu_secs() - c0;
    println!(
        "{mode} bs={bs} iodepth={depth} NFSv4.{}: {:.1} MB/s, {:.0} IOPS, client CPU {:.0}% ({:.2} us/IO), request={req}",
        c.minor_version(),
        (n * u64::from(req)) as f64 / secs / 1e6,
        n as f64 / secs,
        cpu / secs * 100.0,
        cpu / n as f64 * 1e6
    );
}
