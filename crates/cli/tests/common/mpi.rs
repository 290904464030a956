//! Running storbench under a real `mpirun` (docs/multihost.md): the launch options this
//! machine needs, and a launched job that is killed with all its ranks when dropped.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::Run;
use super::system::have_tool;

/// `mpirun` with what running it here needs: root allowed, more ranks than CPUs, shared
/// memory between ranks without ptrace (containers often forbid it), and no shared-memory
/// copy of the hardware topology (`rtc_hwloc_vmhole none`): Open MPI 4.1's daemons map it
/// at an address they pick from a hole in /proc/self/maps, and now and then that address
/// is taken by the time hwloc writes there (an `orted` killed by SIGSEGV in
/// `hwloc_shmem_topology_write`, about one launch through the rsh agent in twenty here).
pub fn mpirun(ranks: u32) -> Command {
    mpirun_with(ranks, &[])
}

/// [`mpirun`] with launch options of the test's own (`--host`, `--mca …`) before the
/// program.
pub fn mpirun_with(ranks: u32, launch: &[String]) -> Command {
    mpirun_of(&assert_cmd::cargo::cargo_bin("storbench"), ranks, launch)
}

/// [`mpirun_with`] for another storbench binary (the self-contained one, built without MPI).
pub fn mpirun_of(bin: &std::path::Path, ranks: u32, launch: &[String]) -> Command {
    let mut c = Command::new("mpirun");
    c.args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(ranks.to_string())
        .args(launch)
        .args(["--mca", "btl_vader_single_copy_mechanism", "none"])
        .args(["--mca", "rtc_hwloc_vmhole", "none"])
        .args(["-x", "STORBENCH_MPI_TIMEOUT"])
        .env("RUST_BACKTRACE", "1")
        .env("NO_COLOR", "1")
        .env("STORBENCH_DB", "/dev/null/storbench-tests-must-not-save.db")
        .arg(bin);
    c
}

pub fn no_mpirun() -> Option<String> {
    (!have_tool("mpirun")).then(|| "mpirun not installed (Debian: openmpi-bin)".to_string())
}

/// An `mpirun` in a process group of its own, killed with its ranks when dropped, so a
/// failing test leaves no rank behind.
pub struct Launched(Option<Child>);

impl Launched {
    pub fn spawn(c: &mut Command) -> Launched {
        let child = c
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mpirun starts");
        Launched(Some(child))
    }

    pub fn pid(&self) -> i32 {
        self.0.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// Sends `signal` to the last rank process this job started; returns its PID.
    pub fn signal_a_rank(&self, signal: i32) -> i32 {
        let victim = *ranks_of(self.pid()).last().expect("a rank process");
        // SAFETY: kill on a rank process this test started.
        unsafe {
            libc::kill(victim, signal);
        }
        victim
    }

    /// Waits for a job that must fail (one of its ranks was killed or stopped) and asserts
    /// that it did, within `bound`: mpirun stops the others about a second after a death,
    /// far below the collective timeout the tests set (10 s).
    pub fn failed_within(self, bound: Duration) -> Run {
        let (run, took) = self.wait(Duration::from_secs(40));
        assert_ne!(run.code, Some(0), "{run:?}");
        assert!(took < bound, "the run went on for {took:?}: {run:?}");
        run
    }

    pub fn wait(mut self, limit: Duration) -> (Run, Duration) {
        let start = Instant::now();
        let mut child = self.0.take().expect("child");
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > limit {
                kill_group(child.id() as i32);
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().unwrap();
        let run = Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        (run, start.elapsed())
    }
}

pub fn kill_group(pgid: i32) {
    // SAFETY: kill on a process group this test created.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            kill_group(c.id() as i32);
            let _ = c.wait();
        }
    }
}

pub fn run_mpi(c: &mut Command) -> Run {
    Launched::spawn(c).wait(Duration::from_secs(90)).0
}

/// The storbench processes `mpirun` started (its children, or their children).
pub fn ranks_of(mpirun: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let ppid: i32 = rest
            .split(' ')
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() == "storbench" && (ppid == mpirun || parent_of(ppid) == mpirun) {
            out.push(pid);
        }
    }
    out.sort();
    out
}

/// The MPI rank of a rank process, from the environment mpirun gave it.
pub fn rank_of(pid: i32) -> Option<u32> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|&b| b == 0)
        .find_map(|v| v.strip_prefix(b"OMPI_COMM_WORLD_RANK="))
        .and_then(|r| std::str::from_utf8(r).ok()?.parse().ok())
}

fn parent_of(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(") ")
        .and_then(|(_, rest)| rest.split(' ').nth(1)?.parse().ok())
        .unwrap_or(0)
}
