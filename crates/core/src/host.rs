//! The host during a batch, for the `host` verdict: the CPU frequency governor, the clock
//! the CPUs reached (sampled about once a second), whole-machine CPU and steal, this
//! process's own CPU and the bytes it moved to and from storage (/proc/self/io), so the
//! load and the IO of other processes can be told from ours. Read by the runner's thread
//! only, never on the IO path.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::cpu::{StatSample, Usage};
use storbench_model::result::HostFigures;

/// How often the clock is sampled while a batch runs.
const EVERY: Duration = Duration::from_secs(1);

/// Readings taken at a batch's start, and the clock samples since.
pub struct HostWatch {
    stat: Option<StatSample>,
    process: Usage,
    io: Option<(u64, u64)>,
    mhz_sum: f64,
    mhz_samples: u32,
    last: Instant,
    started: Instant,
}

impl HostWatch {
    pub fn start() -> HostWatch {
        let mut w = HostWatch {
            stat: StatSample::read(),
            process: own_usage(),
            io: own_io(),
            mhz_sum: 0.0,
            mhz_samples: 0,
            last: Instant::now(),
            started: Instant::now(),
        };
        w.sample_clock();
        w
    }

    /// Samples the clock when a second has passed since the last sample.
    pub fn poll(&mut self) {
        if self.last.elapsed() >= EVERY {
            self.sample_clock();
        }
    }

    fn sample_clock(&mut self) {
        self.last = Instant::now();
        if let Some(mhz) = mean_mhz() {
            self.mhz_sum += mhz;
            self.mhz_samples += 1;
        }
    }

    /// The figures over the batch.
    pub fn finish(mut self) -> HostFigures {
        self.sample_clock();
        let system = self
            .stat
            .as_ref()
            .zip(StatSample::read())
            .map(|(a, b)| b.since(a, b.machine_cpus()));
        let own = own_usage().since(&self.process).cpu_ns();
        let wall_ns = self.started.elapsed().as_nanos() as u64;
        let (r0, w0) = self.io.unwrap_or_default();
        let io_now = own_io();
        HostFigures {
            governor: governor(),
            mhz: (self.mhz_samples > 0).then(|| self.mhz_sum / f64::from(self.mhz_samples)),
            max_mhz: max_mhz(),
            system_cpu: system,
            own_cpu_percent: (wall_ns > 0).then(|| own as f64 / wall_ns as f64 * 100.0),
            own_read_bytes: io_now
                .filter(|_| self.io.is_some())
                .map(|(r, _)| r.saturating_sub(r0)),
            own_write_bytes: io_now
                .filter(|_| self.io.is_some())
                .map(|(_, w)| w.saturating_sub(w0)),
        }
    }
}

/// Where the kernel's cpufreq files are; the tests point it at recorded copies, since a
/// VM without cpufreq cannot show a governor or a clock below its highest.
const CPU_SYSFS: &str = "/sys/devices/system/cpu";

/// The governors of the CPUs that have one, each once (`performance`, `powersave,ondemand`).
pub fn governor() -> Option<String> {
    governor_at(Path::new(CPU_SYSFS), crate::cpu::ncpus())
}

fn governor_at(root: &Path, ncpus: u32) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for cpu in 0..ncpus {
        let path = root.join(format!("cpu{cpu}/cpufreq/scaling_governor"));
        if let Ok(g) = std::fs::read_to_string(path) {
            let g = g.trim().to_string();
            if !seen.contains(&g) {
                seen.push(g);
            }
        }
    }
    (!seen.is_empty()).then(|| seen.join(","))
}

/// The CPUs' highest clock, MHz (cpufreq's cpuinfo_max_freq), if the kernel states it.
fn max_mhz() -> Option<f64> {
    max_mhz_at(Path::new(CPU_SYSFS))
}

fn max_mhz_at(root: &Path) -> Option<f64> {
    let khz: f64 = std::fs::read_to_string(root.join("cpu0/cpufreq/cpuinfo_max_freq"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(khz / 1000.0)
}

/// The CPUs' mean clock now: cpufreq's scaling_cur_freq, else /proc/cpuinfo's `cpu MHz`.
fn mean_mhz() -> Option<f64> {
    mean_mhz_at(Path::new(CPU_SYSFS), crate::cpu::ncpus())
        .or_else(|| cpuinfo_mhz(&std::fs::read_to_string("/proc/cpuinfo").ok()?))
}

fn mean_mhz_at(root: &Path, ncpus: u32) -> Option<f64> {
    let cur: Vec<f64> = (0..ncpus)
        .filter_map(|c| {
            std::fs::read_to_string(root.join(format!("cpu{c}/cpufreq/scaling_cur_freq")))
                .ok()?
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map(|khz| khz / 1000.0)
        .collect();
    (!cur.is_empty()).then(|| cur.iter().sum::<f64>() / cur.len() as f64)
}

/// The mean of /proc/cpuinfo's `cpu MHz` lines.
pub fn cpuinfo_mhz(text: &str) -> Option<f64> {
    let v: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("cpu MHz"))
        .filter_map(|l| l.split_once(':')?.1.trim().parse().ok())
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// This process's CPU and that of its children it has waited for: the clones that ran in
/// processes of their own (`crates/run/src/forked.rs`), reaped before the batch's figures are
/// read. (/proc/self/io counts reaped children's bytes too.)
fn own_usage() -> Usage {
    let (me, children) = (Usage::process(), Usage::children());
    Usage {
        usr_ns: me.usr_ns + children.usr_ns,
        sys_ns: me.sys_ns + children.sys_ns,
        ..me
    }
}

/// Bytes this process caused to be read from and written to storage (/proc/self/io's
/// `read_bytes`, `write_bytes`).
fn own_io() -> Option<(u64, u64)> {
    parse_io(&std::fs::read_to_string("/proc/self/io").ok()?)
}

pub fn parse_io(text: &str) -> Option<(u64, u64)> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
    };
    Some((field("read_bytes:")?, field("write_bytes:")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_proc_io_and_cpuinfo() {
        let io = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io(io), Some((4096, 8192)));
        assert_eq!(parse_io("rchar: 1\n"), None);
        let info = "processor\t: 0\ncpu MHz\t\t: 2000.000\nprocessor\t: 1\ncpu MHz\t\t: 3000.500\n";
        assert_eq!(cpuinfo_mhz(info), Some(2500.25));
        assert_eq!(cpuinfo_mhz("processor : 0\n"), None);
    }

    /// cpufreq as the kernel lays it out (one value and a newline per file), written by
    /// the test: this VM has no cpufreq, so its own /sys cannot show a governor or a clock.
    fn cpufreq(governors: &[&str], cur_khz: &[u64], max_khz: u64) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (cpu, (g, cur)) in governors.iter().zip(cur_khz).enumerate() {
            let d = dir.path().join(format!("cpu{cpu}/cpufreq"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("scaling_governor"), format!("{g}\n")).unwrap();
            std::fs::write(d.join("scaling_cur_freq"), format!("{cur}\n")).unwrap();
            std::fs::write(d.join("cpuinfo_max_freq"), format!("{max_khz}\n")).unwrap();
        }
        dir
    }

    #[test]
    fn cpufreq_governors_and_clocks_are_read_as_the_kernel_writes_them() {
        let d = cpufreq(
            &["powersave", "powersave"],
            &[800_031, 1_199_969],
            4_700_000,
        );
        assert_eq!(governor_at(d.path(), 2).as_deref(), Some("powersave"));
        assert_eq!(max_mhz_at(d.path()), Some(4700.0));
        assert_eq!(mean_mhz_at(d.path(), 2), Some(1000.0));
        let d = cpufreq(
            &["performance", "ondemand"],
            &[3_000_000, 3_000_000],
            3_000_000,
        );
        assert_eq!(
            governor_at(d.path(), 2).as_deref(),
            Some("performance,ondemand")
        );
        // No cpufreq at all (this VM): nothing, and the clock falls back to /proc/cpuinfo.
        let none = tempfile::tempdir().unwrap();
        assert_eq!(governor_at(none.path(), 2), None);
        assert_eq!(max_mhz_at(none.path()), None);
        assert_eq!(mean_mhz_at(none.path(), 2), None);
    }

    /// This VM's own /proc/cpuinfo, recorded: two vCPUs that state one fixed clock.
    #[test]
    fn the_recorded_cpuinfo_of_this_vm_gives_its_clock() {
        let info = include_str!("../tests/data/host/cpuinfo");
        assert_eq!(cpuinfo_mhz(info), Some(2245.782));
    }

    #[test]
    fn a_watch_over_this_process_sees_its_own_cpu() {
        let before = Usage::process();
        let w = HostWatch::start();
        // 20 ms of CPU, however long a loaded machine takes to give it.
        while Usage::process().since(&before).cpu_ns() < 20_000_000 {
            std::hint::black_box(0u64);
        }
        let f = w.finish();
        assert!(f.own_cpu_percent.is_some_and(|p| p > 0.0), "{f:?}");
        assert!(f.system_cpu.is_some(), "{f:?}");
        assert!(
            f.mhz.is_some_and(|m| m > 0.0) || f.max_mhz.is_none(),
            "{f:?}"
        );
    }

    /// A clone that ran in a process of its own is storbench's CPU too, not another
    /// process's: the watch counts the children it reaped.
    #[test]
    fn a_watch_counts_the_cpu_of_children_it_reaped() {
        let around = Instant::now();
        let w = HostWatch::start();
        // SAFETY: the child only spins on its own CPU clock and leaves with _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let start = Usage::process();
            while Usage::process().since(&start).cpu_ns() < 50_000_000 {
                std::hint::black_box(0u64);
            }
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: reaps the child forked above.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        let f = w.finish();
        // The watch's own wall time is within `around`'s: this thread slept in waitpid,
        // so what it counted is the child's 50 ms.
        let counted_ms =
            f.own_cpu_percent.unwrap_or(0.0) / 100.0 * around.elapsed().as_secs_f64() * 1e3;
        assert!(counted_ms >= 45.0, "{counted_ms} ms: {f:?}");
    }
}
