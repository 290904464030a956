//! The validated suite: bonnie++'s defaults and refusals applied to [`Flags`], plus the
//! notes that make storbench's deviations from bonnie++ visible in every result.

use std::path::PathBuf;

use storbench_model::result::{Note, NoteLevel};

use crate::error::FlagError;
use crate::flags::{self, Flags};
use crate::target::Target;

/// bonnie++'s defaults (2.00a).
pub const DEFAULT_CHUNK: u64 = 8192;
pub const DEFAULT_SEEKS: u64 = 8192;
pub const DEFAULT_SEEKERS: u64 = 5;
pub const DEFAULT_FILES: u64 = 16;
pub const DEFAULT_FILE_MIB: u64 = 300;
pub const DEFAULT_CHAR_IO_MIB: u64 = 3;
/// bonnie++'s estimate of the memory one file name costs (name, directory index, NUL,
/// pointer); its RAM check for `-n` uses it.
const MAX_DATA_PER_FILE: u64 = 22 + 6 + 1 + 8;
/// Limits that keep sizes and counts inside what the suite can hold and compute with.
const MAX_FILE_MIB: u64 = 1 << 30;
const MAX_SEEKS: u64 = i32::MAX as u64;
const MIN_CHUNK: u64 = 256;
const MAX_CHUNK: u64 = 1 << 20;

/// Facts about the machine that bonnie++'s defaults depend on; injectable for tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub ram_mib: u64,
    pub hostname: String,
    pub pid: u32,
    /// bonnie++'s default seed is `pid ^ time`.
    pub default_seed: u64,
}

impl Host {
    pub fn detect() -> Host {
        let pid = std::process::id();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Host {
            ram_mib: physical_ram_mib(),
            hostname: hostname(),
            pid,
            default_seed: (u64::from(pid) ^ now) & u64::from(u32::MAX),
        }
    }
}

/// bonnie++'s `Bonnie.<pid>`; in a multi-host run `Bonnie.<pid>.r<rank>`, so ranks on
/// hosts whose PIDs happen to match never share a file or directory in one export.
fn base_name(pid: u32) -> String {
    if storbench_core::coord::active() {
        format!("Bonnie.{pid}.r{}", storbench_core::coord::rank())
    } else {
        format!("Bonnie.{pid}")
    }
}

fn physical_ram_mib() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages <= 0 || page <= 0 {
        return 0;
    }
    (pages as u64 / 1024) * (page as u64 / 1024)
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Everything one suite run needs, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub target: Target,
    /// Name used for the test file and the file-test directory: `Bonnie.<pid>`.
    pub base_name: String,
    /// 0 skips the IO tests.
    pub file_mib: u64,
    pub chunk: u64,
    pub seeks: u64,
    pub seekers: u32,
    /// Per-char test size; 0 skips the per-char tests.
    pub char_io_mib: u64,
    /// Units of 1024 files; 0 skips the file tests.
    pub num_files: u64,
    /// Bytes; -1 hard links, -2 symlinks.
    pub max_size: i64,
    pub min_size: u64,
    pub num_dirs: u64,
    pub file_chunk: u64,
    pub name: String,
    /// The RAM figure the checks used (`-r`, or the machine's); 0 disables them.
    pub ram_mib: u64,
    /// `-x`: None is bonnie++'s default single run with the text table.
    pub runs: Option<u32>,
    pub quiet: bool,
    pub fsync_each: bool,
    pub direct: bool,
    pub compressible: bool,
    pub seed: u64,
    pub concurrency: u32,
    /// Deviations from bonnie++ and warnings, shown above the table and stored.
    pub notes: Vec<Note>,
}

impl Config {
    /// bonnie++'s defaults, refusals and limits applied to `f`.
    pub fn from_flags(f: &Flags, host: &Host) -> Result<Config, FlagError> {
        let target = Target::resolve(f.dir.as_deref().unwrap_or("."))?;
        flags::check_user_group(f.user.as_deref(), f.group.as_deref())?;
        let ram_mib = match &f.ram {
            Some(r) => flags::parse_ram(r)?.min(MAX_FILE_MIB),
            None => host.ram_mib,
        };
        let concurrency = match &f.concurrency {
            Some(c) => flags::plain("-c", c)?,
            None => 1,
        };
        if !(1..=200).contains(&concurrency) {
            let value = f.concurrency.clone().unwrap_or_default();
            return Err(FlagError::bad("-c", &value, "concurrency must be 1 to 200"));
        }
        let mut cfg = Config {
            target,
            base_name: base_name(host.pid),
            file_mib: default_file_mib(ram_mib),
            chunk: DEFAULT_CHUNK,
            seeks: DEFAULT_SEEKS,
            seekers: DEFAULT_SEEKERS as u32,
            char_io_mib: DEFAULT_CHAR_IO_MIB,
            num_files: DEFAULT_FILES,
            max_size: 0,
            min_size: 0,
            num_dirs: 1,
            file_chunk: DEFAULT_CHUNK,
            name: machine_name(f.machine.as_deref(), &host.hostname)?,
            ram_mib,
            runs: runs(f.runs.as_deref())?,
            quiet: f.quiet,
            fsync_each: f.fsync_each,
            direct: f.direct,
            compressible: f.compressible,
            seed: match &f.seed {
                Some(s) => flags::plain("-z", s)?,
                None => host.default_seed,
            },
            concurrency: concurrency as u32,
            notes: Vec::new(),
        };
        cfg.apply_size(f)?;
        cfg.apply_files(f)?;
        cfg.apply_char_io(f)?;
        cfg.check(f)?;
        cfg.notes = crate::notes::for_config(&cfg, f, host);
        Ok(cfg)
    }

    fn apply_size(&mut self, f: &Flags) -> Result<(), FlagError> {
        let Some(text) = &f.size else { return Ok(()) };
        let s = flags::parse_size(text)?;
        self.file_mib = s.file_mib;
        self.chunk = s.chunk.unwrap_or(DEFAULT_CHUNK);
        check_chunk("-s", text, self.chunk)?;
        self.seeks = s.seeks.unwrap_or(DEFAULT_SEEKS);
        let seekers = s.seekers.unwrap_or(DEFAULT_SEEKERS);
        if self.file_mib > MAX_FILE_MIB {
            return Err(FlagError::bad("-s", text, "file size above 1 PiB"));
        }
        if !(1..=MAX_SEEKS).contains(&self.seeks) || !(1..=1024).contains(&seekers) {
            return Err(FlagError::bad(
                "-s",
                text,
                "seeks must be 1 to 2147483647 and seekers 1 to 1024",
            ));
        }
        self.seekers = seekers as u32;
        Ok(())
    }

    fn apply_files(&mut self, f: &Flags) -> Result<(), FlagError> {
        let Some(text) = &f.files else { return Ok(()) };
        let n = flags::parse_files(text)?;
        self.num_files = n.count;
        self.max_size = n.max.unwrap_or(0);
        self.min_size = n.min.unwrap_or(0);
        self.num_dirs = n.dirs.unwrap_or(1);
        self.file_chunk = n.chunk.unwrap_or(DEFAULT_CHUNK);
        check_chunk("-n", text, self.file_chunk)?;
        if self.max_size >= 0 && (self.max_size as u64) < self.min_size {
            return Err(FlagError::bad(
                "-n",
                text,
                "maximum size is below the minimum",
            ));
        }
        if !(1..100_000).contains(&self.num_dirs) {
            return Err(FlagError::bad("-n", text, "directories must be 1 to 99999"));
        }
        if self.num_files * MAX_DATA_PER_FILE > 1 << 20 {
            return Err(FlagError::bad(
                "-n",
                text,
                "more than 28339 x 1024 files (bonnie++'s limit: their names would need over 1 GiB)",
            ));
        }
        Ok(())
    }

    fn apply_char_io(&mut self, f: &Flags) -> Result<(), FlagError> {
        self.char_io_mib = match &f.char_io {
            None if self.target.is_network() => 0,
            None => DEFAULT_CHAR_IO_MIB,
            Some(None) => 0,
            Some(Some(text)) => flags::parse_char_io(text)?,
        };
        self.char_io_mib = self.char_io_mib.min(self.file_mib);
        Ok(())
    }

    /// bonnie++'s refusals, in its order, plus storbench's own.
    fn check(&self, f: &Flags) -> Result<(), FlagError> {
        if self.file_mib == 0 && self.num_files == 0 {
            return Err(FlagError::Conflict(
                "-s 0 with -n 0 leaves nothing to test".into(),
            ));
        }
        let total_mib = self.file_mib * u64::from(self.concurrency);
        if self.file_mib > 0 && self.ram_mib > 0 && total_mib < self.ram_mib.saturating_mul(2) {
            return Err(FlagError::Conflict(format!(
                "file size should be double RAM for good results: {}M{} is less than 2 x {} MiB; \
                 give a larger -s, or -r with the RAM to assume (-r 0 disables the check)",
                self.file_mib,
                concurrency_suffix(self.concurrency),
                self.ram_mib
            )));
        }
        let files = self.num_files * 1024;
        let ram_bytes = self.ram_mib.saturating_mul(1 << 20);
        if files > 0 && self.ram_mib > 0 && files * MAX_DATA_PER_FILE * 2 > ram_bytes {
            return Err(FlagError::Conflict(format!(
                "-n {}: {} files in {} MiB of RAM would page out their names; use fewer files \
                 or -r (-r 0 disables the check)",
                f.files.as_deref().unwrap_or_default(),
                files,
                self.ram_mib
            )));
        }
        if self.direct && self.file_mib > 0 && self.chunk < 512 {
            return Err(FlagError::Conflict(format!(
                "-D needs a chunk of at least 512 bytes for O_DIRECT, -s gives {}",
                self.chunk
            )));
        }
        Ok(())
    }

    /// Whether this configuration runs the IO tests.
    pub fn io_tests(&self) -> bool {
        self.file_mib > 0
    }

    pub fn file_tests(&self) -> bool {
        self.num_files > 0
    }
}

fn concurrency_suffix(c: u32) -> String {
    if c == 1 {
        String::new()
    } else {
        format!(" x {c} copies")
    }
}

/// bonnie++: 300 MiB, or twice the RAM rounded up to a whole GiB when more than 512 MiB
/// past one.
fn default_file_mib(ram_mib: u64) -> u64 {
    let mut size = DEFAULT_FILE_MIB;
    if ram_mib > 0 {
        size = size.max(ram_mib * 2);
        if size % 1024 > 512 {
            size += 1024 - size % 1024;
        }
    }
    size
}

fn check_chunk(flag: &'static str, text: &str, chunk: u64) -> Result<(), FlagError> {
    if !(MIN_CHUNK..=MAX_CHUNK).contains(&chunk) || !chunk.is_power_of_two() {
        return Err(FlagError::bad(
            flag,
            text,
            "chunk size must be a power of two from 256 to 1m",
        ));
    }
    Ok(())
}

fn machine_name(given: Option<&str>, host: &str) -> Result<String, FlagError> {
    let name = given.unwrap_or(host);
    if let Some(given) = given
        && (given.is_empty() || given.contains([',', '\n', '\r']))
    {
        return Err(FlagError::bad(
            "-m",
            given,
            "the name must be non-empty and contain no comma or line break (it is a CSV field)",
        ));
    }
    Ok(name.replace([',', '\n', '\r'], "_"))
}

fn runs(given: Option<&str>) -> Result<Option<u32>, FlagError> {
    let Some(text) = given else { return Ok(None) };
    let n = flags::plain("-x", text)?;
    if !(1..=100_000).contains(&n) {
        return Err(FlagError::bad("-x", text, "runs must be 1 to 100000"));
    }
    Ok(Some(n as u32))
}

/// A local directory resolved for messages and cleanup.
pub(crate) fn absolute_dir(dir: &str) -> Result<PathBuf, FlagError> {
    let meta = std::fs::metadata(dir)
        .map_err(|e| FlagError::bad("-d", dir, format!("cannot use this directory: {e}")))?;
    if !meta.is_dir() {
        return Err(FlagError::bad("-d", dir, "not a directory"));
    }
    std::fs::canonicalize(dir)
        .map_err(|e| FlagError::bad("-d", dir, format!("cannot resolve the path: {e}")))
}

/// A warning note.
pub(crate) fn warning(code: &str, message: String) -> Note {
    Note {
        level: NoteLevel::Warning,
        code: code.into(),
        message,
    }
}

/// An informational note.
pub(crate) fn info(code: &str, message: String) -> Note {
    Note {
        level: NoteLevel::Info,
        code: code.into(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        Host {
            ram_mib: 1000,
            hostname: "box".into(),
            pid: 42,
            default_seed: 7,
        }
    }

    fn flags(args: &[(&str, &str)]) -> Flags {
        let mut f = Flags {
            dir: Some(std::env::temp_dir().to_string_lossy().into_owned()),
            ..Flags::default()
        };
        for (k, v) in args {
            let v = Some(v.to_string());
            match *k {
                "-s" => f.size = v,
                "-n" => f.files = v,
                "-r" => f.ram = v,
                "-c" => f.concurrency = v,
                "-x" => f.runs = v,
                "-m" => f.machine = v,
                "-f" => f.char_io = Some(v),
                "-z" => f.seed = v,
                _ => unreachable!(),
            }
        }
        f
    }

    /// The network notes name the target's own protocol, not always NFS.
    #[test]
    fn network_notes_name_the_protocol() {
        for (url, proto, other) in [
            ("smb://nas/share/dir", "SMB", "NFS"),
            ("nfs://nas/export/dir", "NFS", "SMB"),
        ] {
            let mut f = flags(&[]);
            f.dir = Some(url.into());
            let c = Config::from_flags(&f, &host()).unwrap();
            let text: Vec<&str> = c.notes.iter().map(|n| n.message.as_str()).collect();
            let per_char = text
                .iter()
                .find(|t| t.starts_with("per-char tests skipped"))
                .unwrap_or_else(|| panic!("{url}: no per-char note in {text:?}"));
            assert!(per_char.contains(&format!("over {proto}")), "{per_char}");
            for t in &text {
                assert!(!t.contains(other), "{url}: {t}");
            }
        }
    }

    #[test]
    fn defaults_follow_bonnie() {
        let c = Config::from_flags(&flags(&[]), &host()).unwrap();
        assert_eq!(c.file_mib, 2048, "2 x 1000 MiB rounded up to a whole GiB");
        assert_eq!((c.chunk, c.seeks, c.seekers), (8192, 8192, 5));
        assert_eq!(
            (c.num_files, c.max_size, c.min_size, c.num_dirs),
            (16, 0, 0, 1)
        );
        assert_eq!(c.char_io_mib, 3);
        assert_eq!(c.name, "box");
        assert_eq!(c.base_name, "Bonnie.42");
        assert_eq!(c.seed, 7);
        assert_eq!(c.runs, None);
    }

    #[test]
    fn default_size_rounding() {
        assert_eq!(default_file_mib(0), 300);
        assert_eq!(default_file_mib(100), 300);
        assert_eq!(
            default_file_mib(300),
            1024,
            "600 MiB is 600 past a GiB boundary"
        );
        assert_eq!(default_file_mib(1300), 3072);
        assert_eq!(default_file_mib(1200), 2400);
    }

    #[test]
    fn links_over_nfs_are_accepted() {
        for max in ["-1", "-2"] {
            let mut f = flags(&[("-n", &format!("1:{max}")), ("-s", "0")]);
            f.dir = Some("nfs://127.0.0.1/export".into());
            let c = Config::from_flags(&f, &host()).unwrap();
            assert_eq!(c.max_size.to_string(), max);
        }
    }

    #[test]
    fn double_ram_refusal_and_r_override() {
        let e = Config::from_flags(&flags(&[("-s", "64")]), &host()).unwrap_err();
        assert!(e.to_string().contains("double RAM"), "{e}");
        let c = Config::from_flags(&flags(&[("-s", "64"), ("-r", "32")]), &host()).unwrap();
        assert_eq!(c.file_mib, 64);
        assert!(c.notes.iter().any(|n| n.code == "warn.small-file"));
        assert!(Config::from_flags(&flags(&[("-s", "64"), ("-r", "0")]), &host()).is_ok());
        // Concurrency multiplies the size in the check, as in bonnie++.
        assert!(Config::from_flags(&flags(&[("-s", "1000"), ("-c", "2")]), &host()).is_ok());
    }

    #[test]
    fn refusals() {
        let bad = [
            vec![("-s", "0"), ("-n", "0")],
            vec![("-c", "0")],
            vec![("-c", "201")],
            vec![("-x", "0")],
            vec![("-s", "64:1000"), ("-r", "0")],
            vec![("-s", "64:128"), ("-r", "0")],
            vec![("-s", "64:2m"), ("-r", "0")],
            vec![("-s", "64:8k:0"), ("-r", "0")],
            vec![("-s", "64:8k:10:0"), ("-r", "0")],
            vec![("-n", "1:10:20")],
            vec![("-n", "1:0:0:0")],
            vec![("-n", "1:0:0:1:100")],
            vec![("-n", "1024"), ("-r", "16")],
            vec![("-m", "a,b")],
            vec![("-m", "")],
            vec![("-z", "x")],
        ];
        for args in bad {
            assert!(
                Config::from_flags(&flags(&args), &host()).is_err(),
                "{args:?} should be refused"
            );
        }
    }

    #[test]
    fn char_io_size() {
        let c = Config::from_flags(&flags(&[("-s", "2"), ("-r", "0")]), &host()).unwrap();
        assert_eq!(c.char_io_mib, 2, "capped by the file size");
        let mut f = flags(&[("-s", "64"), ("-r", "0")]);
        f.char_io = Some(None);
        assert_eq!(Config::from_flags(&f, &host()).unwrap().char_io_mib, 0);
        let c = Config::from_flags(&flags(&[("-s", "64"), ("-r", "0"), ("-f", "10")]), &host());
        assert_eq!(c.unwrap().char_io_mib, 10);
    }

    proptest::proptest! {
        /// Any flag values give a config or an error, never a panic or an overflow.
        #[test]
        fn never_panics(
            size in "[0-9]{0,22}[mgtk]?(:[0-9]{0,9}k?){0,3}",
            files in "[0-9]{0,12}m?(:-?[0-9]{0,12}[kmg]?){0,4}",
            ram in "[0-9]{0,22}",
            c in "[0-9]{0,4}",
        ) {
            let f = Flags {
                dir: Some("/".into()),
                size: Some(size),
                files: Some(files),
                ram: Some(ram),
                concurrency: Some(c),
                ..Flags::default()
            };
            let _ = Config::from_flags(&f, &host());
        }
    }

    #[test]
    fn missing_directory_is_a_flag_error() {
        let mut f = flags(&[]);
        f.dir = Some("/nonexistent/storbench".into());
        let e = Config::from_flags(&f, &host()).unwrap_err().to_string();
        assert!(e.starts_with("-d /nonexistent/storbench:"), "{e}");
    }
}
