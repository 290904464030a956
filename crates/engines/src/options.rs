//! Engine-specific options (`JobSpec::engine_options`), parsed once at create time.

use storbench_core::EngineError;
use storbench_job::{JobSpec, SizeSpec};

/// The size of each of the job's files when the job states one: the largest `filesize`, or
/// `size` split over `nrfiles`, as fio sizes files it lays out.
pub fn file_size(job: &JobSpec) -> Option<u64> {
    if let Some((_, max)) = job.filesize {
        return Some(max);
    }
    match job.size {
        Some(SizeSpec::Bytes(total)) => Some(total / u64::from(job.nrfiles.max(1))),
        _ => None,
    }
}

/// The value of engine option `name`, if given (last one wins, as in fio).
pub fn value<'a>(job: &'a JobSpec, name: &str) -> Option<&'a str> {
    job.engine_options
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A boolean engine option: absent is false; given bare (`--hipri`) or `1` is true.
pub fn flag(job: &JobSpec, name: &str) -> Result<bool, EngineError> {
    match value(job, name) {
        None => Ok(false),
        Some("" | "1" | "true" | "yes" | "on") => Ok(true),
        Some("0" | "false" | "no" | "off") => Ok(false),
        Some(other) => Err(EngineError::unsupported(format!(
            "{name}={other}: expected 0 or 1"
        ))),
    }
}

/// A numeric engine option.
pub fn number(job: &JobSpec, name: &str) -> Result<Option<u32>, EngineError> {
    value(job, name)
        .map(|v| {
            v.parse::<u32>().map_err(|_| {
                EngineError::unsupported(format!("{name}={v}: expected a whole number"))
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(opts: &[(&str, &str)]) -> JobSpec {
        let mut j = JobSpec::new("t");
        j.engine_options = opts
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        j
    }

    #[test]
    fn flags_parse_bare_and_numeric_forms() {
        assert!(flag(&job(&[("hipri", "")]), "hipri").unwrap());
        assert!(flag(&job(&[("hipri", "1")]), "hipri").unwrap());
        assert!(!flag(&job(&[("hipri", "0")]), "hipri").unwrap());
        assert!(!flag(&job(&[]), "hipri").unwrap());
        assert!(flag(&job(&[("hipri", "2")]), "hipri").is_err());
    }

    #[test]
    fn last_value_wins_and_numbers_are_checked() {
        let j = job(&[("sqthread_poll_cpu", "1"), ("sqthread_poll_cpu", "0")]);
        assert_eq!(number(&j, "sqthread_poll_cpu").unwrap(), Some(0));
        assert!(number(&job(&[("x", "a")]), "x").is_err());
        assert_eq!(number(&job(&[]), "x").unwrap(), None);
    }
}
