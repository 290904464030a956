//! CPU accounting: per-thread and per-process rusage, a thread's wait for a CPU, and
//! whole-machine /proc/stat.

use storbench_model::result::{CpuUsage, SystemCpu};

/// A rusage reading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    pub usr_ns: u64,
    pub sys_ns: u64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    /// Time spent ready to run but waiting for a CPU (threads only; 0 if unknown).
    pub wait_ns: u64,
    /// Bytes the thread caused to be read from block devices (/proc/thread-self/io
    /// `read_bytes`; threads only, 0 if unknown).
    #[serde(default)]
    pub read_bytes: u64,
}

impl Usage {
    /// The calling thread's usage, with its wait for a CPU.
    pub fn thread() -> Self {
        Usage {
            wait_ns: thread_run_delay().unwrap_or(0),
            read_bytes: thread_read_bytes().unwrap_or(0),
            ..read(libc::RUSAGE_THREAD)
        }
    }

    /// The whole process: every thread, live or exited, including io_uring workers and AIO
    /// helper threads.
    pub fn process() -> Self {
        read(libc::RUSAGE_SELF)
    }

    /// This process's children that it has waited for, and theirs.
    pub fn children() -> Self {
        read(libc::RUSAGE_CHILDREN)
    }

    /// `self - earlier`, saturating (counters never go backwards, but be safe).
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            usr_ns: self.usr_ns.saturating_sub(earlier.usr_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
            ctx: self.ctx.saturating_sub(earlier.ctx),
            majf: self.majf.saturating_sub(earlier.majf),
            minf: self.minf.saturating_sub(earlier.minf),
            wait_ns: self.wait_ns.saturating_sub(earlier.wait_ns),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
        }
    }

    pub fn cpu_ns(&self) -> u64 {
        self.usr_ns + self.sys_ns
    }

    pub fn into_cpu_usage(self) -> CpuUsage {
        CpuUsage {
            usr_ns: self.usr_ns,
            sys_ns: self.sys_ns,
            helper_ns: 0,
            ctx: self.ctx,
            majf: self.majf,
            minf: self.minf,
            wait_ns: self.wait_ns,
        }
    }
}

/// The calling thread's run delay in ns: how long it has been runnable but not running,
/// the second field of /proc/thread-self/schedstat (kept when the kernel has
/// CONFIG_SCHED_INFO, as distribution kernels do). Read twice per job, never per IO.
fn thread_run_delay() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// The calling thread's bytes read from block devices (the kernel counts a read when it
/// submits it to a device: a page cache hit counts nothing). Read twice per job.
fn thread_read_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/io").ok()?;
    crate::host::parse_io(&text).map(|(r, _)| r)
}

fn read(who: libc::c_int) -> Usage {
    // SAFETY: getrusage fills the zeroed struct; it cannot fail for these `who` values.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    };
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    Usage {
        usr_ns: ns(ru.ru_utime),
        sys_ns: ns(ru.ru_stime),
        ctx: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
        majf: ru.ru_majflt as u64,
        minf: ru.ru_minflt as u64,
        wait_ns: 0,
        read_bytes: 0,
    }
}

/// Jiffies from the aggregate `cpu` line of /proc/stat.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatSample {
    pub user: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub steal: u64,
    pub total: u64,
    /// The CPUs the figures cover: /proc/stat's `cpuN` lines, every online CPU of the
    /// machine whatever this process's affinity mask allows.
    pub cpus: u32,
}

impl StatSample {
    pub fn read() -> Option<Self> {
        let text = std::fs::read_to_string("/proc/stat").ok()?;
        Self::parse(&text)
    }

    pub fn parse(text: &str) -> Option<Self> {
        let line = text.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        let get = |i: usize| v.get(i).copied().unwrap_or(0);
        let cpus = text
            .lines()
            .filter(|l| {
                l.strip_prefix("cpu")
                    .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
            })
            .count() as u32;
        // user nice system idle iowait irq softirq steal (guest time is inside user).
        Some(StatSample {
            user: get(0) + get(1),
            system: get(2) + get(5) + get(6),
            idle: get(3),
            iowait: get(4),
            steal: get(7),
            total: (0..8).map(get).sum(),
            cpus,
        })
    }

    /// The machine's CPUs as /proc/stat counts them, else (a reading without per-CPU
    /// lines) the CPUs this process may run on.
    pub fn machine_cpus(&self) -> u32 {
        if self.cpus > 0 { self.cpus } else { ncpus() }
    }

    /// Percent of one CPU over the interval, per state.
    pub fn since(&self, earlier: &StatSample, ncpus: u32) -> SystemCpu {
        let total = self.total.saturating_sub(earlier.total).max(1) as f64;
        let pct = |a: u64, b: u64| a.saturating_sub(b) as f64 / total * 100.0 * ncpus as f64;
        SystemCpu {
            ncpus,
            user: pct(self.user, earlier.user),
            system: pct(self.system, earlier.system),
            iowait: pct(self.iowait, earlier.iowait),
            steal: pct(self.steal, earlier.steal),
            idle: pct(self.idle, earlier.idle),
        }
    }
}

/// Pins the calling thread to `cpus` (fio's `cpus_allowed`); threads it starts later (an
/// engine's helpers) inherit the set.
pub fn run_on(cpus: &[u32]) -> Result<(), crate::error::EngineError> {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET only writes inside it for CPUs
    // below CPU_SETSIZE, which is checked first.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu as usize >= libc::CPU_SETSIZE as usize {
            return Err(pin_error(cpus, libc::EINVAL));
        }
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the size given.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    if rc != 0 {
        return Err(pin_error(
            cpus,
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ));
    }
    Ok(())
}

/// Adds `inc` to the calling thread's nice value (fio's `nice`, which Linux keeps per
/// thread); the system's refusal (a negative value without CAP_SYS_NICE) as the error.
pub fn add_nice(inc: i32) -> Result<(), crate::error::EngineError> {
    if inc == 0 {
        return Ok(());
    }
    // SAFETY: errno is the calling thread's; cleared so nice(3)'s -1 result can be told
    // from an error.
    unsafe { *libc::__errno_location() = 0 };
    // SAFETY: plain libc call on the calling thread.
    let rc = unsafe { libc::nice(inc) };
    let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    if rc == -1 && errno != 0 {
        let mut e = crate::error::EngineError::errno("nice", &inc.to_string(), errno);
        if errno == libc::EPERM || errno == libc::EACCES {
            e.message
                .push_str(": a negative nice value needs root or CAP_SYS_NICE");
        }
        return Err(e);
    }
    Ok(())
}

/// Sets the calling thread's IO priority (fio's `prioclass` and `prio`; a class of 0 is
/// best-effort, as in fio) when either is given; the system's refusal as the error.
pub fn set_ioprio(class: Option<u8>, level: Option<u8>) -> Result<(), crate::error::EngineError> {
    const WHO_PROCESS: libc::c_int = 1;
    const CLASS_RT: u8 = 1;
    const CLASS_BE: u8 = 2;
    if class.is_none() && level.is_none() {
        return Ok(());
    }
    let class = class.filter(|c| *c != 0).unwrap_or(CLASS_BE);
    let value = (libc::c_int::from(class) << 13) | libc::c_int::from(level.unwrap_or(0));
    // SAFETY: ioprio_set takes three integers; who 0 is the calling thread.
    let rc = unsafe { libc::syscall(libc::SYS_ioprio_set, WHO_PROCESS, 0, value) };
    if rc != 0 {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        let what = format!("class {class} level {}", level.unwrap_or(0));
        let mut e = crate::error::EngineError::errno("ioprio_set", &what, errno);
        if class == CLASS_RT && errno == libc::EPERM {
            e.message
                .push_str(": the real-time IO class needs CAP_SYS_ADMIN");
        }
        return Err(e);
    }
    Ok(())
}

#[cold]
fn pin_error(cpus: &[u32], errno: i32) -> crate::error::EngineError {
    let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
    crate::error::EngineError::errno("run on CPUs", &list.join(","), errno)
}

/// The CPUs this process may run on (its affinity mask).
pub fn ncpus() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_usage_grows_with_work() {
        let before = Usage::thread();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let spent = Usage::thread().since(&before);
        assert!(spent.cpu_ns() > 0);
        assert!(Usage::process().cpu_ns() >= spent.cpu_ns());
    }

    /// Two threads busy on one CPU: each waits for it about half the time.
    #[test]
    fn a_thread_sharing_its_cpu_waits_for_it() {
        let busy = || {
            crate::cpu::run_on(&[0]).unwrap();
            let before = Usage::thread();
            let start = std::time::Instant::now();
            let mut x = 0u64;
            while start.elapsed() < std::time::Duration::from_millis(200) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            Usage::thread().since(&before).wait_ns
        };
        let waits: Vec<u64> = std::thread::scope(|s| {
            let a = s.spawn(busy);
            let b = s.spawn(busy);
            vec![a.join().unwrap(), b.join().unwrap()]
        });
        if thread_run_delay().is_none() {
            eprintln!("skipped: this kernel keeps no run delay");
            return;
        }
        // Each spent 200 ms of wall time of which the other had the CPU part.
        assert!(waits.iter().all(|&w| w > 20_000_000), "{waits:?}");
    }

    #[test]
    fn parses_proc_stat() {
        let a = StatSample::parse("cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3\n").unwrap();
        let b = StatSample::parse("cpu  200 0 100 1500 20 0 0 80 0 0\n").unwrap();
        let s = b.since(&a, 2);
        assert_eq!(s.ncpus, 2);
        // 100 user jiffies of 900 total, on 2 CPUs.
        assert!((s.user - 100.0 / 900.0 * 200.0).abs() < 1e-9);
        assert!((s.steal - 40.0 / 900.0 * 200.0).abs() < 1e-9);
    }
}
