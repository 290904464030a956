//! What the cost examples share: sides taking turns batch by batch, so this machine's
//! drifts (±20 % over seconds) hit every side alike.

use std::path::PathBuf;
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

/// An example's command line, `DIR [FILES] [ROUNDS]`.
pub struct Args {
    /// DIR, absolute (sides that change the working directory must find their way back).
    pub base: PathBuf,
    /// The example's own directory under DIR, `<example>.<pid>`, not yet made.
    pub dir: String,
    pub count: usize,
    pub rounds: usize,
}

/// Reads the command line of `example`, with its default file and round counts; prints
/// the usage and exits without DIR.
pub fn args(example: &str, count: usize, rounds: usize) -> Args {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(base) = args.first() else {
        eprintln!("usage: {example} DIR [FILES] [ROUNDS]");
        std::process::exit(2);
    };
    let base = std::fs::canonicalize(base).expect("DIR exists");
    Args {
        dir: format!("{}/{example}.{}", base.display(), std::process::id()),
        base,
        count: args.get(1).map_or(count, |n| n.parse().expect("FILES")),
        rounds: args.get(2).map_or(rounds, |n| n.parse().expect("ROUNDS")),
    }
}
