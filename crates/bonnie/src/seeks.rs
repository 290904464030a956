//! Random Seeks: `seekers` threads, each with its own engine and open file, take random
//! tickets from one shared numbered sequence; a ticket names a chunk to read, and one ticket in ten
//! (ticket % 10 == 0, as in bonnie++) also changes a byte and writes the chunk back. The
//! test runs from the first seeker's start to the last one's end, after its fsync.

use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use storbench_job::target::Target;

use storbench_core::{FileId, IoKind, OpenOptions};
use storbench_job::JobSpec;

use crate::Factory;
use crate::error::{BonnieError, Result};
use crate::io::{Io, short};
use crate::io_tests::IoParams;
use crate::phase::Phase;
use crate::timing::{MaxLatency, Span};
use crate::waiting::Waiting;
use crate::worker::{Worker, check_stop};
use storbench_core::buffers::Arena;
use storbench_model::rng::mix64 as mix;

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
    buf: Arena,
}

pub(crate) struct Ready {
    /// Seeds the tickets: ticket `i` is a hash of `(seed, i)`, so no list is kept and any
    /// number of seeks costs no memory.
    seed: u64,
    seekers: Vec<Seeker>,
}

/// Ticket `i`: 31 random bits, like bonnie++'s random numbers.
#[inline]
fn ticket(seed: u64, i: u64) -> u32 {
    (mix(seed ^ i) >> 33) as u32
}

impl Phase for Seeks<'_> {
    type Ready = Ready;

    fn prepare(&self, w: &mut Worker) -> Result<Ready> {
        let seed = w.rng.next_u64();
        let mut seekers = Vec::with_capacity(self.seekers as usize);
        for _ in 0..self.seekers {
            let buf =
                Arena::new(1, self.params.chunk as usize).map_err(crate::suite::buffer_error)?;
            let io = Io::new((self.factory)(self.job)?, &buf)?;
            seekers.push(Seeker { io, buf });
        }
        Ok(Ready { seed, seekers })
    }

    /// The seekers run in threads of their own, each with its own engine; meanwhile this
    /// copy's engine, unused, is kept alive (an NFSv4 lease outlasted by a long test).
    fn run(&self, w: &mut Worker, ready: Ready, lat: &mut MaxLatency) -> Result<Option<Span>> {
        let next = AtomicU64::new(0);
        let barrier = Barrier::new(ready.seekers.len());
        let seeking = Waiting::new(ready.seekers.len());
        let path = w.file_path.as_str();
        let file = &w.file;
        let io = &mut w.io;
        let seed = ready.seed;
        let (outcomes, kept): (Vec<Result<(Span, MaxLatency)>>, _) = std::thread::scope(|s| {
            let handles: Vec<_> = ready
                .seekers
                .into_iter()
                .map(|seeker| {
                    let (next, barrier, seeking) = (&next, &barrier, &seeking);
                    s.spawn(move || {
                        let _done = seeking.arrival();
                        self.seek(seeker, (file, path), seed, next, barrier)
                    })
                })
                .collect();
            let kept = seeking.wait_idle(io);
            let outcomes = handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(BonnieError::Check("a seeker thread panicked".into()))
                    })
                })
                .collect();
            (outcomes, kept)
        });
        let mut span: Option<Span> = None;
        for outcome in outcomes {
            let (s, l) = outcome?;
            span = Some(span.map_or(s, |u| u.union(s)));
            lat.merge(l);
        }
        kept?;
        Ok(span)
    }
}

impl Seeks<'_> {
    /// One seeker thread: opens untimed, starts with the others, works until no tickets
    /// are left, then fsyncs and closes.
    fn seek(
        &self,
        mut s: Seeker,
        (target, path): (&Target, &str),
        seed: u64,
        next: &AtomicU64,
        barrier: &Barrier,
    ) -> Result<(Span, MaxLatency)> {
        let p = &self.params;
        let open = OpenOptions {
            read: true,
            write: true,
            direct: p.direct,
            ..OpenOptions::default()
        };
        let file = s.io.open(target, open);
        barrier.wait();
        let file = file?;
        let mut lat = MaxLatency::default();
        let start = Instant::now();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= self.seeks {
                break;
            }
            let ticket = ticket(seed, i);
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
            s.io.transfer(file, IoKind::Read, offset, s.buf.base(), p.chunk, path)?;
        if n != u64::from(p.chunk) {
            return Err(short(IoKind::Read, path, offset, p.chunk, n).into());
        }
        if !ticket.is_multiple_of(UPDATE_EVERY) {
            return Ok(());
        }
        let bytes = s.buf.slot_mut(0);
        let at = (chunk % u64::from(p.chunk)) as usize;
        bytes[at] = bytes[at].wrapping_sub(1);
        let n =
            s.io.transfer(file, IoKind::Write, offset, s.buf.base(), p.chunk, path)?;
        if n != u64::from(p.chunk) {
            return Err(short(IoKind::Write, path, offset, p.chunk, n).into());
        }
        if p.fsync_each {
            s.io.fsync(file, path)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn about_one_ticket_in_ten_updates() {
        let updates = (0..100_000u64)
            .filter(|&i| ticket(42, i).is_multiple_of(UPDATE_EVERY))
            .count();
        assert!((9_000..11_000).contains(&updates), "{updates}");
        assert!((0..1000u64).all(|i| ticket(42, i) < 1 << 31));
        assert_ne!(ticket(1, 0), ticket(2, 0));
    }
}
