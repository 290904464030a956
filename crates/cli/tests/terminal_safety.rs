//! Terminal safety: control characters in job names, labels, tags, imported fields and URLs
//! never reach a terminal raw from a human output or an error (JSON keeps them exact), and
//! an error quotes nothing of a file that is no job file (`include /etc/shadow`); a secret
//! prompt left with Ctrl-C gives the terminal its echo back.

mod common;

use std::process::Command;

use common::{Run, sb_fio, storbench};
use storbench_testkit::require;

const TITLE: &str = "\x1b]0;pwned\x07";
const CLEAR: &str = "\x1b[2J";

fn has_control(s: &str) -> bool {
    s.chars()
        .any(|c| (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c))
}

fn with_db(db: &std::path::Path) -> Command {
    let mut c = storbench();
    c.env("STORBENCH_DB", db);
    c
}

#[test]
fn names_labels_and_tags_are_escaped_in_human_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let name = format!("job{TITLE}x");
    let label = format!("lab{CLEAR}el");
    let tag = "t\u{9b}2J".to_string();
    for _ in 0..2 {
        let run = Run::of(
            with_db(&db)
                .args(["--label", &label, "--tag", &tag, "fio"])
                .arg(format!("--name={name}"))
                .args(["--ioengine=null", "--size=1M"]),
        );
        assert!(run.success(), "{}", run.stderr);
        assert!(!has_control(&run.stdout), "fio normal: {:?}", run.stdout);
        assert!(
            run.stdout.contains("job\\x1b]0;pwned\\x07x"),
            "{}",
            run.stdout
        );
    }
    let quick_ish = Run::of(
        with_db(&db)
            .args(["fio", "--output-format=json", "--no-save"])
            .arg(format!("--name={name}"))
            .args(["--ioengine=null", "--size=1M"]),
    );
    assert!(
        quick_ish
            .stdout
            .contains(r#""jobname" : "job\u001b]0;pwned\u0007x""#)
    );
    for args in [
        vec!["history"],
        vec!["show", "1"],
        vec!["compare", "1", "2"],
        vec!["compare", "1", "2", "--format", "markdown"],
        vec!["show", "1", "--format", "markdown"],
    ] {
        let run = Run::of(with_db(&db).args(&args));
        assert!(run.success(), "{args:?}: {}", run.stderr);
        assert!(!has_control(&run.stdout), "{args:?}: {:?}", run.stdout);
        assert!(
            run.stdout.contains("\\x1b") || run.stdout.contains("\\u{9b}"),
            "{args:?}: {}",
            run.stdout
        );
    }
    // JSON stays exact.
    let json = Run::of(with_db(&db).args(["history", "--format", "json"]));
    let rows: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(rows[0]["label"], label.as_str());
    assert_eq!(rows[0]["tags"][0], tag.as_str());
}

/// The escaped form is wider than the raw one (`\x1b` is four columns, ESC none): history
/// measures its columns after escaping, so a label with control characters does not push
/// the columns of its row out of line with the others.
#[test]
fn history_columns_stay_aligned_around_escaped_labels() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    for label in [format!("lab{CLEAR}{CLEAR}el"), "plain".to_string()] {
        let run = Run::of(
            with_db(&db)
                .args(["--label", &label, "fio", "--name=j"])
                .args(["--ioengine=null", "--size=1M"]),
        );
        assert!(run.success(), "{}", run.stderr);
    }
    let run = Run::of(with_db(&db).arg("history"));
    assert!(run.success(), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    let column = |line: &str, word: &str| line.find(word).map(|i| line[..i].chars().count());
    let mode = column(lines[0], "MODE").unwrap();
    for row in &lines[1..3] {
        assert_eq!(column(row, "fio"), Some(mode), "{}", run.stdout);
    }
}

#[test]
fn imported_fields_are_escaped_in_show() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let out = Run::of(
        storbench()
            .args(["fio", "--output-format=json", "--no-save"])
            .args(["--name=plain", "--ioengine=null", "--size=1M"]),
    );
    assert!(out.success(), "{}", out.stderr);
    let evil = out.stdout.replace(
        "\"plain\"",
        &serde_json::to_string(&format!("plain{TITLE}")).unwrap(),
    );
    let file = dir.path().join("evil.json");
    std::fs::write(&file, evil).unwrap();
    let import = Run::of(with_db(&db).arg("import").arg(&file));
    assert!(import.success(), "{}", import.stderr);
    let show = Run::of(with_db(&db).args(["show", "1"]));
    assert!(show.success(), "{}", show.stderr);
    assert!(!has_control(&show.stdout), "{:?}", show.stdout);
    assert!(
        show.stdout.contains("plain\\x1b]0;pwned\\x07"),
        "{}",
        show.stdout
    );
}

/// The target is the user's text too: quick's banner (and its warnings on stderr) print it
/// escaped, as the reports do.
#[test]
fn the_quick_banner_prints_the_target_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join(format!("t{CLEAR}{TITLE}"));
    std::fs::create_dir(&target).unwrap();
    let run = Run::of(
        storbench()
            .args(["quick", "--size", "1m", "--runtime", "100ms", "--no-save"])
            .arg(&target),
    );
    assert!(run.success(), "{}", run.stderr);
    assert!(!has_control(&run.stderr), "{:?}", run.stderr);
    assert!(!has_control(&run.stdout), "{:?}", run.stdout);
    assert!(
        run.stderr.contains("storbench quick: ")
            && run.stderr.contains("t\\x1b[2J\\x1b]0;pwned\\x07"),
        "{}",
        run.stderr
    );
}

#[test]
fn urls_with_nul_are_escaped_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    for url in ["nfs://h%00x\x1b[2J/e/f", "iscsi://h/iqn.x%00\x1b[2J:d/zz"] {
        let run = sb_fio(
            dir.path(),
            &["--name=u", "--size=1M", &format!("--filename={url}")],
        );
        let line = run.one_error_line();
        assert!(!has_control(&line), "{line:?}");
    }
}

#[test]
fn files_that_are_no_job_files_are_not_quoted() {
    let dir = tempfile::tempdir().unwrap();
    let shadow = dir.path().join("shadow");
    std::fs::write(&shadow, "root:$y$j9T$SECRETHASH:19000:0:99999:7:::\n").unwrap();
    let job = dir.path().join("inc.fio");
    std::fs::write(&job, format!("[j]\ninclude {}\n", shadow.display())).unwrap();
    for file in [&job, &shadow] {
        let run = sb_fio(dir.path(), &[file.to_str().unwrap()]);
        let line = run.one_error_line();
        assert!(line.contains("not a fio job file"), "{line}");
        assert!(
            !line.contains("SECRETHASH") && !line.contains("root:"),
            "{line}"
        );
    }
}

/// A secret prompt (here iSCSI CHAP's; SMB's password prompt is the same code) turns echo
/// off; Ctrl-C there ends storbench by SIGINT as before, with the terminal's echo back on.
/// Driven on a pseudo-terminal by python3's pty module; nothing listens at the portal, and
/// nothing is reached before the secret is typed.
#[test]
fn ctrl_c_at_a_secret_prompt_gives_the_terminal_its_echo_back() {
    const DRIVER: &str = r#"
import os, pty, select, sys, time, termios
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
seen = b""
end = time.time() + 30
while b"CHAP secret for" not in seen and time.time() < end:
    if select.select([fd], [], [], 0.5)[0]:
        seen += os.read(fd, 4096)
time.sleep(0.2)
during = termios.tcgetattr(fd)[3] & termios.ECHO != 0
os.write(fd, b"\x03")
status = os.waitpid(pid, 0)[1]
after = termios.tcgetattr(fd)[3] & termios.ECHO != 0
sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
sys.stdout.write("%d %d %d %r\n" % (during, after, sig, seen))
"#;
    require!(
        common::system::have_tool("python3"),
        "python3 is needed to drive a terminal"
    );
    let bin = assert_cmd::cargo::cargo_bin("storbench");
    let out = Command::new("python3")
        .args(["-c", DRIVER])
        .arg(&bin)
        .args([
            "--no-save",
            "iscsi",
            "discover",
            "iscsi://alice@127.0.0.1:9",
        ])
        .env_remove("STORBENCH_ISCSI_SECRET")
        .env("STORBENCH_DB", "/dev/null/storbench-tests-must-not-save.db")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut f = text.split(' ');
    let (during, after, sig) = (f.next(), f.next(), f.next());
    assert!(
        text.contains("CHAP secret for"),
        "no prompt: {text} {out:?}"
    );
    assert_eq!(during, Some("0"), "echo was on at the prompt: {text}");
    assert_eq!(sig, Some("2"), "not ended by SIGINT: {text}");
    assert_eq!(after, Some("1"), "echo stayed off after Ctrl-C: {text}");
}
