//! What fio's reserved words stand for on this machine, and the two textual substitutions
//! fio applies to option values: `${ENV}` (job files) and `$ncpus`, `$mb_memory`,
//! `$pagesize`.

/// The values of fio's reserved keywords.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostFacts {
    /// CPUs configured in the system (fio uses `sysconf(_SC_NPROCESSORS_CONF)`).
    pub ncpus: u64,
    /// Physical memory in MiB.
    pub mb_memory: u64,
    /// Page size in bytes.
    pub pagesize: u64,
}

impl HostFacts {
    /// Reads the facts the way fio does, so `numjobs=$ncpus` means the same thing.
    pub fn detect() -> Self {
        // SAFETY: sysconf has no preconditions; it returns -1 for unknown names.
        let conf = |name| unsafe { libc::sysconf(name) };
        let positive = |v: libc::c_long, fallback: u64| u64::try_from(v).unwrap_or(fallback);
        let pagesize = positive(conf(libc::_SC_PAGESIZE), 4096).max(1);
        let pages = positive(conf(libc::_SC_PHYS_PAGES), 0);
        HostFacts {
            ncpus: positive(conf(libc::_SC_NPROCESSORS_CONF), 1).max(1),
            mb_memory: pages.saturating_mul(pagesize) / (1024 * 1024),
            pagesize,
        }
    }
}

/// Replaces `${NAME}` by the variable's value, or by nothing when it is unset (fio's rule).
/// An unterminated `${` is left as it is.
pub(crate) fn expand_env(value: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let name = &rest[start + 2..start + 2 + len];
        if !name.is_empty()
            && let Some(v) = env(name)
        {
            out.push_str(&v);
        }
        rest = &rest[start + 2 + len + 1..];
    }
    out.push_str(rest);
    out
}

/// The reserved words fio replaces anywhere in a value.
const KEYWORDS: [&str; 3] = ["$pagesize", "$mb_memory", "$ncpus"];

/// Replaces the reserved words; the flag says whether any was found (fio then evaluates
/// arithmetic in the value, see `resolve`).
pub(crate) fn expand_keywords(value: &str, host: &HostFacts) -> (String, bool) {
    if !value.contains('$') {
        return (value.to_string(), false);
    }
    let mut out = value.to_string();
    let mut found = false;
    for (word, v) in KEYWORDS
        .iter()
        .zip([host.pagesize, host.mb_memory, host.ncpus])
    {
        if out.contains(word) {
            out = out.replace(word, &v.to_string());
            found = true;
        }
    }
    (out, found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "SIZE" => Some("64m".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn env_expansion_follows_fio() {
        assert_eq!(expand_env("${SIZE}", &env), "64m");
        assert_eq!(expand_env("a${SIZE}b${SIZE}", &env), "a64mb64m");
        assert_eq!(expand_env("${UNSET}x", &env), "x");
        assert_eq!(expand_env("${EMPTY}", &env), "");
        assert_eq!(expand_env("${}", &env), "");
        assert_eq!(expand_env("${SIZE", &env), "${SIZE");
        assert_eq!(expand_env("$SIZE", &env), "$SIZE");
    }

    #[test]
    fn keywords() {
        let h = HostFacts {
            ncpus: 8,
            mb_memory: 16000,
            pagesize: 4096,
        };
        assert_eq!(expand_keywords("$ncpus", &h), ("8".into(), true));
        assert_eq!(
            expand_keywords("$mb_memory*2", &h),
            ("16000*2".into(), true)
        );
        assert_eq!(expand_keywords("4k", &h), ("4k".into(), false));
        assert_eq!(expand_keywords("$pagesize", &h), ("4096".into(), true));
    }

    #[test]
    fn detect_is_sane() {
        let h = HostFacts::detect();
        assert!(h.ncpus >= 1);
        assert!(h.mb_memory >= 1);
        assert!(h.pagesize.is_power_of_two());
    }
}
