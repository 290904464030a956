//! The man pages and shell completions generated from the CLI definition: the page renders
//! with groff without a warning and names every subcommand; bash completes a subcommand and
//! an option from the generated script.

mod common;

use std::process::Command;

use clap::CommandFactory;
use common::{Run, storbench};

/// The subcommands `--help` shows.
fn visible_subcommands() -> Vec<String> {
    storbench::Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect()
}

fn run(args: &[&str]) -> Run {
    Run::of(storbench().args(args))
}

/// groff's text rendering of a page, failing on any warning (`-ww`).
fn render(page: &std::path::Path) -> String {
    let out = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww"])
        .arg(page)
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("groff runs (Debian package groff-base)");
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && warnings.is_empty(),
        "{}: {warnings}",
        page.display()
    );
    // Strip overstriking (bold, underline) so the words can be matched.
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut plain = String::new();
    for c in text.chars() {
        if c == '\u{8}' {
            plain.pop();
        } else {
            plain.push(c);
        }
    }
    plain
}

#[test]
fn man_page_renders_and_names_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&["man"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let page = dir.path().join("storbench.1");
    std::fs::write(&page, &r.stdout).unwrap();
    let text = render(&page);
    let subs = visible_subcommands();
    assert!(subs.len() >= 10, "{subs:?}");
    for sub in &subs {
        assert!(
            text.contains(&format!("storbench-{sub}(1)")),
            "{sub} missing:\n{text}"
        );
    }
    for sub in ["completions", "man"] {
        assert!(subs.iter().any(|s| s == sub), "{sub} hidden: {subs:?}");
    }
}

#[test]
fn help_lists_completions_and_man() {
    let r = run(&["--help"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for sub in ["completions", "man"] {
        assert!(
            r.stdout.lines().any(|l| l.trim_start().starts_with(sub)),
            "{sub} missing from --help:\n{}",
            r.stdout
        );
    }
}

#[test]
fn man_dir_writes_one_page_per_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for sub in visible_subcommands().iter().filter(|s| *s != "help") {
        let page = dir.path().join(format!("storbench-{sub}.1"));
        assert!(page.exists(), "{} missing", page.display());
        let text = render(&page);
        assert!(text.contains(&format!("storbench-{sub}")), "{text}");
    }
    let quick = render(&dir.path().join("storbench-quick.1"));
    assert!(quick.contains("--runtime"), "{quick}");
    // A directory that cannot be written is one line and a failure, not a panic.
    let r = run(&["man", "--dir", "/proc/storbench-no-such-dir"]);
    assert_eq!(r.code, Some(1));
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

/// The pages carry the README's examples (each page those of its subcommand), and
/// storbench-fio(1) names its arguments and lists fio's options from the option table.
#[test]
fn man_pages_have_examples_and_fios_options() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let main = render(&dir.path().join("storbench.1"));
    for needed in ["EXAMPLES", "storbench quick /mnt/pool", "storbench history"] {
        assert!(
            main.contains(needed),
            "storbench(1) lacks {needed}:\n{main}"
        );
    }
    let quick = render(&dir.path().join("storbench-quick.1"));
    assert!(quick.contains("EXAMPLES"), "{quick}");
    assert!(
        quick.contains("storbench quick --size 512m --runtime 2s /mnt/pool --label hdd-pool"),
        "{quick}"
    );
    assert!(!quick.contains("storbench bonnie -d"), "{quick}");
    let compare = render(&dir.path().join("storbench-compare.1"));
    assert!(
        compare.contains("storbench compare hdd-pool ssd-pool --format markdown"),
        "{compare}"
    );
    let fio = render(&dir.path().join("storbench-fio.1"));
    assert!(!fio.contains("[ARGS]"), "{fio}");
    assert!(fio.contains("FIO_OPTION|JOB_FILE"), "{fio}");
    assert!(fio.contains("FIO OPTIONS"), "{fio}");
    // As many fio options as the option table holds, each with its help.
    for option in [
        "--iodepth=",
        "--rw=",
        "--bs=",
        "--time_based=",
        "--ioengine=",
    ] {
        assert!(
            fio.contains(option),
            "storbench-fio(1) lacks {option}:\n{fio}"
        );
    }
    assert!(fio.contains("storbench fio jobs/mixed.fio"), "{fio}");
}

/// Sources the generated bash script and asks it to complete `line` as bash would.
fn bash_complete(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    bash_complete_with(script, words, &[])
}

/// [`bash_complete`] with `env` set for the script (the `PATH` its label lookup uses).
fn bash_complete_with(
    script: &std::path::Path,
    words: &[&str],
    env: &[(&str, &str)],
) -> Vec<String> {
    let line = words.join(" ");
    let program = format!(
        "source {script}\n\
         complete -p storbench >/dev/null || exit 3\n\
         COMP_WORDS=({line}); COMP_CWORD={cword}; COMP_LINE='{line}'; COMP_POINT={point}\n\
         _storbench_with_labels storbench '{cur}' '{prev}'\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script = script.display(),
        cword = words.len() - 1,
        point = line.len(),
        cur = words[words.len() - 1],
        prev = words[words.len() - 2],
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .envs(env.iter().copied())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // printf prints one empty line for no candidates.
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommands_and_options() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&["completions", "bash"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let script = dir.path().join("storbench.bash");
    std::fs::write(&script, &r.stdout).unwrap();
    assert_eq!(bash_complete(&script, &["storbench", "qu"]), ["quick"]);
    let hist = bash_complete(&script, &["storbench", "h"]);
    assert!(hist.contains(&"history".to_string()), "{hist:?}");
    assert_eq!(
        bash_complete(&script, &["storbench", "quick", "--runt"]),
        ["--runtime"]
    );
}

/// bash offers the values storbench's own tables know (formats, profiles, engines) and the
/// labels of the database the line names, where a run is named.
#[test]
fn bash_completes_values_and_stored_labels() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&["completions", "bash"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let script = dir.path().join("storbench.bash");
    std::fs::write(&script, &r.stdout).unwrap();
    let formats = bash_complete(&script, &["storbench", "show", "--format", "mark"]);
    assert_eq!(formats, ["markdown"]);
    let profiles = bash_complete(&script, &["storbench", "quick", "--profile", ""]);
    for p in ["default", "peak", "real", "nvme", "classic"] {
        assert!(profiles.contains(&p.to_string()), "{profiles:?}");
    }
    let engines = bash_complete(&script, &["storbench", "quick", "--engine", "io_"]);
    assert_eq!(engines, ["io_uring"]);
    let db = dir.path().join("runs.db");
    for label in ["pool-hdd", "pool-ssd", "other"] {
        let saved = Run::of(
            storbench()
                .env("STORBENCH_DB", &db)
                .current_dir(dir.path())
                .args(["fio", "--ioengine=null", "--name=x", "--size=1m"])
                .arg(format!("--label={label}")),
        );
        assert_eq!(saved.code, Some(0), "{}", saved.stderr);
    }
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_storbench"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let db_arg = db.to_str().unwrap();
    let labels = |words: &[&str]| {
        let mut all = vec!["storbench", "--db", db_arg];
        all.extend_from_slice(words);
        bash_complete_with(&script, &all, &[("PATH", path.as_str())])
    };
    let mut pools = labels(&["compare", "pool-"]);
    pools.sort();
    assert_eq!(pools, ["pool-hdd", "pool-ssd"]);
    assert_eq!(labels(&["compare", "pool-hdd", "ot"]), ["other"]);
    assert_eq!(labels(&["show", "--format", "markdown", "o"]), ["other"]);
    assert_eq!(labels(&["history", "--label", "pool-h"]), ["pool-hdd"]);
    assert_eq!(labels(&["report", "--baseline", "oth"]), ["other"]);
    // An option's value is still clap's: formats, not labels.
    assert_eq!(labels(&["compare", "--format", "mark"]), ["markdown"]);
    // No database: no labels and no error.
    let none = bash_complete_with(
        &script,
        &["storbench", "--db", "/nonexistent/runs.db", "show", ""],
        &[("PATH", path.as_str())],
    );
    assert!(none.is_empty(), "{none:?}");
}

#[test]
fn every_shell_gets_a_script_and_others_are_refused() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let r = run(&["completions", shell]);
        assert_eq!(r.code, Some(0), "{shell}: {}", r.stderr);
        assert!(r.stdout.contains("quick"), "{shell}: {}", r.stdout);
    }
    let r = run(&["completions", "tcsh"]);
    assert_eq!(r.code, Some(2));
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("tcsh"), "{}", r.stderr);
}

/// `fio --help` teaches storbench's own flags first and points to fio's option list.
#[test]
fn fio_help_starts_with_storbenchs_own_flags() {
    let r = run(&["fio", "--help"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let own = r
        .stdout
        .find("storbench's own flags")
        .unwrap_or_else(|| panic!("{}", r.stdout));
    for flag in ["--label", "--tag", "--repeat", "--no-save"] {
        let at = r.stdout.find(flag).unwrap_or_else(|| panic!("{flag}"));
        assert!(at > own, "{flag} before the own flags' heading");
    }
    assert!(r.stdout.contains("--cmdhelp"), "{}", r.stdout);
    for kind in ["nfs://", "smb://", "iscsi://", "nbd://"] {
        assert!(r.stdout.contains(kind), "{kind}: {}", r.stdout);
    }
    assert!(r.stdout.lines().count() < 60, "{}", r.stdout);
}

/// The measuring subcommands' help names every kind of target (bonnie says which it cannot
/// hold its files on).
#[test]
fn measuring_help_names_every_target_kind() {
    for sub in ["quick", "bonnie"] {
        let r = run(&[sub, "--help"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        for kind in ["nfs://", "smb://", "iscsi://", "nbd://"] {
            assert!(
                r.stdout.contains(kind),
                "{sub} --help lacks {kind}:\n{}",
                r.stdout
            );
        }
    }
}

/// A database with runs labelled `pool-hdd`, `pool-ssd` and `other` (null-engine runs), and
/// `PATH` with the storbench under test first, as the completion scripts call it.
fn labelled_db(dir: &std::path::Path) -> (std::path::PathBuf, String) {
    let db = dir.join("runs.db");
    for label in ["pool-hdd", "pool-ssd", "other"] {
        let saved = Run::of(
            storbench()
                .env("STORBENCH_DB", &db)
                .current_dir(dir)
                .args(["fio", "--ioengine=null", "--name=x", "--size=1m"])
                .arg(format!("--label={label}")),
        );
        assert_eq!(saved.code, Some(0), "{}", saved.stderr);
    }
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_storbench"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (db, path)
}

/// What zsh offers for `line` when TAB is typed after it: an interactive zsh under zpty,
/// with compinit loading the generated `_storbench` and `compadd` recording each candidate
/// it is given into a file.
fn zsh_complete(script: &std::path::Path, line: &str, path: &str) -> Vec<String> {
    let dir = script.parent().unwrap();
    let fpath = dir.join("fpath");
    std::fs::create_dir_all(&fpath).unwrap();
    std::fs::copy(script, fpath.join("_storbench")).unwrap();
    let capture = dir.join("capture");
    let _ = std::fs::remove_file(&capture);
    let init = dir.join("init.zsh");
    std::fs::write(
        &init,
        format!(
            "fpath=({fpath} $fpath)\n\
             autoload -U compinit && compinit -u -D\n\
             bindkey '^I' complete-word\n\
             comppostfuncs=(exit)\n\
             compadd() {{\n\
                 if [[ ${{@[1,(i)(-|--)]}} == *-(O|A|D)\\ * ]]; then builtin compadd \"$@\"; return $?; fi\n\
                 local -a hits\n\
                 builtin compadd -A hits \"$@\"\n\
                 (( $#hits )) && print -rl -- $hits >> {capture}\n\
                 builtin compadd \"$@\"\n\
             }}\n",
            fpath = fpath.display(),
            capture = capture.display(),
        ),
    )
    .unwrap();
    let driver = format!(
        "zmodload zsh/zpty\n\
         zpty z zsh -f -i\n\
         zpty -w z 'source {init}'\n\
         zpty -w -n z '{line}'$'\\t'\n\
         while zpty -r z chunk; do :; done\n",
        init = init.display(),
    );
    let out = Command::new("timeout")
        .args(["30", "zsh", "-f", "-c", &driver])
        .env("PATH", path)
        .output()
        .expect("zsh runs");
    assert_ne!(out.status.code(), Some(124), "zsh did not finish: {line}");
    let mut offered: Vec<String> = std::fs::read_to_string(&capture)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    offered.sort();
    offered.dedup();
    offered
}

/// What fish offers for `line` (`complete -C`), the generated script sourced first.
fn fish_complete(script: &std::path::Path, line: &str, path: &str) -> Vec<String> {
    let out = Command::new("fish")
        .args(["--no-config", "-c"])
        .arg(format!("source {}; complete -C '{line}'", script.display()))
        .env("PATH", path)
        .output()
        .expect("fish runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut offered: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    offered.sort();
    offered
}

/// zsh and fish offer the stored labels where a run is named, as bash does, and the
/// values of options elsewhere; without a database they offer no label and no error.
#[test]
fn zsh_and_fish_complete_stored_labels() {
    type Complete = fn(&std::path::Path, &str, &str) -> Vec<String>;
    let shells: [(&str, Complete); 2] = [("zsh", zsh_complete), ("fish", fish_complete)];
    for (shell, _) in &shells {
        storbench_testkit::require!(
            common::system::have_tool(shell),
            format!("{shell} not installed (Debian package {shell})")
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let (db, path) = labelled_db(dir.path());
    let db = db.display();
    for (shell, complete) in shells {
        let r = run(&["completions", shell]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let shell_dir = dir.path().join(shell);
        std::fs::create_dir(&shell_dir).unwrap();
        let script = shell_dir.join(format!("storbench.{shell}"));
        std::fs::write(&script, &r.stdout).unwrap();
        let offered = |line: &str| complete(&script, line, &path);
        assert_eq!(
            offered(&format!("storbench --db {db} compare pool-")),
            ["pool-hdd", "pool-ssd"],
            "{shell}"
        );
        assert_eq!(
            offered(&format!("storbench --db {db} show ot")),
            ["other"],
            "{shell}"
        );
        assert_eq!(
            offered(&format!("storbench --db {db} export pool-s")),
            ["pool-ssd"],
            "{shell}"
        );
        assert_eq!(
            offered(&format!("storbench --db {db} report --baseline oth")),
            ["other"],
            "{shell}"
        );
        assert_eq!(
            offered(&format!("storbench --db {db} history --label pool-h")),
            ["pool-hdd"],
            "{shell}"
        );
        // An option's value is still its own: formats, not labels.
        assert_eq!(
            offered(&format!("storbench --db {db} show --format mark")),
            ["markdown"],
            "{shell}"
        );
        let none = offered("storbench --db /nonexistent/runs.db show pool-");
        assert!(none.is_empty(), "{shell}: {none:?}");
    }
}
