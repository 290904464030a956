//! Importers: other tools' output turned into the result model, so users' existing results
//! join the history. A file is read whole and either yields all its runs or one error naming
//! the file and line; the caller saves the runs of all files in one transaction.

mod bonnie_csv;
pub mod bundle;
mod fio_json;

use std::path::Path;

use storbench_model::result::{Note, NoteLevel, RESULT_SCHEMA, RunMode, RunResult};

pub use bonnie_csv::parse_bonnie_csv;
pub use fio_json::parse_fio_json;

/// Why a file could not be imported: `FILE[:LINE]: message`.
#[derive(Debug, thiserror::Error)]
#[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ImportError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

impl ImportError {
    pub(crate) fn new(file: &str, line: Option<usize>, message: impl Into<String>) -> Self {
        ImportError {
            file: file.to_string(),
            line,
            message: message.into(),
        }
    }
}

/// The largest file imported. fio's json+ of a large run is a few MiB; a device, FIFO or
/// huge binary is refused before it is read.
pub const MAX_IMPORT: u64 = 64 << 20;

/// Reads one file of fio JSON/json+ output or bonnie++ CSV lines (told apart by content).
/// Only regular files of at most [`MAX_IMPORT`] bytes are read.
pub fn import_file(path: &Path) -> Result<Vec<RunResult>, ImportError> {
    Ok(import_file_with_meta(path)?
        .into_iter()
        .map(|b| b.run)
        .collect())
}

/// As [`import_file`], keeping the labels and tags a storbench export carries (other
/// tools' files carry none).
pub fn import_file_with_meta(path: &Path) -> Result<Vec<bundle::BundledRun>, ImportError> {
    let name = path.display().to_string();
    let bytes = read_bounded(path).map_err(|m| ImportError::new(&name, None, m))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| ImportError::new(&name, None, "the file is not UTF-8 text"))?;
    let mtime_ms = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64);
    import_text_with_meta(&name, &text, mtime_ms)
}

fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let too_big = || {
        format!(
            "larger than {} MiB, the limit for imports",
            MAX_IMPORT >> 20
        )
    };
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err(
            "not a regular file (only files of fio or bonnie++ output are imported)".into(),
        );
    }
    if meta.len() > MAX_IMPORT {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_IMPORT + 1).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_IMPORT {
        return Err(too_big());
    }
    Ok(bytes)
}

/// Parses `text` named `name`; `mtime_ms` dates runs whose format carries no time (bonnie++).
pub fn import_text(name: &str, text: &str, mtime_ms: u64) -> Result<Vec<RunResult>, ImportError> {
    Ok(import_text_with_meta(name, text, mtime_ms)?
        .into_iter()
        .map(|b| b.run)
        .collect())
}

/// As [`import_text`], with the labels and tags a storbench export carries.
pub fn import_text_with_meta(
    name: &str,
    text: &str,
    mtime_ms: u64,
) -> Result<Vec<bundle::BundledRun>, ImportError> {
    if json_start(text).is_some_and(|at| bundle::is_bundle(&text[at..])) {
        return bundle::parse(name, text);
    }
    let bare = |runs: Vec<RunResult>| {
        runs.into_iter()
            .map(|run| bundle::BundledRun {
                id: None,
                label: None,
                tags: Vec::new(),
                run,
            })
            .collect()
    };
    import_other(name, text, mtime_ms).map(bare)
}

fn import_other(name: &str, text: &str, mtime_ms: u64) -> Result<Vec<RunResult>, ImportError> {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    match first {
        None => Err(ImportError::new(name, None, "the file is empty")),
        Some(_) if json_start(text).is_some() => parse_fio_json(name, text),
        Some(line) if fio_terse(line) => {
            Err(ImportError::new(name, Some(1), FIO_TEXT_HINT).with_kind("fio's terse output"))
        }
        Some(_) if fio_normal(text) => {
            Err(ImportError::new(name, None, FIO_TEXT_HINT).with_kind("fio's normal (text) output"))
        }
        Some(_) => parse_bonnie_csv(name, text, mtime_ms),
    }
}

/// What to do instead when a file holds fio output other than JSON.
const FIO_TEXT_HINT: &str = "it cannot be imported (it lacks the histograms and options); rerun fio with \
     --output-format=json or json+";

impl ImportError {
    /// Prefixes the message with what the file turned out to be.
    fn with_kind(mut self, kind: &str) -> Self {
        self.message = format!("this is {kind}: {}", self.message);
        self
    }
}

/// fio's terse lines (`--output-format=terse`, `--minimal`) are `;`-separated with a small
/// version number first: without this they were reported as a bonnie++ line of 1 field.
fn fio_terse(line: &str) -> bool {
    let mut fields = line.split(';');
    let version_ok = fields
        .next()
        .is_some_and(|v| matches!(v.trim(), "2" | "3" | "4" | "5"));
    version_ok && line.matches(';').count() >= 100
}

/// fio's normal output names each job's group and ends with its run status.
fn fio_normal(text: &str) -> bool {
    text.lines()
        .any(|l| l.contains("(groupid=") || l.starts_with("Run status group"))
}

/// Byte offset of the first line that opens a JSON object (fio may print text before it).
pub(crate) fn json_start(text: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with('{') {
            return Some(offset + (line.len() - line.trim_start().len()));
        }
        offset += line.len();
    }
    None
}

/// A result with nothing measured yet, dated `unix_ms`.
pub(crate) fn empty_run(mode: RunMode, tool_version: String, unix_ms: u64) -> RunResult {
    RunResult {
        schema: RESULT_SCHEMA,
        mode,
        tool_version,
        started_unix_ms: unix_ms,
        finished_unix_ms: unix_ms,
        command_line: Vec::new(),
        job_files: Vec::new(),
        global_options: Vec::new(),
        groups: Vec::new(),
        disks: Vec::new(),
        nics: Vec::new(),
        system_cpu: None,
        notes: Vec::new(),
        environment: None,
        bonnie: None,
        repeats: None,
        interrupted: false,
        verdicts: Vec::new(),
        hosts: None,
        server_stats: None,
        diagnosis: None,
    }
}

pub(crate) fn info_note(code: &str, message: String) -> Note {
    Note {
        level: NoteLevel::Info,
        code: code.to_string(),
        message,
    }
}
