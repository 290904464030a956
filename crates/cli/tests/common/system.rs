//! Kernel-facing helpers: capability probes that say why a test is skipped, and Drop guards
//! for loop devices, mounts and child processes, so a failing test still cleans up.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether we run as root; prints why the calling test is skipped when not.
pub fn root_or_skip(what: &str) -> bool {
    let root = is_root();
    if !root {
        eprintln!("SKIP: {what} needs root");
    }
    root
}

/// Whether `tool` is on the PATH (or an absolute path that exists).
pub fn have_tool(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs a set-up command, panicking with its stderr on failure.
pub fn sh(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Whether a file in `dir` can be opened with O_DIRECT.
pub fn direct_io_works(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let probe = dir.join(".e2e-direct-probe");
    let ok = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// Whether this kernel lets fio use io_uring (prints why not).
pub fn io_uring_works(dir: &Path) -> bool {
    let out = Command::new("fio")
        .current_dir(dir)
        .args([
            "--name=probe",
            "--ioengine=io_uring",
            "--size=64k",
            "--filename=uring-probe",
            "--output-format=terse",
        ])
        .output();
    let _ = std::fs::remove_file(dir.join("uring-probe"));
    let ok = out.as_ref().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: io_uring is not available to fio here");
    }
    ok
}

/// A loop device over a sparse file, detached (and the file removed) on drop.
pub struct LoopDev {
    pub dev: String,
    backing: PathBuf,
}

impl LoopDev {
    /// A zeroed device of `bytes` bytes backed by a file in `dir`.
    pub fn new(dir: &Path, bytes: u64) -> LoopDev {
        let backing = dir.join("loop.img");
        let f = std::fs::File::create(&backing).unwrap();
        f.set_len(bytes).unwrap();
        drop(f);
        let dev = sh("losetup", &["--find", "--show", backing.to_str().unwrap()]);
        LoopDev { dev, backing }
    }

    /// Whether loop devices can be made here (root, losetup, /dev/loop-control).
    pub fn available() -> bool {
        if !root_or_skip("a loop device") {
            return false;
        }
        let ok = have_tool("losetup") && Path::new("/dev/loop-control").exists();
        if !ok {
            eprintln!("SKIP: losetup or /dev/loop-control missing");
        }
        ok
    }

    /// FNV-1a hash of the whole backing file (the device's bytes).
    pub fn hash(&self) -> u64 {
        let _ = Command::new("blockdev")
            .args(["--flushbufs", &self.dev])
            .status();
        let data = std::fs::read(&self.backing).unwrap();
        data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
    }

    /// Writes `bytes` at `offset` of the device (through the backing file).
    pub fn write_at(&self, offset: u64, bytes: &[u8]) {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&self.backing)
            .unwrap();
        f.write_all_at(bytes, offset).unwrap();
        f.sync_all().unwrap();
        // The loop device caches blocks: drop them so it reads the file again.
        let _ = Command::new("blockdev")
            .args(["--flushbufs", &self.dev])
            .status();
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
        let _ = std::fs::remove_file(&self.backing);
    }
}

#[allow(unused_imports)]
pub use storbench_testkit::mount::Mount;

/// A child process killed (by its PID) and reaped on drop.
pub struct ChildGuard(pub Option<Child>);

impl ChildGuard {
    pub fn pid(&self) -> i32 {
        self.0.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// Sends `sig` to the child.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill on the PID of a child we have not reaped yet.
        unsafe {
            libc::kill(self.pid(), sig);
        }
    }

    /// Waits at most `limit` for the child to exit; returns its output.
    pub fn wait_output(mut self, limit: Duration) -> super::Run {
        let mut child = self.0.take().expect("child");
        let end = Instant::now() + limit;
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > end {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the child did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        super::Run::from(child.wait_with_output().unwrap())
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Starts storbench with `args` in `cwd`, its output piped, guarded so that it is killed
/// if the test ends first.
pub fn spawn(cwd: &Path, args: &[&str]) -> ChildGuard {
    let child = super::storbench()
        .current_dir(cwd)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("storbench starts");
    ChildGuard(Some(child))
}

/// Polls until `cond` holds or `limit` passes; returns whether it held.
pub fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// Makes `cmd`'s child see io_uring_setup(2) fail with EPERM (as with
/// kernel.io_uring_disabled=2), through a seccomp filter on that child only: nothing
/// machine-wide changes. x86-64 only; returns false elsewhere.
pub fn deny_io_uring(cmd: &mut Command) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: the hook only calls async-signal-safe prctl(2) between fork and exec.
        unsafe {
            cmd.pre_exec(install_uring_filter);
        }
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = cmd;
        false
    }
}

#[cfg(target_arch = "x86_64")]
fn install_uring_filter() -> std::io::Result<()> {
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    const IO_URING_SETUP: u32 = 425;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    let stmt = |code: u16, k: u32| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jeq = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let load = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    let ret = (libc::BPF_RET | libc::BPF_K) as u16;
    // seccomp_data: nr at offset 0, arch at offset 4.
    let mut prog = [
        stmt(load, 4),
        jeq(AUDIT_ARCH_X86_64, 1, 0),
        stmt(ret, RET_ALLOW),
        stmt(load, 0),
        jeq(IO_URING_SETUP, 0, 1),
        stmt(ret, RET_ERRNO | libc::EPERM as u32),
        stmt(ret, RET_ALLOW),
    ];
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_mut_ptr(),
    };
    // SAFETY: plain prctl calls with a valid filter program that outlives them.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &fprog as *const libc::sock_fprog,
            ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
