//! `exec`: fio's engine that runs a program for the job's runtime. Moves no data and has
//! no file. Its first IO starts `program` with `arguments` (split on spaces as fio splits
//! them, `%r` the runtime in seconds, `%n` the job's name), with stdout and stderr in
//! `<job>.stdout` and `<job>.stderr` unless `std_redirect=0`; every later IO waits 50 ms
//! and looks at the program, and the worker pauses 50 ms after each, as fio's thinktime.
//! When the job ends the program gets SIGTERM, up to `grace_time` seconds to exit, then
//! SIGKILL; what is left of its process group (what it started) gets SIGKILL, and it is reaped
//! (`child.rs`): nothing is left behind, also on a stop or an error.
//!
//! Where storbench differs: without a runtime the job ends when the program does (fio
//! sends SIGTERM at once and never ends), and the stop waits only as long as the program
//! takes to exit (fio sleeps the whole grace time inside the job's last IO).

mod child;

use std::time::Duration;

use storbench_core::{Engine, EngineError, EngineInfo, IoUnit, Queued};
use storbench_job::JobSpec;

use child::Program;

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "exec";

/// fio's wait between looks at the program, inside an IO and again after it.
const LOOK_EVERY: Duration = Duration::from_millis(50);

pub struct Exec {
    job: String,
    program: String,
    /// `arguments` as given (fio's start line shows them so).
    arguments: Option<String>,
    /// Program and arguments after `%r`/`%n`, as fio splits them: on single spaces.
    argv: Vec<String>,
    redirect: bool,
    grace: Duration,
    /// The job has a runtime: it, not the program, decides when the job ends.
    timed: bool,
    running: Option<Program>,
    notes: Vec<String>,
}

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    let o = &job.engine_options;
    let program = o
        .program
        .clone()
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| EngineError::unsupported("the exec engine needs program="))?;
    let runtime_s = job.runtime.map_or(0, |d| d.as_secs());
    let expanded = o
        .arguments
        .as_deref()
        .map(|a| a.replace("%r", &runtime_s.to_string()).replace("%n", &job.name));
    let line = match &expanded {
        Some(a) => format!("{program} {a}"),
        None => program.clone(),
    };
    let argv: Vec<String> = line
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    child::find_program(&argv[0])?;
    Ok(Box::new(Exec {
        job: job.name.clone(),
        program,
        arguments: o.arguments.clone(),
        argv,
        redirect: o.std_redirect.unwrap_or(true),
        grace: Duration::from_secs(u64::from(o.grace_time.unwrap_or(1))),
        timed: job.runtime.is_some(),
        running: None,
        notes: Vec::new(),
    }))
}

impl Exec {
    /// The redirected output files, fio's `<job>.stdout` and `<job>.stderr`.
    fn out_names(&self) -> (String, String) {
        (format!("{}.stdout", self.job), format!("{}.stderr", self.job))
    }

    /// The expanded arguments as fio prints them (`(null)` when none were given).
    fn shown_args(&self) -> String {
        match self.arguments {
            Some(_) => self.argv[1..].join(" "),
            None => "(null)".into(),
        }
    }
}

impl Engine for Exec {
    fn name(&self) -> &'static str {
        NAME
    }

    no_file_calls!();

    fn queue(&mut self, _io: &IoUnit) -> Result<Queued, EngineError> {
        let Some(p) = &mut self.running else {
            let out = self.redirect.then(|| self.out_names());
            self.running = Some(Program::start(&self.argv, out.as_ref())?);
            return Ok(Queued::Done(0));
        };
        std::thread::sleep(LOOK_EVERY);
        if p.exited() && !self.timed {
            return Ok(Queued::Busy);
        }
        Ok(Queued::Done(0))
    }

    fn pause_ns(&mut self) -> u64 {
        LOOK_EVERY.as_nanos() as u64
    }

    fn end(&mut self) -> Result<(), EngineError> {
        if let Some(p) = &mut self.running
            && let Some(note) = p.stop(self.grace, self.timed)
        {
            self.notes.push(format!("{}: {note}", self.argv[0]));
        }
        Ok(())
    }

    fn info(&mut self) -> EngineInfo {
        EngineInfo {
            notes: std::mem::take(&mut self.notes),
            ..EngineInfo::default()
        }
    }

    fn start_lines(&self) -> Vec<String> {
        let args = self.arguments.as_deref().unwrap_or("(null)");
        let mut lines = vec![format!(
            "{} : program={}, arguments={args}",
            self.job, self.program
        )];
        let (out, err) = self.out_names();
        lines.push(if self.redirect {
            format!(
                "{} : Saving output of {} {} : stdout={out} stderr={err}",
                self.job,
                self.program,
                self.shown_args()
            )
        } else {
            format!(
                "{} : Running {} {}",
                self.job,
                self.program,
                self.shown_args()
            )
        });
        lines
    }
}

impl Drop for Exec {
    /// A job that never reached its end (a panic, a worker that failed before it) still
    /// leaves no program behind.
    fn drop(&mut self) {
        let _ = self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(program: &str, args: Option<&str>) -> JobSpec {
        let mut j = JobSpec::new("ex");
        j.ioengine = NAME.into();
        j.runtime = Some(Duration::from_secs(3));
        j.engine_options.set("program", program).unwrap();
        if let Some(a) = args {
            j.engine_options.set("arguments", a).unwrap();
        }
        j
    }

    #[test]
    fn arguments_split_on_spaces_with_fio_substitutions() {
        let e = create(&job("sh", Some("-c  'echo %n %r'"))).unwrap();
        assert_eq!(
            e.start_lines(),
            [
                "ex : program=sh, arguments=-c  'echo %n %r'",
                "ex : Saving output of sh -c 'echo ex 3' : stdout=ex.stdout stderr=ex.stderr",
            ]
        );
        let e = create(&job("/bin/true", None)).unwrap();
        assert_eq!(e.start_lines()[0], "ex : program=/bin/true, arguments=(null)");
    }

    #[test]
    fn a_program_that_cannot_run_is_refused_before_the_job() {
        let e = create(&job("storbench-no-such-program", None)).err().unwrap();
        assert!(e.message.contains("storbench-no-such-program"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let plain = d.path().join("not-a-program");
        std::fs::write(&plain, b"data").unwrap();
        assert!(create(&job(plain.to_str().unwrap(), None)).is_err());
        let mut j = JobSpec::new("x");
        j.ioengine = NAME.into();
        assert!(create(&j).is_err());
    }
}
