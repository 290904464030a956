//! A process the test started, frozen with SIGSTOP (the kernel still accepts its
//! connections, nothing answers) and continued with SIGCONT when the guard is dropped, so
//! a failing test never leaves a server stopped for its own guard to find.

/// A stopped process or process group, continued when dropped.
#[must_use = "the process is continued when this is dropped"]
pub struct Stopped(i32);

impl Stopped {
    /// Stops the process `pid`, one the test started.
    pub fn process(pid: i32) -> Stopped {
        // SAFETY: kill(2) with a PID the caller started; no memory is involved.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        Stopped(pid)
    }

    /// Stops every process of the group `pgid` (a server and the children it forked).
    pub fn group(pgid: i32) -> Stopped {
        Stopped::process(-pgid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        // SAFETY: as in `process`; a negative id names the group.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}
