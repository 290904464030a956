//! The per-IO log path allocates nothing per IO: a worker copies each record into a buffer
//! made before the start and swaps full buffers for empty ones with the writer thread,
//! also when it has to wait for one (`storbench_model::iolog`).

use std::io;

use storbench_model::iolog::{BUFFERS, HistLine, IoLogSink, IoRecord, LogPipes, RECORDS};
use storbench_testkit::alloc::{CountingAllocator, allocations_during};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// A sink as slow as a busy disk, so the IO thread waits for buffers too.
struct Slow(u64);

impl IoLogSink for Slow {
    fn records(&mut self, recs: &[IoRecord]) -> io::Result<()> {
        self.0 += recs.len() as u64;
        std::thread::sleep(std::time::Duration::from_micros(200));
        Ok(())
    }
    fn hist(&mut self, line: &HistLine) -> io::Result<()> {
        self.0 += line.bins[0];
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn push(logger: &mut storbench_model::iolog::IoLogger, n: usize) {
    for i in 0..n {
        logger.push(IoRecord {
            t_ns: i as u64,
            bytes: 4096,
            ..IoRecord::default()
        });
        if i % RECORDS == 0
            && let Some(mut h) = logger.hist_buffer()
        {
            h.bins[0] = 1;
            logger.send_hist(h);
        }
    }
}

#[test]
fn per_io_records_allocate_nothing() {
    let mut pipes = LogPipes::new(1);
    let mut logger = pipes.add("j.0".into(), Box::new(Slow(0)));
    let writer = pipes.writer().unwrap();
    let t = std::thread::spawn(move || writer.run());
    // The first waits set up this thread's channel context once.
    push(&mut logger, RECORDS * BUFFERS * 2);
    let counted = allocations_during(|| push(&mut logger, RECORDS * BUFFERS * 8));
    logger.finish();
    let report = t.join().unwrap();
    assert_eq!(counted, 0, "allocations while logging records");
    assert!(
        report.warnings.iter().all(|w| w.contains("waited")),
        "{report:?}"
    );
}
