//! fio's error policy of a job: which IO errors it goes past (`continue_on_error`,
//! `ignore_error`), whether each is logged (`error_dump`) and which jobs an `exitall` or
//! `exitall_on_error` ends (`exit_what`). The worker asks it only when an IO failed.

/// fio's error types, as `continue_on_error` and `ignore_error` number them.
pub const ERR_READ: usize = 0;
pub const ERR_WRITE: usize = 1;
pub const ERR_VERIFY: usize = 2;

/// fio's `EILSEQ`: the errno a verify failure carries (Linux's 84).
const EILSEQ: i32 = 84;
/// fio's non-fatal errors where `ignore_error` names none for a type: EIO and EILSEQ.
const DEFAULT_NON_FATAL: [i32; 2] = [5, EILSEQ];

/// The names fio's `ignore_error` understands: Linux's errnos 1 to 34, in order.
const ERRNO_NAMES: [&str; 34] = [
    "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD",
    "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV",
    "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC",
    "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE",
];

/// fio's `exit_what`: the jobs an `exitall` (or `exitall_on_error`) ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExitWhat {
    /// The jobs of the same reporting group (fio's default).
    #[default]
    Group,
    /// Every job running now; the next stonewall batch still runs.
    Stonewall,
    /// Everything, later batches included.
    All,
}

/// A job's error policy (fio's defaults: stop at the first error).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorPolicy {
    /// Bit per error type (read, write, verify) the job continues past.
    pub continue_on: u8,
    /// The errnos that count as non-fatal, per type; None: fio's EIO and EILSEQ.
    pub ignore: [Option<Vec<i32>>; 3],
    /// `error_dump`: each error is logged, also those gone past.
    pub dump: bool,
    pub exit_what: ExitWhat,
}

impl ErrorPolicy {
    /// Whether the job counts errors (fio then shows `total_err` and `first_error`).
    pub fn counts(&self) -> bool {
        self.continue_on != 0
    }

    /// fio's error type of a failed IO of direction `ddir` (0 read, 1 write, 2 trim).
    pub fn kind_of(ddir: usize, errno: i32) -> usize {
        match (errno, ddir) {
            (EILSEQ, _) => ERR_VERIFY,
            (_, 0) => ERR_READ,
            _ => ERR_WRITE,
        }
    }

    /// fio's `td_non_fatal_error`: whether the job goes past `errno` of this type.
    pub fn non_fatal(&self, kind: usize, errno: i32) -> bool {
        if self.continue_on & (1 << kind) == 0 {
            return false;
        }
        match &self.ignore[kind] {
            Some(list) => list.contains(&errno),
            None => DEFAULT_NON_FATAL.contains(&errno),
        }
    }

    /// fio's `continue_on_error` values, the numeric ones included.
    pub fn parse_continue(&mut self, v: &str) -> Result<(), String> {
        self.continue_on = match v.trim() {
            "none" | "0" => 0,
            "read" => 1,
            "write" => 2,
            "io" => 3,
            "verify" => 4,
            "all" | "1" => 7,
            other => {
                return Err(format!(
                    "continue_on_error: '{other}' is not one of none, read, write, io, verify, all, 0, 1"
                ));
            }
        };
        Ok(())
    }

    /// fio's `ignore_error`: up to three comma-separated lists (read, write, verify) of
    /// colon-separated errors, by name (EIO) or number. A list given also makes the job
    /// continue past errors of its type; an empty one keeps fio's default.
    pub fn parse_ignore(&mut self, v: &str) -> Result<(), String> {
        for (kind, list) in v.trim().split(',').enumerate() {
            if kind >= 3 {
                return Err("ignore_error: at most three lists (read,write,verify)".into());
            }
            let mut errs = Vec::new();
            for name in list.split(':') {
                if name.is_empty() {
                    break;
                }
                errs.push(parse_errno(name)?);
            }
            if !errs.is_empty() {
                self.continue_on |= 1 << kind;
                self.ignore[kind] = Some(errs);
            }
        }
        Ok(())
    }

    /// fio's `exit_what` values.
    pub fn parse_exit_what(&mut self, v: &str) -> Result<(), String> {
        self.exit_what = match v.trim() {
            "group" => ExitWhat::Group,
            "stonewall" => ExitWhat::Stonewall,
            "all" => ExitWhat::All,
            other => {
                return Err(format!(
                    "exit_what: '{other}' is not one of group, stonewall, all"
                ));
            }
        };
        Ok(())
    }
}

/// One error of `ignore_error`: a name of fio's list, or a number (C's `atoi`, sign
/// dropped), never zero.
fn parse_errno(s: &str) -> Result<i32, String> {
    let n = if s.starts_with('E') {
        ERRNO_NAMES
            .iter()
            .position(|n| *n == s)
            .map_or(0, |i| i as i32 + 1)
    } else {
        atoi(s).unsigned_abs().min(i32::MAX as u32) as i32
    };
    if n == 0 {
        return Err(format!(
            "ignore_error: unknown error {s}, please use number value"
        ));
    }
    Ok(n)
}

/// C's `atoi`: leading blanks, a sign, the digits up to the first other character.
fn atoi(s: &str) -> i32 {
    let t = s.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut n: i64 = 0;
    for c in digits.bytes().take_while(u8::is_ascii_digit) {
        n = (n * 10 + i64::from(c - b'0')).min(i64::from(i32::MAX));
    }
    (if neg { -n } else { n }) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_values_and_fios_default_list() {
        let mut p = ErrorPolicy::default();
        assert!(!p.non_fatal(ERR_READ, 5));
        p.parse_continue("read").unwrap();
        assert!(p.non_fatal(ERR_READ, 5));
        assert!(!p.non_fatal(ERR_WRITE, 5));
        assert!(!p.non_fatal(ERR_READ, 28), "ENOSPC is fatal unless listed");
        p.parse_continue("1").unwrap();
        assert!(p.non_fatal(ERR_VERIFY, EILSEQ));
        p.parse_continue("0").unwrap();
        assert!(!p.counts());
        assert!(p.parse_continue("sometimes").is_err());
    }

    #[test]
    fn ignore_error_lists_per_type() {
        let mut p = ErrorPolicy::default();
        p.parse_ignore(",ENOSPC:EIO,").unwrap();
        assert_eq!(p.continue_on, 2);
        assert!(p.non_fatal(ERR_WRITE, 28) && p.non_fatal(ERR_WRITE, 5));
        assert!(!p.non_fatal(ERR_READ, 5), "reads still stop");
        let mut p = ErrorPolicy::default();
        p.parse_ignore("-61:5x").unwrap();
        assert_eq!(p.ignore[ERR_READ], Some(vec![61, 5]));
        assert_eq!(
            ErrorPolicy::kind_of(2, 5),
            ERR_WRITE,
            "a trim's error is a write's"
        );
        assert_eq!(ErrorPolicy::kind_of(0, EILSEQ), ERR_VERIFY);
    }

    #[test]
    fn bad_ignore_error_values() {
        for bad in ["EILSEQ", "abc", "0", "5,5,5,5"] {
            assert!(ErrorPolicy::default().parse_ignore(bad).is_err(), "{bad}");
        }
    }
}
