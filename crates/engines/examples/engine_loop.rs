//! Drives one engine in a tight queue/commit/reap loop, to compare engine overhead with fio
//! while the full CLI is not at hand (bench/engines.sh uses it as a fallback).
//!
//! usage: engine_loop ENGINE PATH SIZE BS IODEPTH SECONDS [direct] [rand] [opt=value ...]
//! prints: `iops=<n> cpu_per_io_ns=<n> ios=<n> cpu_s=<f>` (CPU of the whole process: user+sys)

use std::alloc::{Layout, alloc_zeroed};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use storbench_core::{Completion, EngineSetup, FileSpec, IoKind, IoUnit, OpenOptions, Queued};
use storbench_job::{JobSpec, SizeSpec};

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 6 {
        eprintln!(
            "usage: engine_loop ENGINE PATH SIZE BS IODEPTH SECONDS [direct] [rand] [opt=value ...]"
        );
        std::process::exit(2);
    }
    let num = |i: usize| args[i].parse::<u64>().expect("a number");
    let (size, bs, depth, secs) = (num(2), num(3) as usize, num(4) as u32, num(5));
    let direct = args.iter().any(|a| a == "direct");
    let random = args.iter().any(|a| a == "rand");
    let mut job = JobSpec::new("loop");
    job.ioengine = args[0].clone();
    job.iodepth = depth;
    job.size = Some(SizeSpec::Bytes(size));
    for (k, v) in args[6..].iter().filter_map(|a| a.split_once('=')) {
        if let Err(e) = job.engine_options.set(k, v) {
            eprintln!("engine_loop: {e}");
            std::process::exit(2);
        }
    }
    if let Err(e) = run(
        &job,
        &args[1],
        size,
        bs,
        direct,
        random,
        Duration::from_secs(secs),
    ) {
        eprintln!("engine_loop: {e}");
        std::process::exit(1);
    }
}

fn run(
    job: &JobSpec,
    path: &str,
    size: u64,
    bs: usize,
    direct: bool,
    random: bool,
    runtime: Duration,
) -> Result<(), storbench_core::EngineError> {
    let mut engine = storbench_engines::create(job)?;
    let depth = if engine.caps().synchronous {
        1
    } else {
        job.iodepth.max(1)
    };
    let layout = Layout::from_size_align(depth as usize * bs, 4096).expect("layout");
    // SAFETY: non-zero layout; leaked on purpose (lives until exit).
    let arena = NonNull::new(unsafe { alloc_zeroed(layout) }).expect("memory");
    engine.setup(&EngineSetup {
        iodepth: depth,
        arena,
        slot_len: bs,
        slots: depth,
    })?;
    let open = OpenOptions {
        read: true,
        direct,
        ..OpenOptions::default()
    };
    let file = engine.open(&FileSpec::new(
        storbench_job::target::Target::classify(path),
        open,
    ))?;
    let blocks = (size / bs as u64).max(1);
    let mut free: Vec<u32> = (0..depth).collect();
    let mut done: Vec<Completion> = Vec::with_capacity(depth as usize);
    let (mut x, mut seq, mut ios, mut inflight) = (0x2545_F491_4F6C_DD1Du64, 0u64, 0u64, 0u32);
    let mut rounds = 0u64;
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    let end = t0 + runtime;
    loop {
        while let Some(tag) = free.pop() {
            let block = if random {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % blocks
            } else {
                seq = (seq + 1) % blocks;
                seq
            };
            // SAFETY: tag < depth slots.
            let buf = unsafe { NonNull::new_unchecked(arena.as_ptr().add(tag as usize * bs)) };
            let io = IoUnit {
                file,
                kind: IoKind::Read,
                offset: block * bs as u64,
                len: bs as u32,
                buf,
                buf_index: tag,
                tag,
                ioprio: 0,
            };
            match engine.queue(&io)? {
                Queued::Done(_) => {
                    ios += 1;
                    free.push(tag);
                    break;
                }
                Queued::Pending => inflight += 1,
                Queued::Busy => {
                    free.push(tag);
                    break;
                }
                Queued::End => return Ok(()),
            }
        }
        engine.commit()?;
        if inflight > 0 {
            done.clear();
            engine.reap(1, &mut done)?;
            for c in &done {
                free.push(c.tag);
            }
            inflight -= done.len() as u32;
            ios += done.len() as u64;
        }
        rounds += 1;
        if rounds & 255 == 0 && Instant::now() >= end {
            break;
        }
    }
    while inflight > 0 {
        done.clear();
        engine.reap(1, &mut done)?;
        inflight -= done.len() as u32;
    }
    let (elapsed, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    println!(
        "iops={:.0} cpu_per_io_ns={:.0} ios={ios} cpu_s={cpu:.3}",
        ios as f64 / elapsed,
        cpu * 1e9 / ios as f64
    );
    engine.close(file)
}
