//! The worker's IO buffer arena and what goes into write buffers.
//!
//! Buffers are carved from one anonymous mapping, page-aligned (2 MiB-aligned when large) and
//! pre-faulted, so neither O_DIRECT nor the CPU's copy routines are slowed by alignment, and
//! first-touch page faults do not land inside the measurement.

use std::ptr::NonNull;

use storbench_job::BufferSpec;

use storbench_model::rng::Rng;

const PAGE: usize = 4096;
const HUGE: usize = 2 << 20;

/// `slots` buffers of `slot_len` bytes each, in one page-aligned mapping.
pub struct Arena {
    base: NonNull<u8>,
    map_len: usize,
    slot_len: usize,
    slots: u32,
}

// SAFETY: the arena is plain memory owned by one worker; it moves with the worker thread.
unsafe impl Send for Arena {}

impl Arena {
    /// Maps and pre-faults the arena. `slot_len` is rounded up to a whole page.
    pub fn new(slots: u32, slot_len: usize) -> std::io::Result<Self> {
        let map_len = usize::try_from(Self::mapped_len(slots, slot_len as u64))
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
        let slot_len = slot_len.max(1).div_ceil(PAGE) * PAGE;
        // SAFETY: anonymous private mapping; checked for MAP_FAILED below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let base = NonNull::new(ptr.cast::<u8>()).expect("mmap returned null");
        Ok(Arena {
            base,
            map_len,
            slot_len,
            slots: slots.max(1),
        })
    }

    /// Bytes the mapping of `slots` buffers of `slot_len` takes (all of it resident: the
    /// mapping is pre-faulted), so a run can be refused before it allocates.
    pub fn mapped_len(slots: u32, slot_len: u64) -> u64 {
        let slot_len = slot_len.max(1).div_ceil(PAGE as u64) * PAGE as u64;
        let len = slot_len.saturating_mul(u64::from(slots.max(1)));
        if len >= HUGE as u64 {
            len.div_ceil(HUGE as u64).saturating_mul(HUGE as u64)
        } else {
            len
        }
    }

    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    pub fn slot_len(&self) -> usize {
        self.slot_len
    }

    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// Start of slot `i`.
    #[inline]
    pub fn slot_ptr(&self, i: u32) -> NonNull<u8> {
        debug_assert!(i < self.slots);
        // SAFETY: i < slots, so the offset stays inside the mapping.
        unsafe { self.base.add(i as usize * self.slot_len) }
    }

    /// Byte `at` of the arena (bonnie's per-character tests move one byte at a time).
    #[inline]
    pub fn ptr_at(&self, at: usize) -> NonNull<u8> {
        debug_assert!(at < self.map_len);
        // SAFETY: `at` is inside the mapping.
        unsafe { self.base.add(at) }
    }

    /// Slot `i` as a slice (only while no IO writes into it).
    pub fn slot(&self, i: u32) -> &[u8] {
        // SAFETY: inside the mapping; no IO runs while the caller holds &self.
        unsafe { std::slice::from_raw_parts(self.slot_ptr(i).as_ptr(), self.slot_len) }
    }

    /// Slot `i` as a mutable slice (only while no IO uses it).
    pub fn slot_mut(&mut self, i: u32) -> &mut [u8] {
        // SAFETY: inside the mapping; &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.slot_ptr(i).as_ptr(), self.slot_len) }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what new() mapped.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.map_len) };
    }
}

/// Fills and refreshes write buffers as fio's buffer options ask.
pub struct BufferFiller {
    spec: BufferSpec,
    rng: Rng,
    counter: u64,
    dedupe: Option<Dedupe>,
}

impl BufferFiller {
    pub fn new(spec: BufferSpec, seed: u64) -> Self {
        let dedupe = (spec.dedupe_percentage > 0).then(|| Dedupe::new(&spec, seed));
        BufferFiller {
            spec,
            rng: Rng::seeded(seed),
            counter: 0,
            dedupe,
        }
    }

    /// Spreads the dedupe working set over `bases` (each clone's [`unique_base`], in
    /// thread order), of which this filler's is `bases[me]`: fio's `dedupe_global`.
    pub fn share_working_set(&mut self, bases: Vec<u64>, me: usize) {
        if let Some(d) = &mut self.dedupe {
            d.peers = bases;
            d.me = me;
        }
    }

    /// Initial contents of a buffer: random (incompressible), zeros, a pattern, or a mix that
    /// compresses to about `compress_percentage`.
    pub fn fill(&mut self, buf: &mut [u8]) {
        fill_with(&self.spec, &mut self.rng, buf);
    }

    /// Called before each write: refill or scramble so consecutive writes differ (defeats
    /// dedupe), or, with `dedupe_percentage`, write a numbered unique buffer or regenerate
    /// an earlier one.
    #[inline]
    pub fn before_write(&mut self, buf: &mut [u8], offset: u64) {
        if self.spec.zero_buffers {
            return;
        }
        if let Some(d) = &mut self.dedupe {
            let seed = d.next_seed(self.spec.dedupe_percentage);
            fill_with(&self.spec, &mut Rng::seeded(seed), buf);
        } else if self.spec.refill_buffers {
            self.fill(buf);
        } else if self.spec.scramble_buffers {
            self.counter = self.counter.wrapping_add(1);
            let stamp = offset ^ self.counter.rotate_left(32);
            for sector in buf.chunks_exact_mut(512) {
                sector[..8].copy_from_slice(&stamp.to_ne_bytes());
            }
        }
    }
}

/// The base of a clone's numbered unique buffers under `dedupe_global`: the same for every
/// clone that computes it, so each regenerates the others' buffers.
pub fn unique_base(randseed: u64, thread: u32) -> u64 {
    storbench_model::rng::mix64(randseed ^ 0xDEDE_0000_0000 ^ u64::from(thread))
}

/// fio's dedupe: the unique writes are numbered and unique buffer `k` is filled from a
/// seed of `k`, so a deduplicated write regenerates an earlier one without keeping it:
/// the previous unique one (`repeat`) or one of the first `dedupe_working_set_pages`
/// (`working_set`), which with `dedupe_global` are spread evenly over the peers' first
/// unique buffers, as fio rotates its working set's seeds over its jobs.
struct Dedupe {
    draw: Rng,
    next: u64,
    working_set: Option<u64>,
    peers: Vec<u64>,
    me: usize,
}

impl Dedupe {
    fn new(spec: &BufferSpec, seed: u64) -> Self {
        let working_set = (spec.dedupe_mode == storbench_job::DedupeMode::WorkingSet)
            .then_some(spec.dedupe_working_set_pages.max(1));
        Dedupe {
            draw: Rng::seeded(seed ^ 0xDED0_0001),
            next: 0,
            working_set,
            peers: vec![seed],
            me: 0,
        }
    }

    /// The seed of the next write's buffer.
    #[inline]
    fn next_seed(&mut self, percentage: u32) -> u64 {
        let dup = self.next > 0 && self.draw.percent(percentage);
        let (owner, k) = match (dup, self.working_set) {
            (false, _) => {
                self.next += 1;
                (self.me, self.next - 1)
            }
            (true, None) => (self.me, self.next - 1),
            (true, Some(pages)) => {
                let i = self.draw.below(pages);
                let n = self.peers.len() as u64;
                let per_peer = (pages / n).max(1);
                let owner = (self.me as u64 + i / per_peer) % n;
                (owner as usize, i % per_peer)
            }
        };
        seed_of(self.peers[owner], k)
    }
}

fn seed_of(base: u64, k: u64) -> u64 {
    storbench_model::rng::mix64(base ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

fn fill_with(s: &BufferSpec, rng: &mut Rng, buf: &mut [u8]) {
    if s.zero_buffers {
        buf.fill(0);
        return;
    }
    if s.compress_percentage == 0 {
        if s.pattern.is_empty() {
            rng.fill(buf);
        } else {
            fill_pattern(buf, &s.pattern);
        }
        return;
    }
    let chunk = if s.compress_chunk == 0 {
        buf.len()
    } else {
        s.compress_chunk as usize
    };
    let pct = s.compress_percentage.min(100) as usize;
    for part in buf.chunks_mut(chunk.max(1)) {
        let fixed = part.len() * pct / 100;
        let (random, rest) = part.split_at_mut(part.len() - fixed);
        rng.fill(random);
        if s.pattern.is_empty() {
            rest.fill(0);
        } else {
            fill_pattern(rest, &s.pattern);
        }
    }
}

fn fill_pattern(buf: &mut [u8], pattern: &[u8]) {
    for (b, p) in buf.iter_mut().zip(pattern.iter().cycle()) {
        *b = *p;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arena_slots_are_page_aligned_and_disjoint() {
        let mut a = Arena::new(4, 5000).unwrap();
        assert_eq!(a.slot_len(), 8192);
        for i in 0..4 {
            assert_eq!(a.slot_ptr(i).as_ptr() as usize % PAGE, 0);
            a.slot_mut(i).fill(i as u8);
        }
        for i in 0..4 {
            assert!(a.slot_mut(i).iter().all(|&b| b == i as u8));
        }
    }

    #[test]
    fn default_fill_is_incompressible_looking() {
        let mut f = BufferFiller::new(BufferSpec::default(), 1);
        let mut buf = vec![0u8; 65536];
        f.fill(&mut buf);
        let zeros = buf.iter().filter(|&&b| b == 0).count();
        assert!(zeros < 1024, "{zeros} zero bytes");
    }

    #[test]
    fn compress_percentage_zeroes_that_share_of_each_chunk() {
        let spec = BufferSpec {
            compress_percentage: 50,
            compress_chunk: 512,
            ..Default::default()
        };
        let mut f = BufferFiller::new(spec, 1);
        let mut buf = vec![1u8; 4096];
        f.fill(&mut buf);
        for chunk in buf.chunks(512) {
            assert!(chunk[256..].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn scramble_changes_each_write() {
        let mut f = BufferFiller::new(BufferSpec::default(), 1);
        let mut buf = vec![0u8; 4096];
        f.fill(&mut buf);
        let before = buf.clone();
        f.before_write(&mut buf, 0);
        assert_ne!(before, buf);
    }

    /// Distinct buffers among `n` writes of `spec`.
    fn distinct(spec: BufferSpec, n: usize) -> usize {
        let mut f = BufferFiller::new(spec, 3);
        let mut seen = std::collections::HashSet::new();
        let mut buf = vec![0u8; 4096];
        for i in 0..n {
            f.before_write(&mut buf, i as u64 * 4096);
            seen.insert(buf.clone());
        }
        seen.len()
    }

    #[test]
    fn repeat_dedupe_writes_that_share_again() {
        let spec = BufferSpec {
            dedupe_percentage: 40,
            refill_buffers: true,
            ..Default::default()
        };
        let d = distinct(spec, 10_000);
        assert!((5_800..6_200).contains(&d), "{d} distinct of 10000");
    }

    #[test]
    fn working_set_dedupe_repeats_the_first_unique_writes() {
        let spec = BufferSpec {
            dedupe_percentage: 50,
            dedupe_mode: storbench_job::DedupeMode::WorkingSet,
            dedupe_working_set_pages: 100,
            refill_buffers: true,
            ..Default::default()
        };
        let mut f = BufferFiller::new(spec, 5);
        let mut first = std::collections::HashSet::new();
        let mut later = Vec::new();
        let mut buf = vec![0u8; 4096];
        for i in 0..4000 {
            f.before_write(&mut buf, i * 4096);
            if first.len() < 100 {
                first.insert(buf.clone());
            } else {
                later.push(buf.clone());
            }
        }
        let repeats = later.iter().filter(|b| first.contains(*b)).count();
        let share = repeats as f64 / later.len() as f64;
        assert!((0.46..0.54).contains(&share), "{share}");
    }

    #[test]
    fn global_working_sets_regenerate_each_others_buffers() {
        let spec = BufferSpec {
            dedupe_percentage: 100,
            dedupe_mode: storbench_job::DedupeMode::WorkingSet,
            dedupe_working_set_pages: 10,
            refill_buffers: true,
            ..Default::default()
        };
        let bases = vec![unique_base(1, 0), unique_base(1, 1)];
        let written = |me: usize, n: usize| {
            let mut f = BufferFiller::new(spec.clone(), bases[me]);
            f.share_working_set(bases.clone(), me);
            let mut buf = vec![0u8; 512];
            (0..n)
                .map(|i| {
                    f.before_write(&mut buf, i as u64);
                    buf.clone()
                })
                .collect::<Vec<_>>()
        };
        let (a, b) = (written(0, 400), written(1, 1));
        // Clone 0 writes its first buffer, then repeats pages of both halves.
        assert!(a[1..].contains(&b[0]));
        assert!(a[1..].contains(&a[0]));
    }

    #[test]
    fn zero_buffers_stay_zero() {
        let spec = BufferSpec {
            zero_buffers: true,
            ..Default::default()
        };
        let mut f = BufferFiller::new(spec, 1);
        let mut buf = vec![7u8; 4096];
        f.fill(&mut buf);
        f.before_write(&mut buf, 4096);
        assert!(buf.iter().all(|&b| b == 0));
    }
}
