//! bonnie++'s flag values, parsed with bonnie++'s meanings but stricter: a suffix bonnie++
//! would silently ignore (`-s 64k` is 64 MiB there) is an error here.

use crate::error::FlagError;

/// The flags as given on the command line, before any checking. The CLI fills this from
/// its argument parser; [`crate::Config::from_flags`] validates it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// `-d dir`: a directory or an `nfs://host/export/dir` URL.
    pub dir: Option<String>,
    /// `-s size[:chunk[:seeks[:seekers]]]`.
    pub size: Option<String>,
    /// `-n files[:max[:min[:dirs[:chunk]]]]`.
    pub files: Option<String>,
    /// `-m name`.
    pub machine: Option<String>,
    /// `-r ram_MiB`.
    pub ram: Option<String>,
    /// `-x runs`.
    pub runs: Option<String>,
    /// `-u user[:group]` (accepted for compatibility).
    pub user: Option<String>,
    /// `-g group` (accepted for compatibility).
    pub group: Option<String>,
    /// `-q`.
    pub quiet: bool,
    /// `-f [size]`: `Some(None)` is `-f` alone (skip the per-char tests).
    pub char_io: Option<Option<String>>,
    /// `-b`.
    pub fsync_each: bool,
    /// `-D`.
    pub direct: bool,
    /// `-z seed`.
    pub seed: Option<String>,
    /// `-c concurrency`.
    pub concurrency: Option<String>,
    /// `--compressible`: bonnie++'s near-zero block-write buffers.
    pub compressible: bool,
}

/// `-s`'s parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeSpec {
    pub file_mib: u64,
    pub chunk: Option<u64>,
    pub seeks: Option<u64>,
    pub seekers: Option<u64>,
}

/// `-n`'s parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilesSpec {
    /// Units of 1024 files.
    pub count: u64,
    pub max: Option<i64>,
    pub min: Option<u64>,
    pub dirs: Option<u64>,
    pub chunk: Option<u64>,
}

/// Splits `digits[suffix]` and multiplies by the suffix's factor from `units`
/// (case-insensitive); no suffix means a factor of 1.
fn scaled(
    flag: &'static str,
    text: &str,
    units: &[(char, u64)],
    what: &str,
) -> Result<u64, FlagError> {
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    if digits.is_empty() {
        return Err(FlagError::bad(flag, text, format!("expected {what}")));
    }
    let value: u64 = digits
        .parse()
        .map_err(|_| FlagError::bad(flag, text, "number too large"))?;
    let factor = match suffix.chars().collect::<Vec<_>>().as_slice() {
        [] => 1,
        [c] => units
            .iter()
            .find(|(u, _)| u.eq_ignore_ascii_case(c))
            .map(|(_, f)| *f)
            .ok_or_else(|| FlagError::bad(flag, text, unit_hint(*c, units, what)))?,
        _ => return Err(FlagError::bad(flag, text, format!("expected {what}"))),
    };
    value
        .checked_mul(factor)
        .ok_or_else(|| FlagError::bad(flag, text, "number too large"))
}

fn unit_hint(c: char, units: &[(char, u64)], what: &str) -> String {
    let names: Vec<String> = units.iter().map(|(u, _)| u.to_string()).collect();
    if names.is_empty() {
        format!("unexpected '{c}': expected {what} without a unit")
    } else {
        format!(
            "unknown unit '{c}': expected {what} with an optional {}",
            names.join(", ")
        )
    }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// A plain non-negative integer.
pub(crate) fn plain(flag: &'static str, text: &str) -> Result<u64, FlagError> {
    scaled(flag, text, &[], "a whole number")
}

/// `-s`: MiB by default, `g` and `t` as bonnie++ (`m` accepted as MiB).
pub fn parse_size(text: &str) -> Result<SizeSpec, FlagError> {
    let mut parts = text.split(':');
    let size = parts.next().unwrap_or_default();
    let file_mib = scaled(
        "-s",
        size,
        &[('m', 1), ('g', 1024), ('t', 1024 * 1024)],
        "a size in MiB",
    )?;
    let mut next = |what: &str, units: &[(char, u64)]| -> Result<Option<u64>, FlagError> {
        match parts.next() {
            None => Ok(None),
            Some(p) => scaled("-s", p, units, what)
                .map(Some)
                .map_err(|_| FlagError::bad("-s", text, format!("bad {what} '{p}'"))),
        }
    };
    let chunk = next("chunk size", &[('k', KIB), ('m', MIB)])?;
    let seeks = next("seek count", &[('k', KIB)])?;
    let seekers = next("seeker count", &[])?;
    if parts.next().is_some() {
        return Err(FlagError::bad(
            "-s",
            text,
            "expected size[:chunk[:seeks[:seekers]]]",
        ));
    }
    Ok(SizeSpec {
        file_mib,
        chunk,
        seeks,
        seekers,
    })
}

/// `-n`: file count in units of 1024 (`m` multiplies by another 1024, as in bonnie++);
/// max and min sizes in bytes with `k`/`m`/`g`; max `-1` means hard links, `-2` symlinks.
pub fn parse_files(text: &str) -> Result<FilesSpec, FlagError> {
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() > 5 {
        return Err(FlagError::bad(
            "-n",
            text,
            "expected files[:max[:min[:dirs[:chunk]]]]",
        ));
    }
    let field = |i: usize, what: &str, units: &[(char, u64)]| -> Result<Option<u64>, FlagError> {
        match parts.get(i) {
            None => Ok(None),
            Some(p) => scaled("-n", p, units, what)
                .map(Some)
                .map_err(|_| FlagError::bad("-n", text, format!("bad {what} '{p}'"))),
        }
    };
    let bytes = [('k', KIB), ('m', MIB), ('g', 1024 * MIB)];
    let count = field(0, "file count", &[('m', KIB)])?.unwrap_or(0);
    let max = match parts.get(1) {
        None => None,
        Some(&"-1") => Some(-1),
        Some(&"-2") => Some(-2),
        Some(_) => {
            let v = field(1, "maximum size", &bytes)?.unwrap_or(0);
            Some(i64::try_from(v).map_err(|_| FlagError::bad("-n", text, "size too large"))?)
        }
    };
    Ok(FilesSpec {
        count,
        max,
        min: field(2, "minimum size", &bytes)?,
        dirs: field(3, "directory count", &[('k', KIB)])?,
        chunk: field(4, "chunk size", &bytes)?,
    })
}

/// `-f size`: MiB.
pub fn parse_char_io(text: &str) -> Result<u64, FlagError> {
    scaled("-f", text, &[('m', 1), ('g', 1024)], "a size in MiB")
}

/// `-r`: MiB.
pub fn parse_ram(text: &str) -> Result<u64, FlagError> {
    scaled("-r", text, &[('m', 1), ('g', 1024)], "a RAM size in MiB")
}

/// `-u user[:group]` and `-g group` name an existing user and group (or give numeric ids),
/// as bonnie++ checks; storbench then runs as whoever started it.
pub fn check_user_group(user: Option<&str>, group: Option<&str>) -> Result<(), FlagError> {
    if let Some(spec) = user {
        let (name, grp) = spec.split_once(':').unwrap_or((spec, ""));
        if !known(name, libc::getpwnam_r) {
            return Err(FlagError::bad("-u", spec, format!("no user '{name}' here")));
        }
        if !grp.is_empty() && !known(grp, libc::getgrnam_r) {
            return Err(FlagError::bad("-u", spec, format!("no group '{grp}' here")));
        }
    }
    if let Some(grp) = group
        && !known(grp, libc::getgrnam_r)
    {
        return Err(FlagError::bad("-g", grp, format!("no group '{grp}' here")));
    }
    Ok(())
}

/// getpwnam_r(3) or getgrnam_r(3): the same shape over their own entry type.
type LookupR<T> = unsafe extern "C" fn(
    *const libc::c_char,
    *mut T,
    *mut libc::c_char,
    libc::size_t,
    *mut *mut T,
) -> libc::c_int;

/// A numeric id, or a name the passwd or group database (`lookup`) knows.
fn known<T>(name: &str, lookup: LookupR<T>) -> bool {
    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    let Ok(c) = std::ffi::CString::new(name) else {
        return false;
    };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut entry = std::mem::MaybeUninit::<T>::zeroed();
    let mut out: *mut T = std::ptr::null_mut();
    // SAFETY: the reentrant lookup fills `entry` and `buf` (of the length given) and sets
    // `out` to the entry or null; nothing outlives this call.
    let rc = unsafe {
        lookup(
            c.as_ptr(),
            entry.as_mut_ptr(),
            buf.as_mut_ptr(),
            buf.len(),
            &mut out,
        )
    };
    rc == 0 && !out.is_null()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_with_all_parts() {
        let s = parse_size("2g:4k:100:3").unwrap();
        assert_eq!(
            s,
            SizeSpec {
                file_mib: 2048,
                chunk: Some(4096),
                seeks: Some(100),
                seekers: Some(3)
            }
        );
        assert_eq!(parse_size("64M").unwrap().file_mib, 64);
        assert_eq!(parse_size("1T").unwrap().file_mib, 1024 * 1024);
        assert_eq!(parse_size("0").unwrap().file_mib, 0);
        assert_eq!(parse_size("64:8k:8k").unwrap().seeks, Some(8192));
    }

    #[test]
    fn size_rejects_what_bonnie_would_misread() {
        // bonnie++ reads "64k" as 64 MiB; we refuse rather than guess.
        assert!(parse_size("64k").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("abc").is_err());
        assert!(parse_size("64:4q").is_err());
        assert!(parse_size("64:4k:1:2:3").is_err());
        assert!(parse_size("-5").is_err());
        assert!(parse_size("99999999999999999999").is_err());
        let e = parse_size("64x").unwrap_err().to_string();
        assert!(e.starts_with("-s 64x: unknown unit 'x'"), "{e}");
    }

    #[test]
    fn files_spec() {
        let f = parse_files("8:4k:1024:2:16k").unwrap();
        assert_eq!(
            f,
            FilesSpec {
                count: 8,
                max: Some(4096),
                min: Some(1024),
                dirs: Some(2),
                chunk: Some(16384)
            }
        );
        assert_eq!(parse_files("1m").unwrap().count, 1024);
        assert_eq!(parse_files("16:-1").unwrap().max, Some(-1));
        assert_eq!(parse_files("16:-2").unwrap().max, Some(-2));
        assert!(parse_files("16:-3").is_err());
        assert!(parse_files("1:2:3:4:5:6").is_err());
        assert!(parse_files("x").is_err());
    }

    #[test]
    fn plain_numbers() {
        assert_eq!(plain("-c", "12").unwrap(), 12);
        assert!(plain("-c", "1k").is_err());
        assert!(plain("-c", " 1").is_err());
        assert_eq!(parse_ram("1g").unwrap(), 1024);
        assert_eq!(parse_char_io("3").unwrap(), 3);
    }

    proptest::proptest! {
        #[test]
        fn size_round_trips(mib in 0u64..1_000_000, chunk_pow in 8u32..=20) {
            let chunk = 1u64 << chunk_pow;
            let s = parse_size(&format!("{mib}:{chunk}")).unwrap();
            proptest::prop_assert_eq!(s.file_mib, mib);
            proptest::prop_assert_eq!(s.chunk, Some(chunk));
        }

        #[test]
        fn parsers_never_panic(text in "\\PC{0,24}") {
            let _ = parse_size(&text);
            let _ = parse_files(&text);
            let _ = parse_char_io(&text);
        }
    }

    #[test]
    fn users_and_groups_must_exist() {
        check_user_group(Some("root"), None).unwrap();
        check_user_group(Some("root:root"), Some("root")).unwrap();
        check_user_group(Some("1234:5678"), Some("42")).unwrap();
        let e = check_user_group(Some("nosuchuser-sb"), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "-u nosuchuser-sb: no user 'nosuchuser-sb' here"
        );
        let e = check_user_group(Some("root:nosuchgroup-sb"), None).unwrap_err();
        assert!(e.to_string().contains("no group 'nosuchgroup-sb'"), "{e}");
        let e = check_user_group(None, Some("nosuchgroup-sb")).unwrap_err();
        assert!(e.to_string().starts_with("-g nosuchgroup-sb: "), "{e}");
    }
}
