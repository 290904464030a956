//! `cpuio`: fio's CPU burner. Moves no data and has no file: each IO is one busy period,
//! and the worker sleeps the engine's pause after it, so the job keeps `cpuload` percent of
//! one CPU busy: busy `cpuchunks` µs, idle `cpuchunks × (100 − cpuload) / cpuload` µs, as
//! fio sets its thinktime. `cpumode=qsort` sorts 1 MiB of numbers four ways instead of
//! spinning, and, as fio, sizes each idle period after the time the last sort took.
//! fio's job starts with `name (mode): ioengine=cpuio, cpuload=N, cpucycle=N`.

use std::time::Instant;

use storbench_core::{Engine, EngineError, IoUnit, Queued};
use storbench_job::{CpuMode, JobSpec};

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "cpuio";

/// fio's default busy period, µs.
const DEFAULT_CHUNK_US: u32 = 50_000;

/// Numbers sorted by qsort mode: fio's 256 Ki 32-bit integers.
const QSORT_LEN: usize = 256 << 10;

pub struct CpuIo {
    name: String,
    load: u32,
    chunk_us: u32,
    mode: CpuMode,
    /// qsort mode's numbers, made once (fio's multiply-with-carry from its seeds).
    data: Vec<i32>,
    /// ns of the last busy period, which the pause after it is sized by.
    busy_ns: u64,
}

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    let o = &job.engine_options;
    let load = o.cpuload.filter(|p| (1..=100).contains(p)).ok_or_else(|| {
        EngineError::unsupported("the cpuio engine needs cpuload=1 to 100 (percent of one CPU)")
    })?;
    let chunk_us = o.cpuchunks.unwrap_or(DEFAULT_CHUNK_US).max(1);
    let data = match o.cpumode {
        CpuMode::Noop => Vec::new(),
        CpuMode::Qsort => mwc_numbers(QSORT_LEN),
    };
    Ok(Box::new(CpuIo {
        name: job.name.clone(),
        load,
        chunk_us,
        mode: o.cpumode,
        data,
        busy_ns: u64::from(chunk_us) * 1000,
    }))
}

/// fio's qsort data: Marsaglia's multiply-with-carry generator from fio's fixed seeds.
fn mwc_numbers(n: usize) -> Vec<i32> {
    let (mut w, mut z) = (521_288_629u32, 362_436_069u32);
    (0..n)
        .map(|_| {
            z = 36969u32
                .wrapping_mul(z & 65535)
                .wrapping_add(z >> 16);
            w = 18000u32
                .wrapping_mul(w & 65535)
                .wrapping_add(w >> 16);
            (z << 16).wrapping_add(w) as i32
        })
        .collect()
}

impl CpuIo {
    /// Spins on the clock for one busy period, as fio's `usec_spin`.
    fn spin(&self) {
        let start = Instant::now();
        let chunk = std::time::Duration::from_micros(u64::from(self.chunk_us));
        while start.elapsed() < chunk {
            std::hint::spin_loop();
        }
    }

    /// fio's four sorts: ascending, descending, by signed byte, descending again.
    fn sort(&mut self) {
        let d = &mut self.data;
        d.sort_unstable();
        d.sort_unstable_by(|a, b| b.cmp(a));
        let bytes: &mut [i8] = bytemuck_i8(d);
        bytes.sort_unstable();
        d.sort_unstable_by(|a, b| b.cmp(a));
    }
}

/// The numbers as signed bytes, as fio re-orders them with a byte comparison.
fn bytemuck_i8(d: &mut [i32]) -> &mut [i8] {
    let len = std::mem::size_of_val(d);
    // SAFETY: i8 has no alignment or validity requirements, and the slice covers exactly
    // the bytes of `d`, borrowed mutably for the result's lifetime.
    unsafe { std::slice::from_raw_parts_mut(d.as_mut_ptr().cast::<i8>(), len) }
}

impl Engine for CpuIo {
    fn name(&self) -> &'static str {
        NAME
    }

    no_file_calls!();

    fn queue(&mut self, _io: &IoUnit) -> Result<Queued, EngineError> {
        let start = Instant::now();
        match self.mode {
            CpuMode::Noop => self.spin(),
            CpuMode::Qsort => {
                self.sort();
                self.busy_ns = start.elapsed().as_nanos() as u64;
            }
        }
        Ok(Queued::Done(0))
    }

    /// fio's thinktime for this engine: the busy period's share of idle, in whole µs as
    /// fio computes it (`cpucycle × (100 − cpuload) / cpuload`).
    fn pause_ns(&mut self) -> u64 {
        let busy_us = self.busy_ns / 1000;
        busy_us * u64::from(100 - self.load) / u64::from(self.load) * 1000
    }

    fn start_lines(&self) -> Vec<String> {
        vec![format!(
            "{} ({}): ioengine={NAME}, cpuload={}, cpucycle={}",
            self.name,
            self.mode.fio_name(),
            self.load,
            self.chunk_us
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(load: u32, chunk: u32) -> JobSpec {
        let mut j = JobSpec::new("burn");
        j.ioengine = NAME.into();
        j.engine_options.set("cpuload", &load.to_string()).unwrap();
        j.engine_options
            .set("cpuchunks", &chunk.to_string())
            .unwrap();
        j
    }

    #[test]
    fn idle_keeps_the_load_as_fio_computes_it() {
        let mut e = create(&job(50, 1000)).unwrap();
        assert_eq!(e.pause_ns(), 1_000_000);
        let mut e = create(&job(80, 10_000)).unwrap();
        assert_eq!(e.pause_ns(), 2_500_000);
        let mut e = create(&job(100, 10_000)).unwrap();
        assert_eq!(e.pause_ns(), 0);
        // fio's integer µs: 33 µs busy at 30 % idles 77 µs, not 77.0 µs.
        let mut e = create(&job(30, 33)).unwrap();
        assert_eq!(e.pause_ns(), 77_000);
    }

    #[test]
    fn a_busy_period_spins_its_chunk_and_moves_nothing() {
        let mut e = create(&job(50, 2000)).unwrap();
        let io = IoUnit {
            file: 0,
            kind: storbench_core::IoKind::Read,
            offset: 0,
            len: 0,
            buf: std::ptr::NonNull::dangling(),
            buf_index: 0,
            tag: 0,
            ioprio: 0,
        };
        let t = Instant::now();
        assert_eq!(e.queue(&io).unwrap(), Queued::Done(0));
        assert!(t.elapsed() >= std::time::Duration::from_micros(2000));
        assert_eq!(
            e.start_lines(),
            ["burn (noop): ioengine=cpuio, cpuload=50, cpucycle=2000"]
        );
    }

    #[test]
    fn qsort_sorts_fio_numbers_and_sizes_the_pause_by_them() {
        let mut j = job(25, 1000);
        j.engine_options.set("cpumode", "qsort").unwrap();
        let mut e = CpuIo {
            name: "q".into(),
            load: 25,
            chunk_us: 1000,
            mode: CpuMode::Qsort,
            data: mwc_numbers(QSORT_LEN),
            busy_ns: 0,
        };
        // fio's mwc32 from its seeds (computed by hand from fio's formula).
        assert_eq!(mwc_numbers(3), [820_856_226, -1_963_778_298, -261_527_296]);
        e.sort();
        assert!(e.data.windows(2).all(|w| w[0] >= w[1]));
        e.busy_ns = 4_000_000;
        assert_eq!(e.pause_ns(), 12_000_000);
        assert!(create(&j).is_ok());
    }

    #[test]
    fn a_load_out_of_range_is_refused() {
        let mut j = JobSpec::new("x");
        j.ioengine = NAME.into();
        assert!(create(&j).is_err());
        j.engine_options.set("cpuload", "101").unwrap();
        assert!(create(&j).is_err());
    }
}
