//! storbench-testkit

pub mod alloc;
pub mod cgroup;
pub mod fuzz;
pub mod ganesha;
pub mod mount;
pub mod nbdkit;
pub mod netns;
pub mod ports;
pub mod slurm;
pub mod smbd;
pub mod snmpd;
pub mod stopped;
pub mod tcpcut;
pub mod tgtd;

/// Skips the calling test with a reason on stderr (`skipped: …`) when what it needs is
/// missing here: a kernel feature, a tool, a server package, a second CPU. The test
/// returns early, so it passes; the reason says what to install or where to run it.
///
/// - `require!(tgtd::unavailable())`: an `Option` holding why not;
/// - `require!(cpus >= 2, "one CPU, nothing to pin apart")`: a condition and its reason.
///
/// It returns `Default::default()`, so it also serves helpers returning `Option` (`None`).
#[macro_export]
macro_rules! require {
    ($why_not:expr) => {
        if let Some(why) = $why_not {
            eprintln!("skipped: {why}");
            return Default::default();
        }
    };
    ($ok:expr, $why:expr) => {
        if !$ok {
            eprintln!("skipped: {}", $why);
            return Default::default();
        }
    };
}
