//! fio's command line, read the way fio's getopt reads it: long options with one or two
//! dashes, `--opt=value` or `--opt value` (flags only take `--flag` or `--flag=value`), job
//! options before the first `--name` are globals, each `--name` starts a job, `--name=global`
//! starts a global section, and every other argument (anywhere, or after `--`) is a job file.

use crate::error::{JobError, Origin};
use crate::flags::{self, Arity};
use crate::invocation::FioInvocation;
use crate::low::{LowSection, RawOpt};
use crate::options;
use crate::resolve::lookup;

/// The command line split into global flags (already applied to the invocation),
/// sections of job options, and job file paths.
pub(crate) struct Parsed {
    pub invocation: FioInvocation,
    pub sections: Vec<LowSection>,
    pub job_files: Vec<String>,
}

/// Reads `args` (without the program and subcommand names).
pub(crate) fn parse(args: &[String]) -> Result<Parsed, JobError> {
    let mut out = Parsed {
        invocation: FioInvocation::default(),
        sections: vec![LowSection {
            name: "global".into(),
            origin: Origin::arg("(command line)"),
            opts: Vec::new(),
        }],
        job_files: Vec::new(),
    };
    let mut it = args.iter();
    let mut only_files = false;
    while let Some(arg) = it.next() {
        if only_files || arg == "-" || !arg.starts_with('-') {
            out.job_files.push(arg.clone());
        } else if arg == "--" {
            only_files = true;
        } else {
            option(arg, &mut it, &mut out)?;
        }
    }
    Ok(out)
}

fn option(
    arg: &str,
    rest: &mut std::slice::Iter<'_, String>,
    out: &mut Parsed,
) -> Result<(), JobError> {
    let body = arg.strip_prefix("--").unwrap_or(&arg[1..]);
    let (name, inline) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (body, None),
    };
    if name == "h" {
        out.invocation.help = true;
        return Ok(());
    }
    if let Some(flag) = flags::find_flag(name) {
        let value = match flag.arity {
            Arity::None if inline.is_some() => {
                return Err(JobError::Usage(format!("--{name} takes no value")));
            }
            Arity::None => None,
            Arity::Optional => inline.map(str::to_string),
            Arity::Required => Some(required(name, inline, rest)?),
        };
        return flags::apply_flag(&mut out.invocation, flag, value.as_deref());
    }
    job_option(name, inline, rest, out)
}

fn required(
    name: &str,
    inline: Option<&str>,
    rest: &mut std::slice::Iter<'_, String>,
) -> Result<String, JobError> {
    match inline {
        Some(v) if !v.is_empty() => Ok(v.to_string()),
        Some(_) => Err(JobError::Usage(format!("--{name} needs a value"))),
        None => rest
            .next()
            .cloned()
            .ok_or_else(|| JobError::Usage(format!("--{name} needs a value"))),
    }
}

fn job_option(
    name: &str,
    inline: Option<&str>,
    rest: &mut std::slice::Iter<'_, String>,
    out: &mut Parsed,
) -> Result<(), JobError> {
    let origin = Origin::arg(&format!("--{name}"));
    let mut raw = RawOpt {
        key: name.to_string(),
        value: None,
        origin: origin.clone(),
        from_file: false,
    };
    let def = lookup(&raw).map_err(|e| with_flag_suggestion(e, name))?;
    raw.value = if def.kind.is_flag() {
        inline.map(str::to_string)
    } else {
        Some(required(name, inline, rest)?)
    };
    if def.name == "name" {
        out.sections.push(LowSection {
            name: raw.value.clone().unwrap_or_default(),
            origin,
            opts: vec![raw],
        });
    } else if let Some(section) = out.sections.last_mut() {
        section.opts.push(raw);
    }
    Ok(())
}

/// On the command line a typo may also be of a global flag (`--output-fromat`).
fn with_flag_suggestion(e: JobError, name: &str) -> JobError {
    match e {
        JobError::Unknown {
            at,
            name: n,
            suggestion: None,
        } => JobError::Unknown {
            at,
            name: n,
            suggestion: options::closest(name, flags::GLOBAL_FLAGS.iter().map(|f| f.name))
                .map(str::to_string),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invocation::OutputFormat;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn globals_jobs_and_files() {
        let p = parse(&args(
            "--bs=128k --direct=1 --group_reporting a.fio --name=j1 --rw=randrw --name j2 --iodepth 4 -size=1m b.fio -- --c.fio",
        ))
        .unwrap();
        assert_eq!(p.sections.len(), 3);
        let g: Vec<_> = p.sections[0]
            .opts
            .iter()
            .map(|o| (o.key.as_str(), o.value.as_deref()))
            .collect();
        assert_eq!(
            g,
            [
                ("bs", Some("128k")),
                ("direct", Some("1")),
                ("group_reporting", None)
            ]
        );
        assert_eq!(p.sections[1].name, "j1");
        assert_eq!(p.sections[2].name, "j2");
        let j2: Vec<_> = p.sections[2]
            .opts
            .iter()
            .map(|o| (o.key.as_str(), o.value.as_deref()))
            .collect();
        assert_eq!(
            j2,
            [
                ("name", Some("j2")),
                ("iodepth", Some("4")),
                ("size", Some("1m"))
            ]
        );
        assert_eq!(p.job_files, ["a.fio", "b.fio", "--c.fio"]);
    }

    #[test]
    fn global_flags() {
        let p = parse(&args(
            "--output-format=json,normal --output out.txt --eta=never --parse-only --section=x --section y --cmdhelp=bs",
        ))
        .unwrap();
        let inv = p.invocation;
        assert_eq!(
            inv.output_formats,
            [OutputFormat::Json, OutputFormat::Normal]
        );
        assert_eq!(inv.output.as_deref(), Some(std::path::Path::new("out.txt")));
        assert!(inv.parse_only);
        assert_eq!(inv.sections, ["x", "y"]);
        assert_eq!(inv.cmdhelp, Some(Some("bs".to_string())));
    }

    #[test]
    fn errors() {
        let e = |s: &str| parse(&args(s)).err().unwrap().to_string();
        assert_eq!(
            e("--runtim=5"),
            "--runtim: unknown option 'runtim'; did you mean 'runtime'?"
        );
        assert_eq!(
            e("--output-fromat=json"),
            "--output-fromat: unknown option 'output-fromat'; did you mean 'output-format'?"
        );
        assert_eq!(
            e("--lockfile=1"),
            "--lockfile: fio option 'lockfile' is not supported by storbench (see docs/fio-compat.md)"
        );
        assert!(e("--client=host").contains("not supported by storbench"));
        assert_eq!(e("--bs"), "--bs needs a value");
        assert_eq!(e("--parse-only=1"), "--parse-only takes no value");
        assert!(e("--terse-version=2").contains("version 3 only"));
        assert!(e("--output-format=xml").contains("'xml' is not one of"));
        assert!(e("--section=global").contains("always applied"));
    }
}
