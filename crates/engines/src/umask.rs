//! The process umask, for engines that create files without the kernel applying it (the
//! user-space NFS client).

/// The umask, from /proc/self/status where Linux shows it; else by setting and restoring
/// it, which is racy only against files created by other threads at that instant.
pub fn current() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| from_status(&status))
        .unwrap_or_else(by_system_call)
}

/// The umask by setting it and putting it back.
fn by_system_call() -> u32 {
    // SAFETY: umask(2) cannot fail; the old value is put back at once.
    let old = unsafe { libc::umask(0o022) };
    unsafe { libc::umask(old) };
    old as u32
}

/// The `Umask:` line of /proc/<pid>/status (octal, since Linux 4.7).
fn from_status(status: &str) -> Option<u32> {
    let value = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
    u32::from_str_radix(value.trim(), 8).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_status_line() {
        let status = "Name:\tstorbench\nUmask:\t0077\nState:\tR (running)\n";
        assert_eq!(from_status(status), Some(0o077));
        assert_eq!(from_status("Name:\tx\n"), None);
        assert_eq!(from_status("Umask:\tzz\n"), None);
    }

    /// Both ways agree, and the system call leaves the umask as it found it. (nextest runs
    /// each test in its own process, so no other test sees the moment it changes.)
    #[test]
    fn both_ways_agree_and_leave_the_umask_alone() {
        // SAFETY: umask(2) cannot fail.
        let before = unsafe { libc::umask(0o027) };
        assert_eq!(by_system_call(), 0o027);
        assert_eq!(current(), 0o027);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::umask(before) }, 0o027);
    }
}
