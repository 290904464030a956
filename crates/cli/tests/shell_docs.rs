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

/// Sources the generated bash script and asks it to complete `line` as bash would.
fn bash_complete(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let line = words.join(" ");
    let program = format!(
        "source {script}\n\
         complete -p storbench >/dev/null || exit 3\n\
         COMP_WORDS=({line}); COMP_CWORD={cword}; COMP_LINE='{line}'; COMP_POINT={point}\n\
         _storbench storbench '{cur}' '{prev}'\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script = script.display(),
        cword = words.len() - 1,
        point = line.len(),
        cur = words[words.len() - 1],
        prev = words[words.len() - 2],
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
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
