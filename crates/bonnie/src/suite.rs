//! One run of the suite: the IO tests, then the file tests, on every concurrent copy, and
//! the result model built from what they measured. Whatever happens, the copies' files and
//! directories are gone when this returns.

use storbench_model::result::{
    BonnieResult, BonnieTest, BonnieTestId, Note, NoteLevel, RunMode, RunResult, TestSpan,
};

use crate::config::Config;
use crate::error::{BonnieError, Result};
use crate::file_tests::{Create, DeleteRandom, DeleteSeq, FileParams, StatRandom, StatSeq};
use crate::io::Io;
use crate::io_tests::{GetBlock, GetChar, IoParams, PutBlock, PutChar, Rewrite};
use crate::marker::Marker;
use crate::phase::{Start, run_phase};
use crate::ranks::{self, Ranks};
use crate::seeks::Seeks;
use crate::target::Target;
use crate::timing::Measured;
use crate::worker::Worker;
use crate::{Event, Factory};
use storbench_core::buffers::Arena;
use storbench_model::rng::mix64 as mix;

/// bonnie++'s MinTime: a test shorter than this prints `+++++`.
pub const MIN_TIME_NS: u64 = storbench_model::hosts::bonnie::MIN_TIME_NS;

/// Runs the suite once and returns its result (mode Bonnie, command line left empty),
/// each thread's engine built through the engines' one table.
pub fn run_once(cfg: &Config, observe: &mut dyn FnMut(Event)) -> Result<RunResult> {
    run_once_with(cfg, &storbench_engines::create, observe)
}

/// [`run_once`] with the engines `factory` builds: a test's engines that fail on cue.
pub fn run_once_with(
    cfg: &Config,
    factory: &Factory,
    observe: &mut dyn FnMut(Event),
) -> Result<RunResult> {
    let ranks = Ranks::default();
    let started = unix_ms();
    // Every rank checks, then all agree before any writes (a no-op on one host). The
    // marker is made before the workers, so it is dropped after them on every path.
    let marker = match crate::space::check_space(cfg, factory).and_then(|()| mark(cfg)) {
        Ok(m) => m,
        Err(e) => {
            ranks.fail();
            return Err(e);
        }
    };
    let mut workers = match make_workers(cfg, factory) {
        Ok(w) => w,
        Err(e) => {
            drop(marker);
            ranks.fail();
            return Err(e);
        }
    };
    ranks.agree(ranks::CHECKS, true)?;
    let outcome = run_tests(cfg, factory, &mut workers, observe, &ranks)
        .and_then(|tests| ranks.agree(ranks::END, true).map(|()| tests));
    // One step removes the files, then the marker, before this rank waits for or tells
    // anything to the others: after a stop signal mpirun's SIGKILL may follow as soon as
    // another rank exits (docs/multihost.md, "When a rank fails"). The marker stays if
    // files do.
    let cleanup: Vec<String> = workers
        .iter_mut()
        .filter_map(|w| w.cleanup().err())
        .collect();
    drop(marker);
    if outcome.is_err() {
        // The others learn at their next agreement and end too.
        ranks.fail();
    }
    let tests = match (outcome, cleanup.is_empty()) {
        (Ok(tests), true) => tests,
        (Ok(_), false) => return Err(BonnieError::Check(cleanup.join("; "))),
        (Err(e), true) => return Err(e),
        (Err(e), false) => {
            return Err(BonnieError::Cleanup {
                error: Box::new(e),
                cleanup: cleanup.join("; "),
            });
        }
    };
    let mut run = result(cfg, tests, started, workers[0].io.engine_name());
    add_engine_info(&mut run, &mut workers);
    run.environment = Some(storbench_core::env::collect(&[cfg.target.typed()]));
    if let Some(b) = run.bonnie.as_mut().filter(|b| b.compressible) {
        match storbench_core::compress::of_target(&cfg.target.typed()) {
            Ok(c) => b.target_compression = Some(c),
            Err(why) => b.compression_unknown = Some(why),
        }
    }
    storbench_core::analysis::annotate(&mut run);
    Ok(run)
}

/// The marker of a run in a local directory ([`crate::marker`]); none on a file server.
fn mark(cfg: &Config) -> Result<Option<Marker>> {
    match &cfg.target {
        Target::Local(dir) | Target::Cwd(dir) => {
            Marker::create(dir).map(Some).map_err(BonnieError::Refused)
        }
        Target::Remote(_) => Ok(None),
    }
}

/// A worker's buffer that could not be mapped, as one line.
pub(crate) fn buffer_error(e: std::io::Error) -> storbench_core::EngineError {
    storbench_core::EngineError::os("map", "the IO buffer", e)
}

fn make_workers(cfg: &Config, factory: &Factory) -> Result<Vec<Worker>> {
    let job = cfg.target.job(cfg.direct);
    let buf_len = cfg.chunk.max(cfg.file_chunk) as usize;
    (0..cfg.concurrency)
        .map(|i| {
            let buf = Arena::new(1, buf_len).map_err(buffer_error)?;
            let io = Io::new(factory(&job)?, &buf)?;
            let name = if cfg.concurrency == 1 {
                cfg.base_name.clone()
            } else {
                format!("{}.{i}", cfg.base_name)
            };
            // Copy 0 uses the seed itself, so `-z` repeats a single copy's choices exactly.
            let seed = if i == 0 {
                cfg.seed
            } else {
                mix(cfg.seed ^ u64::from(i))
            };
            storbench_core::stop::name_leftovers(&cfg.target.shown(&name));
            Ok(Worker::new(
                io,
                buf,
                &cfg.target.join(&name),
                cfg.target.meta_root(&name)?,
                seed,
            ))
        })
        .collect()
}

fn run_tests(
    cfg: &Config,
    factory: &Factory,
    workers: &mut [Worker],
    observe: &mut dyn FnMut(Event),
    ranks: &Ranks,
) -> Result<Vec<BonnieTest>> {
    let mut tests = Vec::new();
    let mut step =
        |id: BonnieTestId, run: &mut dyn FnMut(Start) -> Result<Measured>| -> Result<()> {
            observe(Event::Started(id));
            let start = |ready: bool| ranks.agree(ranks::before(id), ready);
            let m = run(&start)?;
            let test = to_test(cfg, id, m);
            observe(Event::Finished(test.clone()));
            tests.push(test);
            Ok(())
        };
    if cfg.io_tests() {
        let p = io_params(cfg);
        let job = cfg.target.job(cfg.direct);
        let seeks = Seeks {
            params: p,
            seeks: cfg.seeks,
            seekers: cfg.seekers,
            factory,
            job: &job,
        };
        let per_char = p.char_chunks > 0;
        if per_char {
            step(BonnieTestId::Putc, &mut |s| {
                run_phase(workers, &PutChar(p), s)
            })?;
        }
        step(BonnieTestId::PutBlock, &mut |s| {
            run_phase(workers, &PutBlock(p), s)
        })?;
        step(BonnieTestId::Rewrite, &mut |s| {
            run_phase(workers, &Rewrite(p), s)
        })?;
        if per_char {
            step(BonnieTestId::Getc, &mut |s| {
                run_phase(workers, &GetChar(p), s)
            })?;
        }
        step(BonnieTestId::GetBlock, &mut |s| {
            run_phase(workers, &GetBlock(p), s)
        })?;
        step(BonnieTestId::Seeks, &mut |s| run_phase(workers, &seeks, s))?;
        for w in workers.iter_mut() {
            w.at("", |m, p| m.unlink(p))?;
            w.file_exists = false;
        }
    }
    if cfg.file_tests() {
        let p = file_params(cfg);
        let (seq, rand) = (
            Create {
                params: p,
                random: false,
            },
            Create {
                params: p,
                random: true,
            },
        );
        step(BonnieTestId::SeqCreate, &mut |s| {
            run_phase(workers, &seq, s)
        })?;
        step(BonnieTestId::SeqStat, &mut |s| {
            run_phase(workers, &StatSeq(p), s)
        })?;
        step(BonnieTestId::SeqDel, &mut |s| {
            run_phase(workers, &DeleteSeq(p), s)
        })?;
        step(BonnieTestId::RanCreate, &mut |s| {
            run_phase(workers, &rand, s)
        })?;
        step(BonnieTestId::RanStat, &mut |s| {
            run_phase(workers, &StatRandom(p), s)
        })?;
        step(BonnieTestId::RanDel, &mut |s| {
            run_phase(workers, &DeleteRandom(p), s)
        })?;
    }
    Ok(tests)
}

fn io_params(cfg: &Config) -> IoParams {
    IoParams {
        chunk: cfg.chunk as u32,
        chunks: (cfg.file_mib << 20) / cfg.chunk,
        char_chunks: (cfg.char_io_mib << 20) / cfg.chunk,
        direct: cfg.direct,
        fsync_each: cfg.fsync_each,
        compressible: cfg.compressible,
        seed: cfg.seed,
    }
}

fn file_params(cfg: &Config) -> FileParams {
    FileParams {
        count: (cfg.num_files * 1024) as usize,
        num_dirs: cfg.num_dirs as u32,
        max_size: cfg.max_size,
        min_size: cfg.min_size,
        chunk: cfg.file_chunk as u32,
        fsync_each: cfg.fsync_each,
        compressible: cfg.compressible,
    }
}

/// Rates as bonnie++ computes them, summed over the copies: KiB/s for IO, seeks/s, files/s;
/// `+++++` (None) under half a second.
fn to_test(cfg: &Config, id: BonnieTestId, m: Measured) -> BonnieTest {
    let copies = f64::from(cfg.concurrency);
    let work = copies
        * match id {
            BonnieTestId::Putc | BonnieTestId::Getc => (cfg.char_io_mib * 1024) as f64,
            BonnieTestId::PutBlock | BonnieTestId::Rewrite | BonnieTestId::GetBlock => {
                (cfg.file_mib * 1024) as f64
            }
            BonnieTestId::Seeks => cfg.seeks as f64,
            _ => (cfg.num_files * 1024) as f64,
        };
    let secs = m.elapsed_ns.max(1) as f64 / 1e9;
    let measured = m.elapsed_ns >= MIN_TIME_NS;
    BonnieTest {
        id,
        rate: measured.then(|| work / secs),
        cpu_pct: measured.then(|| m.cpu_ns as f64 / m.elapsed_ns as f64 * 100.0),
        elapsed_ns: m.elapsed_ns,
        max_latency_ns: Some(m.max_latency_ns),
        span: Some(TestSpan {
            start_unix_ns: crate::timing::unix_ns(m.start),
            work,
            cpu_ns: m.cpu_ns,
        }),
    }
}

fn result(cfg: &Config, tests: Vec<BonnieTest>, started: u64, engine: &str) -> RunResult {
    RunResult {
        global_options: effective_options(cfg, engine),
        notes: cfg.notes.clone(),
        bonnie: Some(BonnieResult {
            name: cfg.name.clone(),
            version: crate::VERSION.into(),
            concurrency: cfg.concurrency,
            seed: cfg.seed,
            file_size_mib: cfg.file_mib,
            chunk_bytes: cfg.chunk,
            seeks: cfg.seeks,
            seekers: cfg.seekers,
            num_files: cfg.num_files,
            max_size: cfg.max_size,
            min_size: cfg.min_size,
            num_dirs: cfg.num_dirs,
            file_chunk_bytes: cfg.file_chunk,
            compressible: cfg.compressible,
            target_compression: None,
            compression_unknown: None,
            direct: cfg.direct,
            fsync_each_write: cfg.fsync_each,
            tests,
        }),
        ..RunResult::new(RunMode::Bonnie, crate::VERSION.into(), started, unix_ms())
    }
}

/// The engine's facts (NFS server, transfer sizes…) as options, and its events (lost
/// connections, server restarts) as warnings.
fn add_engine_info(run: &mut RunResult, workers: &mut [Worker]) {
    for (i, w) in workers.iter_mut().enumerate() {
        let info = w.io.info();
        if i == 0 {
            run.global_options.extend(info.details);
        }
        for message in info.notes {
            run.notes.push(Note {
                level: NoteLevel::Warning,
                code: "warn.engine".into(),
                message,
            });
        }
    }
}

/// The settings in effect that the bonnie result has no field for.
fn effective_options(cfg: &Config, engine: &str) -> Vec<(String, String)> {
    vec![
        ("directory".into(), cfg.target.to_string()),
        ("ioengine".into(), engine.into()),
        ("char_io_mib".into(), cfg.char_io_mib.to_string()),
        ("ram_mib".into(), cfg.ram_mib.to_string()),
    ]
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
