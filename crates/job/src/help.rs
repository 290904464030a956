//! Text for `--cmdhelp`, `--enghelp` and `--showcmd`, all read from the option table.

use std::fmt::Write;

use crate::catalogue::{self, ENGINES};
use crate::error::{JobError, Origin};
use crate::flags::{GLOBAL_FLAGS, GlobalFlag};
use crate::host::{HostFacts, expand_env, expand_keywords};
use crate::low::{LowFile, LowSection};
use crate::options::{self, Category, Kind, OptDef};

/// `--cmdhelp` (all options, grouped) or `--cmdhelp=NAME` (one option in detail).
pub fn cmdhelp(option: Option<&str>) -> Result<String, JobError> {
    match option {
        None | Some("all") => Ok(list_all()),
        Some(name) => describe(name),
    }
}

fn list_all() -> String {
    let mut out = String::new();
    for cat in Category::ALL {
        let _ = writeln!(out, "{}:", cat.title());
        for o in options::all().filter(|o| o.category == cat) {
            let _ = writeln!(out, "  {:<28}: {}", o.name, o.help);
        }
        out.push('\n');
    }
    out.push_str("Global flags:\n");
    for f in GLOBAL_FLAGS.iter().filter(|f| f.supported) {
        let _ = writeln!(out, "  --{:<26}: {}", f.name, f.help);
    }
    out.push_str("\nfio options storbench does not support are listed in docs/fio-compat.md.\n");
    out
}

fn describe(name: &str) -> Result<String, JobError> {
    let name = name.trim_start_matches('-');
    if let Some(o) = options::find(name) {
        return Ok(describe_option(o));
    }
    if let Some(f) = crate::flags::find_flag(name) {
        return describe_flag(f);
    }
    let at = Origin::arg(&format!("--cmdhelp={name}"));
    if options::is_unsupported(name) {
        return Err(JobError::Unsupported {
            at,
            name: name.to_string(),
        });
    }
    Err(JobError::Unknown {
        at,
        name: name.to_string(),
        suggestion: options::suggest(name).map(str::to_string),
    })
}

fn describe_option(o: &OptDef) -> String {
    let mut out = String::new();
    let line = |out: &mut String, label: &str, text: &str| {
        let _ = writeln!(out, "{label:>20}: {text}");
    };
    line(&mut out, o.name, o.help);
    if !o.aliases.is_empty() {
        line(&mut out, "alias", &o.aliases.join(", "));
    }
    line(&mut out, "type", o.kind.describe());
    line(
        &mut out,
        "default",
        if o.default.is_empty() {
            "no default"
        } else {
            o.default
        },
    );
    if !o.engines().is_empty() {
        line(&mut out, "engines", &o.engines().join(", "));
    }
    for (i, (value, help)) in choices(o.kind).into_iter().enumerate() {
        let label = if i == 0 { "valid values" } else { "" };
        line(&mut out, label, &format!("{value:<12} {help}"));
    }
    if !o.note.is_empty() {
        line(&mut out, "storbench", o.note);
    }
    out
}

fn choices(kind: Kind) -> Vec<(&'static str, &'static str)> {
    match kind {
        Kind::Choice(list) => list.to_vec(),
        Kind::Engine => ENGINES.iter().map(|e| (e.name, e.about)).collect(),
        _ => Vec::new(),
    }
}

fn describe_flag(f: &GlobalFlag) -> Result<String, JobError> {
    if !f.supported {
        return Err(JobError::Usage(format!(
            "--{}: fio's global flag is not supported by storbench (see docs/fio-compat.md)",
            f.name
        )));
    }
    Ok(format!(
        "{:>20}: {}\n{:>20}: global flag\n",
        f.name, f.help, "type"
    ))
}

/// `--enghelp` (the engines, one a line) or `--enghelp=ENGINE` (that engine's own options,
/// as fio prints them), both from the catalogue.
pub fn enghelp(engine: Option<&str>) -> Result<String, JobError> {
    let mut out = String::new();
    let Some(name) = engine else {
        out.push_str("Available IO engines:\n");
        for e in ENGINES {
            let _ = writeln!(out, "\t{:<12} {}", e.name, e.about);
        }
        return Ok(out);
    };
    let e = catalogue::find(name).ok_or_else(|| {
        JobError::Usage(format!(
            "--enghelp={name}: storbench has no engine named '{name}'"
        ))
    })?;
    let _ = writeln!(out, "{}: {}", e.name, e.about);
    if e.options.is_empty() {
        let _ = writeln!(out, "IO engine {} has no options", e.name);
    }
    for o in e.options.iter().filter_map(|o| options::find(o)) {
        let _ = writeln!(out, "{:<24}: {}", o.name, o.help);
    }
    Ok(out)
}

/// The command line equivalent to the job files (or to the command line itself), with
/// `${ENV}` and keywords expanded, as fio's `--showcmd` prints it.
pub(crate) fn showcmd(
    cli: &[LowSection],
    files: &[LowFile],
    host: &HostFacts,
    env: &dyn Fn(&str) -> Option<String>,
) -> String {
    let mut out = String::new();
    let lines: Vec<&[LowSection]> = if files.is_empty() {
        vec![cli]
    } else {
        files.iter().map(|f| f.sections.as_slice()).collect()
    };
    for sections in lines {
        out.push_str("fio");
        for sec in sections {
            if !sec.is_global() && !matches!(sec.origin, Origin::Arg { .. }) {
                let _ = write!(out, " --name={}", quote(&sec.name));
            }
            let mut opts: Vec<_> = sec.opts.iter().collect();
            if matches!(sec.origin, Origin::File { .. }) {
                opts.sort_by_key(|o| -options::find(&o.key).map_or(0, |d| d.priority()));
            }
            for o in opts {
                let key = options::find(&o.key).map_or(o.key.as_str(), |d| d.name);
                match &o.value {
                    None => {
                        let _ = write!(out, " --{key}");
                    }
                    Some(v) => {
                        let v = if o.from_file {
                            expand_env(v, env)
                        } else {
                            v.clone()
                        };
                        let _ = write!(out, " --{key}={}", quote(&expand_keywords(&v, host).0));
                    }
                }
            }
        }
        out.push('\n');
    }
    out
}

/// Single-quotes a value the shell would split or expand.
fn quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-/:,+%=@^".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_option_in_detail() {
        let t = cmdhelp(Some("bs")).unwrap();
        assert!(t.contains("alias: blocksize"), "{t}");
        assert!(t.contains("default: 4096"), "{t}");
        assert!(t.contains("storbench: "), "{t}");
        let t = cmdhelp(Some("rw")).unwrap();
        assert!(t.contains("valid values: read"), "{t}");
        let t = cmdhelp(Some("ioengine")).unwrap();
        assert!(t.contains("io_uring"), "{t}");
        assert!(
            cmdhelp(Some("blocksize"))
                .unwrap()
                .starts_with("                  bs:")
        );
    }

    #[test]
    fn unknown_and_unsupported() {
        assert_eq!(
            cmdhelp(Some("lockfile")).unwrap_err().to_string(),
            "--cmdhelp=lockfile: fio option 'lockfile' is not supported by storbench (see docs/fio-compat.md)"
        );
        assert!(
            cmdhelp(Some("runtme"))
                .unwrap_err()
                .to_string()
                .contains("did you mean 'runtime'")
        );
    }

    #[test]
    fn list_has_every_option() {
        let t = cmdhelp(None).unwrap();
        for o in options::all() {
            assert!(t.contains(&format!("  {:<28}:", o.name)), "{}", o.name);
        }
    }

    #[test]
    fn engines() {
        assert!(enghelp(None).unwrap().contains("io_uring"));
        let t = enghelp(Some("io_uring")).unwrap();
        assert!(
            t.contains("\nsqthread_poll           : A kernel thread"),
            "{t}"
        );
        assert!(!t.contains("nfs_url"), "{t}");
        assert!(enghelp(Some("iscsi")).unwrap().starts_with("libiscsi: "));
        assert!(
            enghelp(Some("null"))
                .unwrap()
                .ends_with("\nIO engine null has no options\n")
        );
        assert!(enghelp(Some("sg")).is_err());
    }
}
