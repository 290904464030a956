//! `storbench bonnie -d nfs://…` against a real nfs-ganesha on 127.0.0.1 started by the
//! test (skipped with a printed reason when ganesha is missing): every test but per-char
//! runs over the user-space client, and nothing is left on the export.

mod bonnie_support;

use bonnie_support::*;
use storbench_testkit::ganesha::{self, Ganesha};

#[test]
fn suite_over_nfs_skips_per_char_and_cleans_the_export() {
    if let Some(why) = ganesha::unavailable() {
        return skip(&why);
    }
    let g = Ganesha::start().expect("start ganesha");
    std::fs::create_dir(g.export_dir().join("bench")).unwrap();
    let url = g.url("bench");
    let out = bonnie_ok(&[
        "-d",
        &url,
        "-q",
        "-s",
        "8:64k:256:3",
        "-r",
        "0",
        "-n",
        "1:4k:0:2",
        "-m",
        "nfs",
    ]);
    let f = fields(&last_line(&out));
    assert_eq!(f.len(), 50);
    for i in [9, 10, 15, 16, 38, 41] {
        assert_eq!(f[i], "", "per-char column {i} is skipped over NFS");
    }
    for i in [11, 13, 17, 19, 26, 28, 30, 32, 34, 36] {
        assert!(!f[i].is_empty(), "column {i} ran");
    }
    assert_eq!(
        (f[5].as_str(), f[6].as_str(), f[24].as_str()),
        ("8M", "64k", "2")
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[bonnie.nfs-per-char]"), "{stderr}");
    let left = entries(&g.export_dir().join("bench"));
    assert!(left.is_empty(), "left on the export: {left:?}");
}

/// The stored result carries the NFS engine's facts (server, transfer sizes).
#[test]
fn nfs_runs_record_the_engines_details() {
    if let Some(why) = ganesha::unavailable() {
        return skip(&why);
    }
    let g = Ganesha::start().expect("start ganesha");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let url = g.url("");
    let out = storbench()
        .args([
            "--db",
            db.to_str().unwrap(),
            "bonnie",
            "-q",
            "-d",
            &url,
            "-s",
            "0",
            "-n",
            "1",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let raw = storbench()
        .args(["--db", db.to_str().unwrap(), "show", "1", "--format", "raw"])
        .output()
        .unwrap();
    let run: serde_json::Value = serde_json::from_slice(&raw.stdout).unwrap();
    let options = run["global_options"].as_array().unwrap();
    let has = |k: &str| options.iter().any(|o| o[0] == k);
    assert!(
        has("ioengine") && has("server") && has("rsize"),
        "{options:?}"
    );
    let left = entries(&g.export_dir());
    assert!(left.is_empty(), "left on the export: {left:?}");
}

/// `-n N:-1` and `-n N:-2` over NFS: every file but the first a hard link (LINK) or a
/// symbolic link (SYMLINK) to it, in one directory or across two (`../name`), and nothing
/// left on the export.
#[test]
fn hard_and_symbolic_links_over_nfs() {
    if let Some(why) = ganesha::unavailable() {
        return skip(&why);
    }
    let g = Ganesha::start().expect("start ganesha");
    std::fs::create_dir(g.export_dir().join("bench")).unwrap();
    let url = g.url("bench");
    for (files, kind) in [
        ("1:-1", "link"),
        ("1:-1:0:2", "link"),
        ("1:-2", "symlink"),
        ("1:-2:0:2", "symlink"),
    ] {
        let out = bonnie_ok(&["-d", &url, "-q", "-s", "0", "-n", files, "-z", "7"]);
        let f = fields(&last_line(&out));
        assert_eq!(f.len(), 50, "{files}");
        assert_eq!((f[21].as_str(), f[22].as_str()), ("1", kind), "{files}");
        for i in [26, 28, 30, 32, 34, 36] {
            assert!(!f[i].is_empty(), "{files}: file test column {i} ran");
        }
        let left = entries(&g.export_dir().join("bench"));
        assert!(left.is_empty(), "{files}: left on the export: {left:?}");
    }
}

/// Over NFS the client sends bonnie++'s owner-only modes, as a kernel client applies the
/// umask before it asks the server: seen on the server's side of the export.
#[test]
fn files_over_nfs_are_owner_only() {
    if let Some(why) = ganesha::unavailable() {
        return skip(&why);
    }
    let g = Ganesha::start().expect("start ganesha");
    let bench = g.export_dir().join("bench");
    std::fs::create_dir(&bench).unwrap();
    let run = bonnie_spawn(
        &g.url("bench"),
        &["-s", "8", "-r", "0", "-f", "-n", "1:1k:0:2", "-q"],
    );
    assert_eq!(modes_while_running(run, &bench), OWNER_ONLY);
    assert!(entries(&bench).is_empty(), "left on the export");
}
