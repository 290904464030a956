//! What the cost examples share: sides taking turns batch by batch, so this machine's
//! drifts (±20 % over seconds) hit every side alike.

use std::time::{Duration, Instant};

/// Items per batch.
pub const BATCH: usize = 2000;

/// Times `each(side, i)` for items `0..count` on each of `N` sides, in batches of
/// [`BATCH`], every side going first, second, ... equally often; the time of each side.
pub fn take_turns<const N: usize>(
    count: usize,
    mut each: impl FnMut(usize, usize),
) -> [Duration; N] {
    let mut times = [Duration::ZERO; N];
    for (batch, start) in (0..count).step_by(BATCH).enumerate() {
        let end = (start + BATCH).min(count);
        for k in 0..N {
            let side = (batch + k) % N;
            let t = Instant::now();
            (start..end).for_each(|i| each(side, i));
            times[side] += t.elapsed();
        }
    }
    times
}
