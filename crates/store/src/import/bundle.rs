//! storbench's own exchange file (`.sbr`): stored runs exactly as the store keeps them (the
//! whole result model: kind, rounds, per-second samples, environment, verdicts) with their
//! labels and tags, so `export` on one machine and `import` on another give back the same
//! runs. JSON, `format` first so the importer can tell it from fio's JSON by its opening.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};
use storbench_model::result::RunResult;

use super::ImportError;
use crate::StoredRun;

/// The `format` value; bumped on incompatible changes.
pub const FORMAT: &str = "storbench-runs/1";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Bundle {
    format: String,
    runs: Vec<BundledRun>,
}

/// One run with what was attached to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundledRun {
    /// The run's id in the database it was exported from (None in files written before
    /// exports named it): `import` names it when the run is held already.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    pub run: RunResult,
}

/// Writes stored runs as one bundle.
pub fn write(runs: &[StoredRun], out: &mut dyn Write) -> io::Result<()> {
    let runs: Vec<BundledRun> = runs
        .iter()
        .map(|s| BundledRun {
            id: Some(s.id),
            label: s.meta.label.clone(),
            tags: s.meta.tags.clone(),
            run: s.run.clone(),
        })
        .collect();
    write_bundled(&runs, out)
}

/// Writes runs with their labels and tags as one bundle.
pub fn write_bundled(runs: &[BundledRun], out: &mut dyn Write) -> io::Result<()> {
    #[derive(Serialize)]
    struct Out<'a> {
        format: &'a str,
        runs: &'a [BundledRun],
    }
    serde_json::to_writer(
        &mut *out,
        &Out {
            format: FORMAT,
            runs,
        },
    )?;
    writeln!(out)
}

/// Whether `text` (from its first `{`) opens a bundle: `{"format":"storbench-runs/`.
pub fn is_bundle(text: &str) -> bool {
    let head: String = text
        .trim_start()
        .chars()
        .take(64)
        .filter(|c| !c.is_whitespace())
        .collect();
    head.starts_with("{\"format\":\"storbench-runs/")
}

/// The runs of a bundle, or one error line naming the file.
pub fn parse(name: &str, text: &str) -> Result<Vec<BundledRun>, ImportError> {
    let bundle: Bundle = serde_json::from_str(text).map_err(|e| {
        let mut msg = e.to_string();
        msg.retain(|c| c != '\n');
        ImportError::new(
            name,
            Some(e.line()).filter(|&l| l > 0),
            format!("not a valid storbench export: {msg}"),
        )
    })?;
    if bundle.format != FORMAT {
        return Err(ImportError::new(
            name,
            None,
            format!(
                "a storbench export of format '{}', which this build (reading '{FORMAT}') does not know",
                bundle.format.chars().take(40).collect::<String>()
            ),
        ));
    }
    if bundle.runs.is_empty() {
        return Err(ImportError::new(name, None, "the export holds no run"));
    }
    if let Some(r) = bundle
        .runs
        .iter()
        .find(|r| r.run.schema > storbench_model::result::RESULT_SCHEMA)
    {
        return Err(ImportError::new(
            name,
            None,
            format!(
                "a run of result schema {} is newer than this build's ({}); update storbench",
                r.run.schema,
                storbench_model::result::RESULT_SCHEMA
            ),
        ));
    }
    Ok(bundle.runs)
}
