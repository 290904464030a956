//! THE fio option table. One [`OptDef`] per option carries its name, aliases, value type,
//! fio's default, help, category, storbench's note, and the function that parses a value
//! into a job. The argv and job-file readers, `--cmdhelp` and docs/fio-compat.md all read
//! this table, so they cannot disagree.

mod buffers;
mod cmdprio;
mod coord;
mod cpus;
mod e4defrag;
mod engine;
mod files;
mod io;
mod logs;
mod net;
mod pseudo;
mod random;
mod refused;
mod stats;
mod strided;
mod timing;
mod verify;
mod zoned;

use crate::build::JobBuilder;

pub(crate) use buffers::fix_dedupe;
pub(crate) use engine::{check_engine_options, check_pseudo, nbd_target, route_target};
pub(crate) use logs::fix_logs;
pub(crate) use net::check_net;
pub use net::is_multicast;
pub use refused::{Refused, UNSUPPORTED, UNSUPPORTED_ENGINES};
pub(crate) use strided::fix_zoning;
pub(crate) use verify::fix_verify;

/// How an option's value is written (for help, docs, and the readers: flags may stand
/// alone, everything else needs a value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Given alone (`time_based`) or as `=0`/`=1`.
    Flag,
    Bool,
    /// A whole number; fio allows size suffixes (`iodepth=1k` is 1024).
    Int,
    /// Whole percent, 0 to 100.
    Percent,
    /// `read,write,trim` percentages.
    PercentDirs,
    /// `read,write,trim` whole numbers.
    IntDirs,
    /// Bytes with fio's unit suffixes.
    Size,
    /// Bytes, or `N%` of the file or device.
    SizeOrPercent,
    /// `read,write,trim` byte values.
    SizeDirs,
    /// `lo-hi` bytes, or one value.
    SizeRange,
    /// `read,write,trim` ranges.
    SizeRangeDirs,
    /// `size/percent:…` lists per direction.
    Split,
    /// A duration, seconds unless a unit is given.
    Time,
    /// A duration, microseconds unless a unit is given (fio's latency options).
    TimeUs,
    /// A duration or a `lo-hi` range of durations.
    TimeRange,
    /// Milliseconds as a plain number.
    Millis,
    /// One of a fixed set of words (some take a `:value` suffix).
    Choice(&'static [(&'static str, &'static str)]),
    /// `:`-separated decimal numbers.
    FloatList,
    /// One of storbench's engine names.
    Engine,
    /// fio's byte pattern syntax (`0xdeadbeef`, `"text"`, decimal).
    Pattern,
    /// Free text, or a `:`-separated list of paths.
    Str,
}

impl Kind {
    /// Whether the option may be given without a value.
    pub fn is_flag(self) -> bool {
        self == Kind::Flag
    }

    /// Whether values are numbers (so `$ncpus*2`-style arithmetic applies). A size range
    /// is too: fio computes `filesize=1000*$mb_memory` as it does `size=`.
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            Kind::Int
                | Kind::Percent
                | Kind::Size
                | Kind::SizeOrPercent
                | Kind::SizeRange
                | Kind::Time
                | Kind::TimeUs
                | Kind::Millis
                | Kind::Bool
                | Kind::Flag
        )
    }

    /// fio-style type line for `--cmdhelp=NAME`.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Flag => "flag: given alone, or =1 / =0",
            Kind::Bool => "boolean (0 or 1)",
            Kind::Int => "integer",
            Kind::Percent => "integer percentage (0-100)",
            Kind::PercentDirs => "percentages: read[,write[,trim]]",
            // fio's own type lines (its FIO_OPT_ULL and FIO_OPT_FLOAT_LIST): callers that
            // read `fio --cmdhelp=NAME` see what fio prints; the help text says which
            // options take read,write[,trim] or only one value.
            Kind::IntDirs => "integer value (opt=100)",
            Kind::Size => "size in bytes with optional k/m/g/t/p suffix (kb_base rules)",
            Kind::SizeOrPercent => "size in bytes with optional suffix, or N%",
            Kind::SizeDirs => "sizes: read[,write[,trim]]",
            Kind::SizeRange => "size or size range (lo-hi)",
            Kind::SizeRangeDirs => "size ranges: lo-hi[,lo-hi[,lo-hi]]",
            Kind::Split => "size/percent pairs split by ':', per direction with ','",
            Kind::Time => "time, seconds unless suffixed (us, ms, s, m, h, d)",
            Kind::TimeUs => "time, microseconds unless suffixed (us, ms, s, m, h, d)",
            Kind::TimeRange => "time or time range (lo-hi), seconds unless suffixed",
            Kind::Millis => "integer milliseconds",
            Kind::Choice(_) => "one of the listed values",
            Kind::Engine => "engine name (see the values below)",
            Kind::FloatList => "list of floating point values separated by ':' (opt=5.9:7.8)",
            Kind::Pattern => "byte pattern: 0xHEX, \"text\", decimal, concatenated",
            Kind::Str => "string",
        }
    }
}

/// fio's option groups, in the order `--cmdhelp` and the docs list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Job,
    Files,
    Io,
    BlockSize,
    Engine,
    Timing,
    Rate,
    Random,
    Buffers,
    Verify,
    Sync,
    Reporting,
}

impl Category {
    pub const ALL: [Category; 12] = [
        Category::Job,
        Category::Files,
        Category::Io,
        Category::BlockSize,
        Category::Engine,
        Category::Timing,
        Category::Rate,
        Category::Random,
        Category::Buffers,
        Category::Verify,
        Category::Sync,
        Category::Reporting,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Category::Job => "Job description and grouping",
            Category::Files => "Files and devices",
            Category::Io => "IO type and depth",
            Category::BlockSize => "Block sizes",
            Category::Engine => "Engine-specific options",
            Category::Timing => "Run time and repetition",
            Category::Rate => "Rate limits",
            Category::Random => "Randomness",
            Category::Buffers => "Buffer contents",
            Category::Verify => "Data verification",
            Category::Sync => "Syncing",
            Category::Reporting => "Measurement and reporting",
        }
    }
}

/// Parses a value (`None` for a bare flag) into the job.
pub(crate) type ApplyFn = fn(&mut JobBuilder, Option<&str>) -> Result<(), String>;

/// One fio option as storbench supports it.
pub struct OptDef {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub kind: Kind,
    /// fio's default as `--cmdhelp` shows it; empty when fio has none.
    pub default: &'static str,
    pub help: &'static str,
    pub category: Category,
    /// Where storbench differs from fio, or what the user should know; empty if nothing.
    pub note: &'static str,
    /// A value-taking option that a job file may also give bare (fio's `write_bw_log`).
    pub bare: bool,
    pub(crate) apply: ApplyFn,
}

impl OptDef {
    pub(crate) const fn new(
        name: &'static str,
        kind: Kind,
        category: Category,
        default: &'static str,
        help: &'static str,
        apply: ApplyFn,
    ) -> Self {
        OptDef {
            name,
            aliases: &[],
            kind,
            default,
            help,
            category,
            note: "",
            bare: false,
            apply,
        }
    }

    pub(crate) const fn aliases(mut self, aliases: &'static [&'static str]) -> Self {
        self.aliases = aliases;
        self
    }

    pub(crate) const fn note(mut self, note: &'static str) -> Self {
        self.note = note;
        self
    }

    pub(crate) const fn bare(mut self) -> Self {
        self.bare = true;
        self
    }

    /// The engines this option belongs to (the catalogue's claim); empty for general
    /// options.
    pub fn engines(&self) -> Vec<&'static str> {
        crate::catalogue::engines_with_option(self.name)
    }

    /// A bare boolean (`direct` alone on a job-file line) means 1; fio itself refuses it.
    pub(crate) fn apply(&self, job: &mut JobBuilder, value: Option<&str>) -> Result<(), String> {
        match (value, self.kind) {
            (None, Kind::Flag) => (self.apply)(job, None),
            (None, Kind::Bool) => (self.apply)(job, Some("1")),
            (None, _) if self.bare => (self.apply)(job, Some("")),
            (None, _) => Err(format!("{} needs a value", self.name)),
            (Some(v), _) => (self.apply)(job, Some(v)),
        }
    }

    /// Whether `name` is this option's name or one of its aliases.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }

    /// fio orders a job file section's options before applying them: `kb_base` and
    /// `unit_base` first (they change how sizes read), `filename` and `filename_format` last
    /// of the general options, then the engine's own options in a second pass.
    pub(crate) fn priority(&self) -> i32 {
        if self.category == Category::Engine {
            return -2;
        }
        match self.name {
            "kb_base" | "unit_base" => 1,
            "filename" | "filename_format" => -1,
            _ => 0,
        }
    }
}

/// Every option storbench supports, in category order.
pub fn all() -> impl Iterator<Item = &'static OptDef> {
    [
        io::JOB,
        cpus::DEFS,
        coord::DEFS,
        files::DEFS,
        io::DEFS,
        io::BLOCK_SIZES,
        engine::DEFS,
        e4defrag::DEFS,
        cmdprio::DEFS,
        net::DEFS,
        pseudo::DEFS,
        timing::DEFS,
        timing::RATE,
        timing::THINK,
        timing::LATENCY,
        random::DEFS,
        strided::DEFS,
        buffers::DEFS,
        verify::DEFS,
        timing::SYNC,
        stats::DEFS,
        logs::DEFS,
    ]
    .into_iter()
    .flatten()
}

/// The option answering to `name` (a name or an alias), if storbench supports it.
pub fn find(name: &str) -> Option<&'static OptDef> {
    all().find(|o| o.answers_to(name))
}

/// Whether `name` is a fio option (or alias) storbench deliberately does not support.
pub fn is_unsupported(name: &str) -> bool {
    UNSUPPORTED.contains(name)
}

/// The closest supported name or alias, if it is close enough to be a typo.
pub fn suggest(name: &str) -> Option<&'static str> {
    let names = all().flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()));
    closest(name, names)
}

/// The candidate nearest to `name` by edit distance (with transpositions), within a
/// tolerance that grows with the length of the name.
pub fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_ascii_lowercase();
    let limit = (name.len() + 2) / 4;
    candidates
        .map(|c| (edit_distance(&lower, c), c))
        .filter(|(d, _)| *d <= limit.max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Optimal string alignment distance: insertions, deletions, substitutions, swaps.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut prev2 = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(prev2[j - 2] + 1);
            }
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The value of an option that needs one (the readers already checked; this keeps the
/// apply functions free of `unwrap`).
pub(crate) fn val(v: Option<&str>) -> Result<&str, String> {
    v.filter(|s| !s.trim().is_empty())
        .ok_or_else(|| "needs a value".to_string())
}

/// A flag's value: bare means on.
pub(crate) fn flag(v: Option<&str>) -> Result<bool, String> {
    v.map_or(Ok(true), crate::units::parse_bool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_are_unique_and_not_also_unsupported() {
        let mut seen = std::collections::HashSet::new();
        for o in all() {
            for n in std::iter::once(o.name).chain(o.aliases.iter().copied()) {
                assert!(seen.insert(n), "{n} defined twice");
                assert!(!is_unsupported(n), "{n} is both supported and unsupported");
            }
        }
    }

    #[test]
    fn every_option_has_help() {
        for o in all() {
            assert!(!o.help.is_empty(), "{}", o.name);
        }
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("runtim"), Some("runtime"));
        assert_eq!(suggest("iodepht"), Some("iodepth"));
        assert_eq!(suggest("ramptime"), Some("ramp_time"));
        assert_eq!(suggest("group_reportin"), Some("group_reporting"));
        assert_eq!(suggest("BS"), Some("bs"));
        assert_eq!(suggest("frobnicate"), None);
    }

    #[test]
    fn distance() {
        assert_eq!(edit_distance("abc", "abc"), 0);
        assert_eq!(edit_distance("abc", "acb"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
