//! One error type for everything that can be wrong with fio input. Every message is one
//! line that says where the problem is (`job.fio:12` or the command-line argument), which
//! option and value, and what is wrong.

use std::fmt;

/// Where a raw option came from, for error messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A line of a job file (or of a file it includes).
    File { path: String, line: usize },
    /// A command-line argument, as `--name` (the value is printed separately).
    Arg { flag: String },
}

impl Origin {
    pub(crate) fn file(path: &str, line: usize) -> Self {
        Origin::File {
            path: path.to_string(),
            line,
        }
    }

    pub(crate) fn arg(flag: &str) -> Self {
        Origin::Arg {
            flag: flag.to_string(),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{path}:{line}"),
            Origin::Arg { flag } => f.write_str(flag),
        }
    }
}

/// `origin: name=value` for a file, `--name=value` for the command line.
struct Setting<'a> {
    at: &'a Origin,
    name: &'a str,
    value: &'a str,
}

impl fmt::Display for Setting<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Origin::File { .. } => write!(f, "{}: {}={}", self.at, self.name, self.value),
            Origin::Arg { flag } if self.value.is_empty() => f.write_str(flag),
            Origin::Arg { flag } => write!(f, "{flag}={}", self.value),
        }
    }
}

/// Everything that can be wrong with a fio command line or job file.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum JobError {
    /// A value that does not parse or is out of range.
    #[error("{}", one_line(&format!("{}: {reason}", Setting { at, name, value })))]
    BadValue {
        at: Origin,
        name: String,
        value: String,
        reason: String,
    },
    /// A name neither fio nor storbench knows.
    #[error("{}", one_line(&format!("{at}: unknown option '{name}'{}", suggestion_text(suggestion))))]
    Unknown {
        at: Origin,
        name: String,
        suggestion: Option<String>,
    },
    /// A real fio option that storbench does not implement.
    #[error("{}", one_line(&format!("{at}: fio option '{name}' is not supported by storbench (see docs/fio-compat.md)")))]
    Unsupported { at: Origin, name: String },
    /// Malformed job-file syntax (a line outside a section, a section in an include, …).
    #[error("{}", one_line(&format!("{at}: {message}")))]
    Syntax { at: Origin, message: String },
    /// A job file that cannot be read.
    #[error("{}", one_line(&format!("cannot read job file '{path}': {reason}")))]
    Read { path: String, reason: String },
    /// Options that are each valid but impossible together.
    #[error("{}", one_line(&format!("{}job '{job}': {message}", file_prefix(at))))]
    Invalid {
        at: Origin,
        job: String,
        message: String,
    },
    /// A problem with the invocation as a whole (no jobs, a bad global flag, …).
    #[error("{}", one_line(.0))]
    Usage(String),
}

/// Messages are one line whatever the input held: control characters are escaped.
fn one_line(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `job.fio:7: ` for a job-file section; nothing for a command-line job (its name says it).
fn file_prefix(at: &Origin) -> String {
    match at {
        Origin::File { .. } => format!("{at}: "),
        Origin::Arg { .. } => String::new(),
    }
}

fn suggestion_text(s: &Option<String>) -> String {
    match s {
        Some(s) => format!("; did you mean '{s}'?"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_value_from_file_names_file_line_option_and_value() {
        let e = JobError::BadValue {
            at: Origin::file("job.fio", 12),
            name: "bs".into(),
            value: "4q".into(),
            reason: "unknown unit 'q'".into(),
        };
        assert_eq!(e.to_string(), "job.fio:12: bs=4q: unknown unit 'q'");
    }

    #[test]
    fn bad_value_from_argv_reads_like_the_argument() {
        let e = JobError::BadValue {
            at: Origin::arg("--bs"),
            name: "bs".into(),
            value: "4q".into(),
            reason: "unknown unit 'q'".into(),
        };
        assert_eq!(e.to_string(), "--bs=4q: unknown unit 'q'");
    }

    #[test]
    fn messages_stay_on_one_line() {
        let e = JobError::Usage("--bs=4\nk: bad\tvalue".into());
        assert_eq!(e.to_string(), "--bs=4\\nk: bad\\tvalue");
    }

    #[test]
    fn unknown_option_suggests() {
        let e = JobError::Unknown {
            at: Origin::arg("--runtim"),
            name: "runtim".into(),
            suggestion: Some("runtime".into()),
        };
        assert_eq!(
            e.to_string(),
            "--runtim: unknown option 'runtim'; did you mean 'runtime'?"
        );
    }
}
