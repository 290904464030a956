//! A single-node Slurm cluster started for one test (Debian's `slurmctld`, `slurmd`,
//! `slurm-client` and `munge`): its own munge key and socket, its own `slurm.conf`, state
//! and spool directories in a temporary directory, controller and node daemon on free ports
//! of 127.0.0.1, all three daemons in the foreground, stopped by PID on drop and killed
//! with the test process (PR_SET_PDEATHSIG). Nothing of the machine's own Slurm or munge
//! is read or touched; `srun` finds this cluster through `SLURM_CONF` ([`Slurm::srun`]).

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::ports::free_port;

/// The programs the cluster needs.
const TOOLS: [(&str, &str); 4] = [
    ("munged", "munge"),
    ("slurmctld", "slurmctld"),
    ("slurmd", "slurmd"),
    ("srun", "slurm-client"),
];

/// Why Slurm tests cannot run here, or `None` if they can.
pub fn unavailable() -> Option<String> {
    let on_path = |tool: &str| {
        let dirs = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&dirs)
            .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
            .any(|p| p.join(tool).is_file())
    };
    let missing: Vec<&str> = TOOLS
        .iter()
        .filter(|(tool, _)| !on_path(tool))
        .map(|(_, package)| *package)
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "Slurm not installed (Debian packages {})",
            missing.join(", ")
        ));
    }
    // SAFETY: geteuid cannot fail.
    (unsafe { libc::geteuid() } != 0)
        .then(|| "a private Slurm cluster runs its daemons as root".to_string())
}

/// The node's name in this cluster (`slurmd -N`), whatever the machine is called.
const NODE: &str = "sbnode";

/// One running cluster of one node.
pub struct Slurm {
    /// munged, slurmctld, slurmd, in the order started (stopped in reverse).
    daemons: Vec<Child>,
    dir: tempfile::TempDir,
}

impl Slurm {
    /// Starts munged, the controller and the node daemon, and waits until the node is idle.
    pub fn start(cpus: u32) -> io::Result<Slurm> {
        let dir = tempfile::Builder::new()
            .prefix("storbench-slurm")
            .tempdir()?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        for sub in ["munge", "state", "spool", "log"] {
            std::fs::create_dir(dir.path().join(sub))?;
        }
        std::fs::set_permissions(
            dir.path().join("munge"),
            std::fs::Permissions::from_mode(0o700),
        )?;
        let key = dir.path().join("munge/munge.key");
        std::fs::write(&key, random_key()?)?;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))?;
        let mut s = Slurm {
            daemons: Vec::new(),
            dir,
        };
        s.write_conf(cpus)?;
        let p = s.dir.path().to_path_buf();
        let mut munged = Command::new("munged");
        munged
            .arg("-F")
            .arg("-f")
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--socket={}", p.join("munge/sock").display()))
            .arg(format!("--pid-file={}", p.join("munge/pid").display()))
            .arg(format!("--log-file={}", p.join("log/munged.log").display()))
            .arg(format!("--seed-file={}", p.join("munge/seed").display()));
        s.spawn(munged, "munged.out")?;
        s.wait_for("munged's socket", || p.join("munge/sock").exists())?;
        let mut ctld = Command::new("slurmctld");
        ctld.args(["-D", "-i"]);
        s.spawn(ctld, "slurmctld.out")?;
        let mut slurmd = Command::new("slurmd");
        slurmd.args(["-D", "-N", NODE]);
        s.spawn(slurmd, "slurmd.out")?;
        let conf = s.conf();
        s.wait_for("the node to be idle", || {
            node_state(&conf).as_deref() == Some("idle")
        })?;
        Ok(s)
    }

    /// `srun` of this cluster (its `SLURM_CONF`), for `tasks` tasks with MPI over PMIx.
    pub fn srun(&self, tasks: u32) -> Command {
        let mut c = Command::new("srun");
        c.env("SLURM_CONF", self.conf())
            .args(["--mpi=pmix", "--oversubscribe", "-n"])
            .arg(tasks.to_string());
        c
    }

    /// The daemons' logs, for a failing test's message.
    pub fn logs(&self) -> String {
        ["slurmctld.out", "slurmd.out", "slurmctld.log", "slurmd.log"]
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(self.dir.path().join("log").join(f))
                    .unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(10).collect();
                format!(
                    "{f}:\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    fn write_conf(&self, cpus: u32) -> io::Result<()> {
        let p = self.dir.path();
        let (ctld_port, slurmd_port) = (free_port()?, free_port()?);
        let at = |s: &str| p.join(s).display().to_string();
        let conf = format!(
            "ClusterName=storbench\n\
             SlurmctldHost={host}(127.0.0.1)\n\
             MailProg=/bin/true\n\
             SlurmctldPort={ctld_port}\n\
             SlurmdPort={slurmd_port}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             AuthInfo=socket={sock}\n\
             CredType=cred/munge\n\
             StateSaveLocation={state}\n\
             SlurmdSpoolDir={spool}\n\
             SlurmctldPidFile={ctld_pid}\n\
             SlurmdPidFile={slurmd_pid}\n\
             SlurmctldLogFile={ctld_log}\n\
             SlurmdLogFile={slurmd_log}\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             SwitchType=switch/none\n\
             MpiDefault=none\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n\
             ReturnToService=2\n\
             NodeName={NODE} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN\n\
             PartitionName=test Nodes={NODE} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE\n",
            host = short_hostname()?,
            sock = at("munge/sock"),
            state = at("state"),
            spool = at("spool"),
            ctld_pid = at("slurmctld.pid"),
            slurmd_pid = at("slurmd.pid"),
            ctld_log = at("log/slurmctld.log"),
            slurmd_log = at("log/slurmd.log"),
        );
        std::fs::write(self.conf(), conf)
    }

    fn spawn(&mut self, mut cmd: Command, out: &str) -> io::Result<()> {
        let log = std::fs::File::create(self.dir.path().join("log").join(out))?;
        cmd.env("SLURM_CONF", self.conf())
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log));
        // SAFETY: prctl is async-signal-safe; the daemon dies with the test process even
        // when the test is killed before its Drop guard runs.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        self.daemons.push(crate::tgtd::spawn_from_keeper(cmd)?);
        Ok(())
    }

    fn wait_for(&mut self, what: &str, ready: impl Fn() -> bool) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ready() {
            if let Some(gone) = self
                .daemons
                .iter_mut()
                .position(|c| c.try_wait().ok().flatten().is_some())
            {
                return Err(io::Error::other(format!(
                    "daemon {gone} of the Slurm cluster exited while waiting for {what}:\n{}",
                    self.logs()
                )));
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!(
                    "no {what} within 30 s:\n{}",
                    self.logs()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    /// The temporary directory holding the configuration, state and logs.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        for c in self.daemons.iter_mut().rev() {
            // SAFETY: kill on a daemon this guard started, by its PID.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The machine's name up to its first dot: slurmctld runs only on the host its
/// configuration names as the controller.
fn short_hostname() -> io::Result<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")?;
    let name = name.trim();
    Ok(name.split('.').next().unwrap_or(name).to_string())
}

/// The node's state as `sinfo` shows it (`idle` once it takes jobs).
fn node_state(conf: &Path) -> Option<String> {
    let out = Command::new("sinfo")
        .env("SLURM_CONF", conf)
        .args(["-h", "-n", NODE, "-o", "%t"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// munge's key: 1 KiB from the kernel's random source.
fn random_key() -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut key = vec![0u8; 1024];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
    Ok(key)
}
