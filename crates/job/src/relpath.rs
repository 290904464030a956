//! A file's name relative to the root of its target: the directory, export or share a job
//! or bonnie was given. Checked once where a name is made (the plan's file names, bonnie's
//! tree), so a metadata operation never receives a name that reaches outside its root:
//! every component is non-empty and neither `.` nor `..`, there is no NUL, and the name is
//! not absolute. Engines take the components as they need them (a LOOKUP each over NFS,
//! joined with `\` over SMB, joined to a directory descriptor locally) instead of taking
//! a path string apart themselves.
//!
//! [`RelPath`] is the borrowed form (as `str` is to `String`), so checking a name that
//! already exists, as bonnie's per-file loops do, allocates nothing; [`RelPathBuf`] owns one.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

/// A checked relative name: `/`-separated components, none empty, `.` or `..`, no NUL.
#[derive(PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct RelPath(str);

/// An owned [`RelPath`].
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RelPathBuf(String);

/// Why a name is not a [`RelPath`], quoted in the one-line error. One pass over the bytes
/// (names are short and checked once per metadata call: no `memchr` set-up, no splitting).
fn refusal(name: &str) -> Option<&'static str> {
    let b = name.as_bytes();
    match b.first() {
        None => return Some("the name is empty"),
        Some(b'/') => return Some("it is absolute"),
        _ => {}
    }
    if !has_nul_or_slash(b) {
        // One component, the common case (bonnie's names in their directory).
        return matches!(b, b"." | b"..").then_some(DOTS);
    }
    let mut start = 0;
    for i in 0..=b.len() {
        let c = b.get(i).copied().unwrap_or(b'/');
        if c == 0 {
            return Some("it holds a NUL byte");
        }
        if c == b'/' {
            match &b[start..i] {
                b"" => return Some("it has an empty component (`//` or a trailing `/`)"),
                b"." | b".." => return Some(DOTS),
                _ => {}
            }
            start = i + 1;
        }
    }
    None
}

const DOTS: &str = "`.` and `..` are not allowed";

/// Whether `b` holds a NUL or a `/`, eight bytes at a time: a name is checked on every
/// name-relative call, and this keeps the check a few instructions per word (a byte loop
/// cost 60 % of the engine's own work on a tmpfs stat; see docs/BENCHMARKS.md).
#[inline]
fn has_nul_or_slash(b: &[u8]) -> bool {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    const SLASHES: u64 = u64::from_le_bytes([b'/'; 8]);
    // Non-zero exactly when some byte of `v` is zero (a flag set falsely only ever sits
    // above a true one, so the yes/no answer is exact).
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS != 0;
    let (words, rest) = b.as_chunks::<8>();
    for w in words {
        let v = u64::from_le_bytes(*w);
        if zero_in(v) || zero_in(v ^ SLASHES) {
            return true;
        }
    }
    rest.iter().any(|&c| c == 0 || c == b'/')
}

impl RelPath {
    /// `name` checked; the error is one line naming it and the rule it breaks.
    pub fn new(name: &str) -> Result<&RelPath, String> {
        match refusal(name) {
            None => Ok(RelPath::unchecked(name)),
            Some(why) => Err(format!(
                "{name:?} cannot name a file under its target: {why}"
            )),
        }
    }

    /// `name`, an absolute path on a server, made relative to `root`, the path of the
    /// target it is named under (`/`s at either end of `root` do not count; `""` or `/`
    /// is the server's root), then checked as [`RelPath::new`]. A name outside `root`, or
    /// `root` itself, is refused in one line. Nothing is allocated.
    pub fn below<'n>(root: &str, name: &'n str) -> Result<&'n RelPath, String> {
        let root = root.trim_matches('/');
        let inside = name.strip_prefix('/').and_then(|rest| {
            if root.is_empty() {
                return Some(rest);
            }
            rest.strip_prefix(root)?.strip_prefix('/')
        });
        match inside {
            Some(rel) => match refusal(rel) {
                None => Ok(RelPath::unchecked(rel)),
                Some(why) => Err(format!(
                    "{name:?} cannot name a file under its target: below /{root}, {why}"
                )),
            },
            None => Err(format!(
                "{name:?} cannot name a file under its target: it is absolute and not inside /{root}"
            )),
        }
    }

    /// `name` as a name below a root whose path on its server is `root`: an absolute
    /// name by [`RelPath::below`], a relative one by [`RelPath::new`]. The rule every
    /// network target applies to a plain name, in the plan and in the engines alike.
    pub fn under<'n>(root: &str, name: &'n str) -> Result<&'n RelPath, String> {
        if name.starts_with('/') {
            RelPath::below(root, name)
        } else {
            RelPath::new(name)
        }
    }

    fn unchecked(name: &str) -> &RelPath {
        // SAFETY: `RelPath` is a transparent wrapper of `str`.
        unsafe { &*(name as *const str as *const RelPath) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The components, in order (at least one).
    pub fn components(&self) -> std::str::Split<'_, char> {
        self.0.split('/')
    }

    /// The directory part (none for a single component) and the last component.
    pub fn split_last(&self) -> (Option<&RelPath>, &str) {
        match self.0.rsplit_once('/') {
            Some((dir, last)) => (Some(RelPath::unchecked(dir)), last),
            None => (None, &self.0),
        }
    }

    /// This name with `name` below it.
    pub fn join(&self, name: &RelPath) -> RelPathBuf {
        RelPathBuf(format!("{}/{}", &self.0, &name.0))
    }

    /// Writes the components into `out` separated by `sep` (`\` for SMB), reusing its
    /// memory.
    pub fn write_with(&self, sep: char, out: &mut String) {
        out.clear();
        for (i, part) in self.components().enumerate() {
            if i > 0 {
                out.push(sep);
            }
            out.push_str(part);
        }
    }
}

/// Appends `name` to the path in `out`, after a `/` unless `out` is empty (the root
/// itself): how the network engines build a path inside an export or share in a reused
/// buffer, root first, then each name below it.
pub fn push_below(out: &mut String, name: &str) {
    if !out.is_empty() {
        out.push('/');
    }
    out.push_str(name);
}

/// `name` below the directory `dir` (`""` for the root) written into `out`, its memory
/// reused.
pub fn join_into(dir: &str, name: &str, out: &mut String) {
    out.clear();
    out.push_str(dir);
    push_below(out, name);
}

impl RelPathBuf {
    /// `name` checked, as [`RelPath::new`].
    pub fn new(name: impl Into<String>) -> Result<RelPathBuf, String> {
        let name = name.into();
        RelPath::new(&name)?;
        Ok(RelPathBuf(name))
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl Deref for RelPathBuf {
    type Target = RelPath;
    fn deref(&self) -> &RelPath {
        RelPath::unchecked(&self.0)
    }
}

impl Borrow<RelPath> for RelPathBuf {
    fn borrow(&self) -> &RelPath {
        self
    }
}

impl ToOwned for RelPath {
    type Owned = RelPathBuf;
    fn to_owned(&self) -> RelPathBuf {
        RelPathBuf(self.0.to_owned())
    }
}

impl AsRef<str> for RelPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for RelPathBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RelPathBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_names_are_refused_with_one_line() {
        for (bad, why) in [
            ("", "empty"),
            ("/etc/passwd", "absolute"),
            ("../x", "`..`"),
            ("a/../../x", "`..`"),
            ("a/./b", "`.`"),
            (".", "`.`"),
            ("a//b", "empty component"),
            ("a/", "empty component"),
            ("a\0b", "NUL"),
        ] {
            let e = RelPath::new(bad).unwrap_err();
            assert!(e.contains(why) && !e.contains('\n'), "{bad:?}: {e}");
            assert!(RelPathBuf::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_absolute_name_inside_the_root_is_made_relative() {
        let below = |root, name| RelPath::below(root, name).map(RelPath::as_str);
        assert_eq!(below("/export", "/export/sub/f"), Ok("sub/f"));
        assert_eq!(below("/export/", "/export/f"), Ok("f"));
        assert_eq!(below("", "/sub/f"), Ok("sub/f"));
        assert_eq!(below("/", "/f"), Ok("f"));
        assert_eq!(below("dir", "/dir/f"), Ok("f"));
        for (root, bad, why) in [
            ("/export", "/escape", "not inside /export"),
            ("/export", "/exportx/f", "not inside /export"),
            ("/export", "/export", "not inside /export"),
            ("/export", "/export/", "empty"),
            ("/export", "/export/../x", "`..`"),
            ("/export", "export/f", "not inside"),
        ] {
            let e = RelPath::below(root, bad).unwrap_err();
            assert!(e.contains(why) && !e.contains('\n'), "{bad:?}: {e}");
            assert!(e.contains("cannot name a file under its target"), "{e}");
        }
    }

    #[test]
    fn a_nul_or_slash_is_found_at_every_place() {
        for len in 1..30 {
            let mut name = vec![b'a'; len];
            assert!(!has_nul_or_slash(&name), "{len}");
            for at in 0..len {
                for c in [0, b'/'] {
                    name[at] = c;
                    assert!(has_nul_or_slash(&name), "{len} {at} {c}");
                }
                for c in [b'.', 0x2e, 0x01, 0x30, 0xaf, 0x80] {
                    name[at] = c;
                    assert!(!has_nul_or_slash(&name), "{len} {at} {c}");
                }
                name[at] = b'a';
            }
        }
        assert!(RelPath::new("..").is_err() && RelPath::new("...").is_ok());
    }

    #[test]
    fn good_names_keep_their_components() {
        let p = RelPath::new("Bonnie.1/00001/0000abc").unwrap();
        assert_eq!(
            p.components().collect::<Vec<_>>(),
            ["Bonnie.1", "00001", "0000abc"]
        );
        let (dir, last) = p.split_last();
        assert_eq!(
            (dir.map(RelPath::as_str), last),
            (Some("Bonnie.1/00001"), "0000abc")
        );
        assert_eq!(RelPath::new("f..x").unwrap().split_last(), (None, "f..x"));
        let mut out = String::new();
        p.write_with('\\', &mut out);
        assert_eq!(out, "Bonnie.1\\00001\\0000abc");
        join_into("", "f", &mut out);
        assert_eq!(out, "f");
        join_into("a/b", "f", &mut out);
        assert_eq!(out, "a/b/f");
        push_below(&mut out, "g");
        assert_eq!(out, "a/b/f/g");
        let joined = RelPath::new("d")
            .unwrap()
            .join(RelPath::new(".hidden").unwrap());
        assert_eq!(joined.as_str(), "d/.hidden");
        assert_eq!(format!("{joined} {joined:?}"), "d/.hidden \"d/.hidden\"");
    }
}
