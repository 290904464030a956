//! docs/ARCHITECTURE.md's checklists (a new engine, protocol, output format, verdict) are
//! only useful while they are true: each name they tell a newcomer to add or look for is
//! checked here against the file they name, and every file path they give exists. A
//! renamed function or moved file then fails this test instead of misleading the next
//! person. docs/verdicts.md's table is held to the checks the rules produce.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// (name as the code spells it, the file the checklist sends a newcomer to). The name
/// must be in the document and in that file.
const NAMED: &[(&str, &str)] = &[
    // Adding an engine
    ("pub const NAME: &str", "crates/engines/build.rs"),
    ("CONSTRUCTORS", "crates/engines/build.rs"),
    ("SyncEngine", "crates/engines/src/psync.rs"),
    ("pub trait SysCall", "crates/engines/src/syncio.rs"),
    ("ENGINES", "crates/job/src/catalogue.rs"),
    ("const fn local(", "crates/job/src/catalogue.rs"),
    ("const fn metadata(", "crates/job/src/catalogue.rs"),
    ("UNSUPPORTED_ENGINES", "crates/job/src/options/refused.rs"),
    ("DEFS", "crates/job/src/options/engine.rs"),
    (
        "pub struct EngineOptions",
        "crates/job/src/engine_options.rs",
    ),
    ("fn every_catalogue_entry", "crates/engines/src/lib.rs"),
    // Adding a protocol
    ("pub struct Protocol", "crates/job/src/catalogue.rs"),
    ("pub struct TypedUrl", "crates/job/src/target.rs"),
    ("fn parse_url(", "crates/job/src/target.rs"),
    ("pub fn url_text(", "crates/job/src/target.rs"),
    (
        "fn each_protocol_has_its_typed_variant_and_never_shows_a_secret",
        "crates/job/src/target.rs",
    ),
    (
        "pub target: storbench_job::target::Target",
        "crates/core/src/engine.rs",
    ),
    ("pub fn checked_name", "crates/core/src/engine.rs"),
    ("pub struct MetaPath", "crates/core/src/metapath.rs"),
    ("pub root: Target", "crates/core/src/metapath.rs"),
    (
        "fn mkdir(&mut self, path: MetaPath",
        "crates/core/src/engine.rs",
    ),
    ("pub fn at<T>", "crates/bonnie/src/worker.rs"),
    ("pub struct RelPath", "crates/job/src/relpath.rs"),
    ("pub fn split_last", "crates/job/src/relpath.rs"),
    ("pub struct DirTable", "crates/engines/src/dirtable.rs"),
    ("pub fn check_names", "crates/core/src/plan.rs"),
    ("fn join_url_text", "crates/job/src/target.rs"),
    ("pub fn server(", "crates/job/src/target.rs"),
    ("pub fn server_path", "crates/job/src/target.rs"),
    ("pub fn rel_name", "crates/job/src/target.rs"),
    ("pub fn under", "crates/job/src/relpath.rs"),
    ("pub fn join_into", "crates/job/src/relpath.rs"),
    ("pub fn target_info", "crates/core/src/env.rs"),
    ("fn targets_of", "crates/run/src/inventory.rs"),
    ("fn server_addr", "crates/core/src/engine.rs"),
    ("fn client_addr", "crates/core/src/engine.rs"),
    ("STORBENCH_TEST_PORTS", "crates/testkit/src/ports.rs"),
    ("PACKAGES=", "test.sh"),
    ("pub fn prepare_targets", "crates/cli/src/running.rs"),
    ("pub fn prepare(", "crates/engines/src/smb.rs"),
    ("pub fn prepare(", "crates/engines/src/lib.rs"),
    ("pub trait Ask", "crates/core/src/ask.rs"),
    ("PREPARERS", "crates/engines/build.rs"),
    ("const PREFIXES", "crates/cli/tests/layering.rs"),
    ("const PROTOCOL_NAMES", "crates/cli/tests/layering.rs"),
    (
        "fn the_cli_dispatches_no_protocol_by_name",
        "crates/cli/tests/layering.rs",
    ),
    ("pub fn prepare(", "crates/engines/src/nfs.rs"),
    (
        "fn targets_are_parsed_where_they_are_read",
        "crates/cli/tests/layering.rs",
    ),
    (
        "fn the_readers_of_results_stand_on_the_model_alone",
        "crates/cli/tests/layering.rs",
    ),
    (
        "pub nfs_url: Option<NfsBase>",
        "crates/job/src/engine_options.rs",
    ),
    // Adding an output format
    ("pub struct Format", "crates/report/src/registry.rs"),
    ("default_for", "crates/report/src/registry.rs"),
    ("for_people", "crates/report/src/registry.rs"),
    ("pub enum OutputFormat", "crates/model/src/fio.rs"),
    ("OutputFormat as FioFormat", "crates/report/src/fio/mod.rs"),
    ("pub fn render_many", "crates/report/src/fio/mod.rs"),
    // Adding a verdict
    ("pub fn annotate", "crates/core/src/analysis.rs"),
    ("fn limit(", "crates/core/src/analysis.rs"),
    ("fn warn(", "crates/core/src/analysis.rs"),
    ("fn info(", "crates/core/src/analysis.rs"),
    ("\"limit.device\"", "crates/core/src/analysis.rs"),
    ("\"warn.error\"", "crates/core/src/analysis.rs"),
    ("fn judge(", "crates/core/src/analysis/verdicts.rs"),
    ("fn reason(", "crates/core/src/analysis/verdicts.rs"),
    ("\"warn.buffered-quick\"", "crates/cli/src/cmd/quick.rs"),
    ("verdicts: impl FnOnce", "crates/cli/src/session.rs"),
];

/// The name as the document shows it: the identifier, without the code around it.
fn shown(name: &str) -> &str {
    let name = name.trim_start_matches("pub ");
    let name = ["const fn ", "fn ", "struct ", "enum ", "const "]
        .iter()
        .find_map(|k| name.strip_prefix(k))
        .unwrap_or(name);
    name.split([' ', '(', ':', '=', '"'])
        .find(|s| !s.is_empty())
        .unwrap_or(name)
}

#[test]
fn every_name_a_checklist_gives_is_where_it_says() {
    let doc = read("docs/ARCHITECTURE.md");
    let mut wrong = Vec::new();
    for (name, file) in NAMED {
        if !doc.contains(shown(name)) {
            wrong.push(format!("{} is not in docs/ARCHITECTURE.md", shown(name)));
        }
        if !read(file).contains(name) {
            wrong.push(format!("{file} has no {name:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_file_the_architecture_names_exists() {
    let doc = read("docs/ARCHITECTURE.md");
    let missing: Vec<&str> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| t.starts_with("crates/") && !t.contains(['*', ' ']))
        // Placeholders a newcomer fills in.
        .filter(|t| !["NAME", "PROTO", "SERVER"].iter().any(|p| t.contains(p)))
        .filter(|t| !root().join(t).exists())
        .collect();
    assert!(missing.is_empty(), "named but missing: {missing:?}");
}

/// Each check the validity rules produce (`reason("cache", …)`) has its row in
/// docs/verdicts.md's table.
#[test]
fn every_verdict_check_is_in_the_docs() {
    let rules = read("crates/core/src/analysis/verdicts.rs");
    let doc = read("docs/verdicts.md");
    let mut checks: Vec<&str> = rules
        .split("reason(")
        .skip(1)
        .filter_map(|rest| rest.trim_start().strip_prefix('"')?.split('"').next())
        .collect();
    checks.sort_unstable();
    checks.dedup();
    assert!(checks.len() >= 5, "found only {checks:?}");
    for check in checks {
        assert!(
            doc.contains(&format!("| `{check}`")),
            "docs/verdicts.md has no row for the `{check}` check"
        );
    }
}
