//! fio job files: INI sections in order, `include` (nested, no sections inside), `;` and `#`
//! comments (fio cuts a line at the first `;` or `#`, wherever it is), keys without `=`.
//! Values are kept as written; `${ENV}` and keywords are expanded when options are applied.

use std::path::Path;

use crate::error::{JobError, Origin};
use crate::low::{LowFile, LowSection, RawOpt};

/// Deeper include chains are almost certainly a loop.
const MAX_INCLUDE_DEPTH: usize = 16;

/// Reads an included file: given the name as written and the including file's path,
/// returns the path actually read and its contents.
pub type IncludeLoader<'a> = dyn FnMut(&str, &str) -> Result<(String, String), String> + 'a;

/// Reads a file's text given its path; job files and includes are read through one.
pub type SourceReader<'a> = dyn FnMut(&str) -> Result<String, String> + 'a;

/// Reads a job file (`-` is standard input) and the files it includes from disk.
pub fn read_job_file(path: &str) -> Result<LowFile, JobError> {
    read_job_file_with(path, &mut read_source)
}

/// Reads a job file and its includes through `read` (tests and fuzzing read from memory).
pub fn read_job_file_with(path: &str, read: &mut SourceReader<'_>) -> Result<LowFile, JobError> {
    let text = read(path).map_err(|reason| JobError::Read {
        path: path.to_string(),
        reason,
    })?;
    let mut load = |name: &str, including: &str| load_include(name, including, read);
    parse_job_text(path, &text, &mut load)
}

/// The largest job file (or included file) read: fio's job files are a few KiB, and a name
/// such as /dev/zero must not grow memory without end.
pub const MAX_JOB_FILE: u64 = 1 << 20;

/// Standard input for `-`, else the file, which must be a regular file of at most
/// [`MAX_JOB_FILE`] bytes (checked before it is opened, so a FIFO or device is never read);
/// errors are the OS's words.
pub fn read_source(path: &str) -> Result<String, String> {
    use std::io::Read;
    let too_big = || {
        format!(
            "larger than {} KiB, the limit for job files",
            MAX_JOB_FILE >> 10
        )
    };
    let mut bytes = Vec::new();
    if path == "-" {
        std::io::stdin()
            .take(MAX_JOB_FILE + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io_reason(&e))?;
    } else {
        let meta = std::fs::metadata(path).map_err(|e| io_reason(&e))?;
        if !meta.is_file() {
            return Err("not a regular file (job files must be regular files)".into());
        }
        if meta.len() > MAX_JOB_FILE {
            return Err(too_big());
        }
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_JOB_FILE + 1).read_to_end(&mut bytes))
            .map_err(|e| io_reason(&e))?;
    }
    if bytes.len() as u64 > MAX_JOB_FILE {
        return Err(too_big());
    }
    String::from_utf8(bytes).map_err(|_| "not a text file (invalid UTF-8)".to_string())
}

/// The OS message without Rust's " (os error N)" tail.
fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// fio's rule: a relative include is tried as written, then next to the including file.
fn load_include(
    name: &str,
    including: &str,
    read: &mut SourceReader<'_>,
) -> Result<(String, String), String> {
    let first = read(name);
    if let Ok(text) = first {
        return Ok((name.to_string(), text));
    }
    let beside = match Path::new(including).parent() {
        Some(dir) if !dir.as_os_str().is_empty() && Path::new(name).is_relative() => {
            dir.join(name).display().to_string()
        }
        _ => {
            return first
                .map(|t| (name.to_string(), t))
                .map_err(|e| format!("cannot read '{name}': {e}"));
        }
    };
    let text = read(&beside).map_err(|reason| format!("cannot read '{beside}': {reason}"))?;
    Ok((beside, text))
}

/// Parses the text of a job file; `load` supplies included files.
pub fn parse_job_text(
    path: &str,
    text: &str,
    load: &mut IncludeLoader<'_>,
) -> Result<LowFile, JobError> {
    let mut reader = Reader {
        sections: Vec::new(),
        sources: vec![(path.to_string(), text.to_string())],
        load,
    };
    reader.lines(path, text, 0)?;
    Ok(LowFile {
        path: path.to_string(),
        sections: reader.sections,
        sources: reader.sources,
    })
}

struct Reader<'l, 'a> {
    sections: Vec<LowSection>,
    sources: Vec<(String, String)>,
    load: &'l mut IncludeLoader<'a>,
}

impl Reader<'_, '_> {
    fn lines(&mut self, path: &str, text: &str, depth: usize) -> Result<(), JobError> {
        let mut job_file = false;
        for (index, raw) in text.lines().enumerate() {
            let at = Origin::file(path, index + 1);
            let line = strip_comment(raw).trim();
            if line.is_empty() {
                continue;
            }
            if !job_file {
                job_file = reads_as_job_file(line);
                if !job_file {
                    return Err(not_a_job_file(at));
                }
            }
            if line.starts_with('[') {
                self.section(line, at, depth)?;
            } else if let Some(name) = include_target(line) {
                self.include(name, path, at, depth)?;
            } else {
                self.option(line, at)?;
            }
        }
        Ok(())
    }

    fn section(&mut self, line: &str, at: Origin, depth: usize) -> Result<(), JobError> {
        if depth > 0 {
            return Err(JobError::Syntax {
                at,
                message: format!("{line}: included files cannot contain [sections]"),
            });
        }
        let name = line
            .strip_prefix('[')
            .and_then(|l| l.strip_suffix(']'))
            .filter(|n| !n.is_empty())
            .ok_or_else(|| JobError::Syntax {
                at: at.clone(),
                message: format!("{line}: a section header is [name]"),
            })?;
        self.sections.push(LowSection {
            name: name.to_string(),
            origin: at,
            opts: Vec::new(),
        });
        Ok(())
    }

    fn include(
        &mut self,
        name: &str,
        from: &str,
        at: Origin,
        depth: usize,
    ) -> Result<(), JobError> {
        if name.is_empty() {
            return Err(JobError::Syntax {
                at,
                message: "include needs a file name".into(),
            });
        }
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(JobError::Syntax {
                at,
                message: format!(
                    "include {name}: includes nested more than {MAX_INCLUDE_DEPTH} deep (a loop?)"
                ),
            });
        }
        if self.sections.is_empty() {
            return Err(outside_section(at, &format!("include {name}")));
        }
        let (path, text) = (self.load)(name, from).map_err(|reason| JobError::Syntax {
            at: at.clone(),
            message: format!("include {name}: {reason}"),
        })?;
        if !self.sources.iter().any(|(p, _)| *p == path) {
            self.sources.push((path.clone(), text.clone()));
        }
        self.lines(&path, &text, depth + 1)
    }

    fn option(&mut self, line: &str, at: Origin) -> Result<(), JobError> {
        let Some(section) = self.sections.last_mut() else {
            return Err(outside_section(at, line));
        };
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
            None => (line, None),
        };
        if key.is_empty() {
            return Err(JobError::Syntax {
                at,
                message: format!("{line}: missing option name before '='"),
            });
        }
        section.opts.push(RawOpt {
            key: key.to_string(),
            value,
            origin: at,
            from_file: true,
        });
        Ok(())
    }
}

/// Whether a file's first line reads as fio's: a `[section]`, an `include` or a fio option
/// (supported or not).
/// Until one such line is seen, no line of the file is quoted in an error, so naming a file
/// that is no job file (`include /etc/shadow`) cannot print its content.
fn reads_as_job_file(line: &str) -> bool {
    if line.starts_with('[') && line.ends_with(']') {
        return true;
    }
    if include_target(line).is_some() {
        return true;
    }
    let key = line.split_once('=').map_or(line, |(k, _)| k).trim();
    crate::options::find(key).is_some() || crate::options::is_unsupported(key)
}

fn not_a_job_file(at: Origin) -> JobError {
    JobError::Syntax {
        at,
        message: "not a fio job file: its first line is neither a [section], an include nor a \
                  known option (its content is not shown)"
            .into(),
    }
}

fn outside_section(at: Origin, line: &str) -> JobError {
    JobError::Syntax {
        at,
        message: format!("{line}: option outside of a [job] section"),
    }
}

/// fio cuts every line at its first `;` or `#`.
fn strip_comment(line: &str) -> &str {
    match line.find([';', '#']) {
        Some(i) => &line[..i],
        None => line,
    }
}

/// `include file` → `Some("file")`; a bare `include` → `Some("")`.
fn include_target(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("include")?;
    if rest.is_empty() {
        return Some("");
    }
    rest.starts_with(char::is_whitespace).then(|| rest.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_includes(name: &str, _: &str) -> Result<(String, String), String> {
        Err(format!("no such file {name}"))
    }

    fn parse(text: &str) -> Result<LowFile, JobError> {
        parse_job_text("t.fio", text, &mut no_includes)
    }

    #[test]
    fn sections_options_comments_and_bare_keys() {
        let f = parse(
            "; leading comment\n[global]\nrw=randread ; trailing\nsize = 128m\n\n# x\n[job1]\ntime_based\nbs=4k#c\n[job2]\n",
        )
        .unwrap();
        let names: Vec<_> = f.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["global", "job1", "job2"]);
        let g = &f.sections[0].opts;
        assert_eq!(g[0].key, "rw");
        assert_eq!(g[0].value.as_deref(), Some("randread"));
        assert_eq!(g[1].key, "size");
        assert_eq!(g[1].value.as_deref(), Some("128m"));
        assert_eq!(g[1].origin, Origin::file("t.fio", 4));
        let j = &f.sections[1].opts;
        assert_eq!(j[0].value, None);
        assert_eq!(j[1].value.as_deref(), Some("4k"));
        assert!(f.sections[2].opts.is_empty());
    }

    #[test]
    fn option_before_any_section_is_an_error() {
        let e = parse("bs=4k\n[x]\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.fio:1: bs=4k: option outside of a [job] section"
        );
    }

    #[test]
    fn bad_header() {
        assert!(parse("[x\n").is_err());
        assert!(parse("[]\n").is_err());
    }

    #[test]
    fn content_of_files_that_are_no_job_files_is_not_quoted() {
        let shadow = "root:$y$j9T$HASH:19000:0:99999:7:::\nbin:*:1\n";
        let mut load = |name: &str, _: &str| match name {
            "shadow" => Ok(("shadow".to_string(), shadow.to_string())),
            _ => Err("missing".to_string()),
        };
        for (path, text) in [("t.fio", "[j]\ninclude shadow\n"), ("shadow", shadow)] {
            let e = parse_job_text(path, text, &mut load)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("shadow:1: not a fio job file"), "{e}");
            assert!(!e.contains("HASH") && !e.contains("root"), "{e}");
        }
        // A job file that has shown itself as one still gets its lines quoted.
        let e = parse_job_text("t.fio", "[j]\nrw=read\nbogus\n[k\n", &mut load).unwrap_err();
        assert!(
            e.to_string().contains("[k: a section header is [name]"),
            "{e}"
        );
        let e = parse_job_text("t.fio", "rw=read\n", &mut load).unwrap_err();
        assert!(e.to_string().contains("rw=read: option outside"), "{e}");
    }

    #[test]
    fn includes_nest_and_keep_origin() {
        let mut load = |name: &str, _: &str| match name {
            "a.inc" => Ok((
                "a.inc".to_string(),
                "iodepth=4\ninclude b.inc\n".to_string(),
            )),
            "b.inc" => Ok(("b.inc".to_string(), "bs=8k\n".to_string())),
            "bad.inc" => Ok(("bad.inc".to_string(), "[nope]\n".to_string())),
            "loop.inc" => Ok(("loop.inc".to_string(), "include loop.inc\n".to_string())),
            _ => Err("missing".to_string()),
        };
        let f = parse_job_text("t.fio", "[j]\ninclude a.inc\nrw=write\n", &mut load).unwrap();
        let keys: Vec<_> = f.sections[0].opts.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["iodepth", "bs", "rw"]);
        assert_eq!(f.sections[0].opts[1].origin, Origin::file("b.inc", 1));
        assert_eq!(f.sources.len(), 3);
        let e = parse_job_text("t.fio", "[j]\ninclude bad.inc\n", &mut load).unwrap_err();
        assert!(e.to_string().contains("cannot contain [sections]"), "{e}");
        let e = parse_job_text("t.fio", "[j]\ninclude loop.inc\n", &mut load).unwrap_err();
        assert!(e.to_string().contains("a loop?"), "{e}");
        let e = parse_job_text("t.fio", "[j]\ninclude gone.inc\n", &mut load).unwrap_err();
        assert_eq!(e.to_string(), "t.fio:2: include gone.inc: missing");
    }
}
