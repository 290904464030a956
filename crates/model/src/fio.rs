//! What storbench shares with fio's outputs and inputs alike: its report formats, the fio
//! release it reproduces and the engine a job gets when it names none. The job crate reads
//! them from fio's command lines, the reporters and the importers write and read them.

/// The engine a job gets when it names none, as fio's on Linux; an imported fio result
/// without `ioengine` ran with it too.
pub const DEFAULT_ENGINE: &str = "psync";

/// The fio release whose command lines, job files and outputs storbench reproduces.
pub const FIO_RELEASE: &str = "fio-3.33";

/// What `fio --version` prints and fio's outputs name as their program (the JSON's
/// `fio version`, the terse line's second field, the line before "Starting N threads"):
/// fio's own form first, since callers match it (`fio --version | grep fio-3`, fio-plot's
/// `fio-3.` check, version comparisons that strip `fio-`), then which program ran.
pub fn fio_style_version(storbench_version: &str) -> String {
    format!("{FIO_RELEASE} (storbench {storbench_version})")
}

/// fio's report formats: the one definition, read from `--output-format` by storbench-job
/// and written by storbench-report (which names it `FioFormat` and lists each in its
/// registry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Normal,
    Json,
    JsonPlus,
    Terse,
}

impl OutputFormat {
    /// Every format, in the order fio lists them.
    pub const ALL: [OutputFormat; 4] = [
        OutputFormat::Normal,
        OutputFormat::Json,
        OutputFormat::JsonPlus,
        OutputFormat::Terse,
    ];

    /// fio's name for the format (`--output-format=NAME`).
    pub const fn name(self) -> &'static str {
        match self {
            OutputFormat::Normal => "normal",
            OutputFormat::Json => "json",
            OutputFormat::JsonPlus => "json+",
            OutputFormat::Terse => "terse",
        }
    }

    /// Parses fio's names; `minimal` is fio's other name for terse.
    pub fn parse(name: &str) -> Option<OutputFormat> {
        if name == "minimal" {
            return Some(OutputFormat::Terse);
        }
        OutputFormat::ALL.into_iter().find(|f| f.name() == name)
    }
}
