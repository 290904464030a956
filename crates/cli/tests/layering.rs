//! One place per concept, checked: protocol URL prefixes and engine names are spelled only
//! in the engine catalogue (crates/job/src/catalogue.rs), in each engine's own file and in
//! each protocol's client crate. Everything else asks a `Target` or the catalogue. Product
//! code only: comments, `#[cfg(test)]` modules, tests and docs may name anything.

use std::path::{Path, PathBuf};

/// The catalogue, the option table's engine options (which the catalogue names), and fio's
/// default engine in the model (the catalogue's default, which importers of fio results
/// need without the input crate).
const CATALOGUE: &[&str] = &[
    "crates/job/src/catalogue.rs",
    "crates/job/src/options/engine.rs",
    "crates/model/src/fio.rs",
];

/// Engine names that are also ordinary fio words elsewhere (`sync=`, the `sync` latency
/// block, `verify=null`, JSON's `null`): not checked.
const COMMON_WORDS: &[&str] = &["sync", "null"];

/// URL prefixes, with the files (or folders, ending in `/`) allowed to spell them. `smb`
/// and `nbd` are reserved for their protocols' crates and engines.
const PREFIXES: &[(&str, &[&str])] = &[
    (
        "nfs://",
        &[
            "crates/nfs/",
            "crates/engines/src/nfs.rs",
            "crates/engines/src/nfs/",
        ],
    ),
    (
        "iscsi://",
        &[
            "crates/iscsi/",
            "crates/engines/src/iscsi.rs",
            "crates/cli/src/cmd/iscsi.rs",
        ],
    ),
    (
        "smb://",
        &[
            "crates/smb/",
            "crates/engines/src/smb.rs",
            "crates/cli/src/cmd/smb.rs",
            "crates/engines/src/smb/",
        ],
    ),
    (
        "nbd://",
        &[
            "crates/nbd/",
            "crates/engines/src/nbd.rs",
            "crates/engines/src/nbd/",
        ],
    ),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `crates/*/src`, as a path relative to the workspace root, except
/// test-only crates and test files.
fn product_files() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let root = root();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        let src = krate.path().join("src");
        if src.is_dir() && krate.file_name() != "testkit" {
            walk(&src, &mut files);
        }
    }
    let mut rel: Vec<String> = files
        .iter()
        .map(|p| {
            p.strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|p| !p.ends_with("/tests.rs") && !p.contains("/tests/"))
        .collect();
    rel.sort();
    rel
}

/// The file's code lines (number, text): no comments, nothing from `#[cfg(test)]` on.
fn code_lines(path: &str) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    text.lines()
        .enumerate()
        .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect()
}

fn allowed(path: &str, places: &[&str]) -> bool {
    CATALOGUE.contains(&path)
        || places
            .iter()
            .any(|p| path == *p || (p.ends_with('/') && path.starts_with(p)))
}

/// The engine's own files: `crates/engines/src/MODULE.rs` (and its folder), where the file
/// declares `pub const NAME: &str = "name";`.
fn engine_files() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for f in product_files() {
        let Some(module) = f
            .strip_prefix("crates/engines/src/")
            .and_then(|m| m.strip_suffix(".rs"))
        else {
            continue;
        };
        for (_, line) in code_lines(&f) {
            if let Some(rest) = line.strip_prefix("pub const NAME: &str = \"") {
                let name = rest.trim_end_matches("\";").to_string();
                out.push((name, module.to_string()));
            }
        }
    }
    out
}

#[test]
fn url_prefixes_live_with_their_protocol() {
    let mut found = Vec::new();
    for f in product_files() {
        for (n, line) in code_lines(&f) {
            for (prefix, places) in PREFIXES {
                if line.contains(prefix) && !allowed(&f, places) {
                    found.push(format!("{f}:{n}: {prefix}"));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "URL prefixes outside their protocol's files:\n{}",
        found.join("\n")
    );
}

#[test]
fn engine_names_live_in_the_catalogue_and_their_engine() {
    let engines = engine_files();
    assert!(
        engines.iter().any(|(n, m)| n == "libiscsi" && m == "iscsi"),
        "{engines:?}"
    );
    let mut found = Vec::new();
    for f in product_files() {
        for (n, line) in code_lines(&f) {
            for e in storbench_job::catalogue::ENGINES {
                let module = engines.iter().find(|(n, _)| n == e.name).map(|(_, m)| m);
                let own = module.map(|m| {
                    [
                        format!("crates/engines/src/{m}.rs"),
                        format!("crates/engines/src/{m}/"),
                    ]
                });
                // A protocol crate named like its engine (nfs, nbd, smb) spells its own
                // URL scheme, which is the same word.
                let protocol_crate = format!("crates/{}/", e.name);
                let places: Vec<&str> = own
                    .iter()
                    .flatten()
                    .map(String::as_str)
                    .chain(std::iter::once(protocol_crate.as_str()))
                    .collect();
                for name in std::iter::once(&e.name).chain(e.aliases) {
                    if COMMON_WORDS.contains(name) {
                        continue;
                    }
                    if line.contains(&format!("\"{name}\"")) && !allowed(&f, &places) {
                        found.push(format!("{f}:{n}: \"{name}\""));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "engine names outside the catalogue and their engine:\n{}",
        found.join("\n")
    );
}

/// Every protocol client resolves host names through `storbench-resolve` (the order, the
/// search rules and the errors the README documents), never through glibc's
/// `getaddrinfo` behind std's `ToSocketAddrs`.
#[test]
fn host_names_are_resolved_by_the_one_resolver() {
    let mut found = Vec::new();
    for f in product_files() {
        if f.starts_with("crates/resolve/") {
            continue;
        }
        for (n, line) in code_lines(&f) {
            if line.contains("to_socket_addrs") || line.contains("ToSocketAddrs") {
                found.push(format!("{f}:{n}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "host names resolved outside storbench-resolve:\n{}",
        found.join("\n")
    );
}

/// Our crates `krate` (a folder under `crates/`) depends on to build its library, directly
/// or through another of ours: the `storbench-*` entries of the `[dependencies]` sections
/// of the Cargo.toml files (dev- and build-dependencies aside), as `cargo tree -e normal`
/// follows them.
fn normal_closure(krate: &str) -> Vec<String> {
    fn direct(krate: &str) -> Vec<String> {
        let toml =
            std::fs::read_to_string(root().join("crates").join(krate).join("Cargo.toml")).unwrap();
        let mut normal = false;
        let mut out = Vec::new();
        for line in toml.lines().map(str::trim) {
            if line.starts_with('[') {
                normal = line.ends_with("dependencies]")
                    && !line.contains("dev-dependencies")
                    && !line.contains("build-dependencies");
            } else if normal && let Some(rest) = line.strip_prefix("storbench-") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                out.push(name);
            }
        }
        out
    }
    let mut seen: Vec<String> = Vec::new();
    let mut todo = direct(krate);
    while let Some(k) = todo.pop() {
        if !seen.contains(&k) {
            todo.extend(direct(&k));
            seen.push(k);
        }
    }
    seen.sort();
    seen
}

/// Everything after the run reads the result model only: the model, the store and the
/// reporters compile neither the input crate (storbench-job) nor a protocol client, nor
/// the runner.
#[test]
fn the_readers_of_results_stand_on_the_model_alone() {
    const BELOW_THE_FLOOR: &[&str] = &[
        "job", "core", "run", "engines", "nfs", "iscsi", "smb", "nbd", "snmp",
    ];
    for krate in ["model", "store", "report"] {
        let deps = normal_closure(krate);
        let wrong: Vec<&String> = deps
            .iter()
            .filter(|d| BELOW_THE_FLOOR.contains(&d.as_str()))
            .collect();
        assert!(
            wrong.is_empty(),
            "storbench-{krate} depends on {wrong:?} (all of ours it builds on: {deps:?})"
        );
    }
    assert!(normal_closure("model").is_empty());
}

/// The closure above follows Cargo.toml as cargo does: the input crate reaches every
/// protocol client.
#[test]
fn the_dependency_closure_follows_cargo() {
    let job = normal_closure("job");
    for k in ["model", "nfs", "iscsi", "smb", "nbd", "resolve"] {
        assert!(job.iter().any(|d| d == k), "{k} missing from {job:?}");
    }
}

/// Where targets are read: the job crate's readers (fio's options and job files, quick's
/// and bonnie's targets through `storbench_job::target`), each protocol's client crate
/// (its URL parser), the subcommands whose argument is a target, and bonnie's `-d`.
const TARGET_READERS: &[&str] = &[
    "crates/job/src/",
    "crates/nfs/",
    "crates/iscsi/",
    "crates/smb/",
    "crates/nbd/",
    "crates/snmp/",
    "crates/resolve/",
    "crates/cli/src/cmd/quick.rs",
    "crates/cli/src/cmd/iscsi.rs",
    "crates/cli/src/cmd/smb.rs",
    "crates/cli/src/cmd/clean.rs",
    "crates/cli/src/cmd/diagnose.rs",
    "crates/bonnie/src/target.rs",
];

/// Files past the readers that still parse or classify target text: each leaves this list
/// when it reads typed targets. The goal is at most two.
const STILL_PARSING_TARGETS: &[&str] = &[];

/// Whether a code line of `file` parses or classifies target text, or reads the nfs
/// engine's `nfs_url` option (the nfs engine itself reads its typed field).
fn parses_target_text(file: &str, line: &str) -> bool {
    const CALLS: &[&str] = &[
        "Target::parse(",
        "Target::classify(",
        "NfsUrl::parse",
        "NfsUrl::is_nfs",
        "SmbUrl::parse",
        "NbdUrl::parse",
        "iscsi::Url::parse",
        "\"nfs_url\"",
    ];
    CALLS.iter().any(|c| line.contains(c))
        || (line.contains(".nfs_url") && file != "crates/engines/src/nfs.rs")
        || PREFIXES
            .iter()
            .any(|(p, _)| line.contains(&format!("starts_with(\"{p}\")")))
}

/// A target is parsed once, where it is read, and travels typed: no file past the readers
/// parses or classifies its text again, besides those not yet converted (which must leave
/// the list once they no longer do).
#[test]
fn targets_are_parsed_where_they_are_read() {
    let mut found: Vec<String> = Vec::new();
    let mut parsing: Vec<String> = Vec::new();
    for f in product_files() {
        let reader = TARGET_READERS
            .iter()
            .any(|r| f == *r || (r.ends_with('/') && f.starts_with(r)));
        if reader {
            continue;
        }
        let lines: Vec<usize> = code_lines(&f)
            .into_iter()
            .filter(|(_, l)| parses_target_text(&f, l))
            .map(|(n, _)| n)
            .collect();
        if lines.is_empty() {
            continue;
        }
        parsing.push(f.clone());
        if !STILL_PARSING_TARGETS.contains(&f.as_str()) {
            found.push(format!("{f}:{lines:?}"));
        }
    }
    assert!(
        found.is_empty(),
        "target text parsed past the readers (carry the typed Target instead):\n{}",
        found.join("\n")
    );
    let done: Vec<&&str> = STILL_PARSING_TARGETS
        .iter()
        .filter(|f| !parsing.iter().any(|p| p == **f))
        .collect();
    assert!(
        done.is_empty(),
        "{done:?} no longer parse targets: take them out of STILL_PARSING_TARGETS"
    );
}

/// The protocols a target may name: its `Target` variant, its client crate and its
/// catalogue constant.
const PROTOCOL_NAMES: &[(&str, &str, &str)] = &[
    ("Target::Nfs", "storbench_nfs::", "catalogue::NFS"),
    ("Target::Iscsi", "storbench_iscsi::", "catalogue::ISCSI"),
    ("Target::Smb", "storbench_smb::", "catalogue::SMB"),
    ("Target::Nbd", "storbench_nbd::", "catalogue::NBD"),
];

/// A protocol's own subcommand (`storbench iscsi`, `storbench smb`) speaks to its server
/// and may name it.
fn own_subcommand(file: &str, client: &str) -> bool {
    let krate = client
        .trim_start_matches("storbench_")
        .trim_end_matches("::");
    file == format!("crates/cli/src/cmd/{krate}.rs")
}

/// Whether a CLI line hands an engine constructor down instead of letting the runner
/// (storbench-run) and bonnie build engines through the engines' table.
fn hands_down_an_engine(line: &str) -> bool {
    line.contains("EngineFactory")
        || line.contains("bonnie::Factory")
        || line.contains("engine_for")
        || line
            .match_indices("storbench_engines::create")
            .any(|(i, m)| !line[i + m.len()..].starts_with('('))
}

/// What a protocol needs before a run is its engine's `prepare`, run by
/// `running::prepare_target` for any target, and the engines are built by the runner: the
/// CLI names no protocol (its target variant, client crate or catalogue entry) but in that
/// protocol's own subcommand, and hands no engine constructor down.
#[test]
fn the_cli_dispatches_no_protocol_by_name() {
    let cli: Vec<String> = product_files()
        .into_iter()
        .filter(|f| f.starts_with("crates/cli/src/"))
        .collect();
    let mut found = Vec::new();
    let mut seen_in_own = Vec::new();
    for f in &cli {
        for (n, line) in code_lines(f) {
            for (variant, client, constant) in PROTOCOL_NAMES {
                let named = [variant, client, constant]
                    .iter()
                    .any(|w| line.contains(**w));
                if !named {
                    continue;
                }
                if own_subcommand(f, client) {
                    seen_in_own.push(*variant);
                } else {
                    found.push(format!("{f}:{n}: {}", line.trim()));
                }
            }
            if hands_down_an_engine(&line) {
                found.push(format!("{f}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "protocols dispatched by name, or an engine constructor handed down, in the CLI \
         (put a protocol's checks in its engine file's `prepare`):\n{}",
        found.join("\n")
    );
    // The matcher finds what it looks for: the protocol subcommands name their own.
    for variant in ["Target::Iscsi", "Target::Smb"] {
        assert!(seen_in_own.contains(&variant), "{variant}: {seen_in_own:?}");
    }
    assert!(hands_down_an_engine(
        "run(req, &storbench_engines::create, obs)"
    ));
    assert!(!hands_down_an_engine(
        "let e = storbench_engines::create(&job)?;"
    ));
}
