//! Random Seeks: `seekers` threads, each with its own engine and open file, take random
//! tickets from one shared list; a ticket names a chunk to read, and one ticket in ten
//! (ticket % 10 == 0, as in bonnie++) also changes a byte and writes the chunk back. The
//! test runs from the first seeker's start to the last one's end, after its fsync.

use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use storbench_core::{FileId, IoKind, OpenOptions};
use storbench_job::JobSpec;

use crate::Factory;
use crate::buf::AlignedBuf;
use crate::error::{BonnieError, Result};
use crate::io::{Io, short};
use crate::io_tests::IoParams;
use crate::phase::Phase;
use crate::timing::{MaxLatency, Span};
use crate::worker::{Worker, check_stop};

/// bonnie++'s UpdateSeek: one ticket in this many rewrites its chunk.
const UPDATE_EVERY: u32 = 10;

pub(crate) struct Seeks<'a> {
    pub params: IoParams,
    pub seeks: u64,
    pub seekers: u32,
    pub factory: &'a Factory,
    pub job: &'a JobSpec,
}

pub(crate) struct Seeker {
    io: Io,
    buf: AlignedBuf,
}

pub(crate) struct Ready {
    tickets: Vec<u32>,
    seekers: Vec<Seeker>,
}

impl Phase for Seeks<'_> {
    type Ready = Ready;

    fn prepare(&self, w: &mut Worker) -> Result<Ready> {
        // 31-bit tickets like bonnie++'s random numbers.
        let tickets = (0..self.seeks)
            .map(|_| (w.rng.next_u64() >> 33) as u32)
            .collect();
        let mut seekers = Vec::with_capacity(self.seekers as usize);
        for _ in 0..self.seekers {
            let buf = AlignedBuf::new(self.params.chunk as usize);
            let io = Io::new((self.factory)(self.job)?, &buf)?;
            seekers.push(Seeker { io, buf });
        }
        Ok(Ready { tickets, seekers })
    }

    fn run(&self, w: &mut Worker, ready: Ready, lat: &mut MaxLatency) -> Result<Option<Span>> {
        let next = AtomicUsize::new(0);
        let barrier = Barrier::new(ready.seekers.len());
        let path = w.file_path.as_str();
        let tickets = &ready.tickets;
        let outcomes: Vec<Result<(Span, MaxLatency)>> = std::thread::scope(|s| {
            let handles: Vec<_> = ready
                .seekers
                .into_iter()
                .map(|seeker| {
                    let (next, barrier) = (&next, &barrier);
                    s.spawn(move || self.seek(seeker, path, tickets, next, barrier))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(BonnieError::Check("a seeker thread panicked".into()))
                    })
                })
                .collect()
        });
        let mut span: Option<Span> = None;
        for outcome in outcomes {
            let (s, l) = outcome?;
            span = Some(span.map_or(s, |u| u.union(s)));
            lat.merge(l);
        }
        Ok(span)
    }
}

impl Seeks<'_> {
    /// One seeker thread: opens untimed, starts with the others, works until no tickets
    /// are left, then fsyncs and closes.
    fn seek(
        &self,
        mut s: Seeker,
        path: &str,
        tickets: &[u32],
        next: &AtomicUsize,
        barrier: &Barrier,
    ) -> Result<(Span, MaxLatency)> {
        let p = &self.params;
        let open = OpenOptions {
            read: true,
            write: true,
            direct: p.direct,
            ..OpenOptions::default()
        };
        let file = s.io.open(path, open);
        barrier.wait();
        let file = file?;
        let mut lat = MaxLatency::default();
        let start = Instant::now();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(&ticket) = tickets.get(i) else { break };
            check_stop("the random seeks")?;
            let op = Instant::now();
            self.seek_one(&mut s, file, ticket, path)?;
            lat.record(op);
        }
        s.io.sync_close(file, path)?;
        Ok((
            Span {
                start,
                end: Instant::now(),
            },
            lat,
        ))
    }

    #[inline]
    fn seek_one(&self, s: &mut Seeker, file: FileId, ticket: u32, path: &str) -> Result<()> {
        let p = &self.params;
        let chunk = u64::from(ticket) % p.chunks;
        let offset = chunk * u64::from(p.chunk);
        let n =
            s.io.transfer(file, IoKind::Read, offset, s.buf.ptr(), p.chunk, path)?;
        if n != u64::from(p.chunk) {
            return Err(short(IoKind::Read, path, offset, p.chunk, n).into());
        }
        if !ticket.is_multiple_of(UPDATE_EVERY) {
            return Ok(());
        }
        let bytes = s.buf.bytes_mut();
        let at = (chunk % u64::from(p.chunk)) as usize;
        bytes[at] = bytes[at].wrapping_sub(1);
        let n =
            s.io.transfer(file, IoKind::Write, offset, s.buf.ptr(), p.chunk, path)?;
        if n != u64::from(p.chunk) {
            return Err(short(IoKind::Write, path, offset, p.chunk, n).into());
        }
        if p.fsync_each {
            s.io.fsync(file, path)?;
        }
        Ok(())
    }
}
