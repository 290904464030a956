//! `storbench fio`, `quick`, `bonnie` and the metadata engines over NFSv4.1/4.2, against a
//! real nfs-ganesha on 127.0.0.1 started by the test (skipped with a printed reason when
//! ganesha is missing); and the choice of version when `version=` names none.

mod common;

use std::fs;
use std::time::Duration;

use assert_cmd::Command;
use storbench_testkit::ganesha::{self, Ganesha};

fn v4_only() -> Option<Ganesha> {
    storbench_testkit::require!(ganesha::unavailable());
    Some(Ganesha::start_v4_only().expect("start ganesha"))
}

fn storbench() -> Command {
    let mut c = Command::cargo_bin("storbench").unwrap();
    c.arg("--no-save").timeout(Duration::from_secs(120));
    c
}

/// `storbench` keeping its runs in `db`.
fn saving(db: &std::path::Path) -> Command {
    let mut c = Command::cargo_bin("storbench").unwrap();
    c.arg("--db").arg(db).timeout(Duration::from_secs(120));
    c
}

/// A URL of the v4-only server asking for `version`.
fn url4(g: &Ganesha, rel: &str, version: &str) -> String {
    format!("{}?version={version}", g.url4(rel))
}

fn stdout_of(c: &mut Command) -> String {
    let out = c.assert().success().get_output().clone();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json_of(c: &mut Command) -> serde_json::Value {
    serde_json::from_str(&stdout_of(c)).expect("fio JSON")
}

/// The engine details of the first job of a fio JSON document, as text.
fn details(doc: &serde_json::Value) -> String {
    doc.to_string()
}

#[test]
fn fio_over_v4_writes_verifies_and_reads_back() {
    let Some(g) = v4_only() else { return };
    let doc = json_of(
        storbench()
            .args([
                "fio",
                "--name=w",
                "--ioengine=nfs",
                "--rw=write",
                "--bs=64k",
            ])
            .args(["--size=4M", "--iodepth=8", "--buffer_pattern=0xdeadbeef"])
            .arg("--output-format=json")
            .arg(format!("--filename={}", url4(&g, "pattern.dat", "4.1"))),
    );
    assert_eq!(doc["jobs"][0]["write"]["io_bytes"], 4 << 20);
    assert!(details(&doc).contains("NFSv4.1"), "{doc}");
    let data = fs::read(g.export_dir().join("pattern.dat")).unwrap();
    assert_eq!(data.len(), 4 << 20);
    assert!(
        data.chunks(4).all(|c| c == [0xde, 0xad, 0xbe, 0xef]),
        "the export holds other bytes"
    );

    // Written with checksums and read back through the same session, with IOs larger than
    // one READ/WRITE where the server's limit is below 2 MiB (fio's verify state file is
    // written in the working directory).
    let cwd = tempfile::tempdir().unwrap();
    let doc = json_of(
        storbench()
            .current_dir(cwd.path())
            .args([
                "fio",
                "--name=v",
                "--ioengine=nfs",
                "--rw=randwrite",
                "--bs=2M",
            ])
            .args([
                "--size=4M",
                "--iodepth=4",
                "--verify=crc32c",
                "--do_verify=1",
            ])
            .arg("--output-format=json")
            .arg(format!("--filename={}", url4(&g, "verify.dat", "4"))),
    );
    assert_eq!(doc["jobs"][0]["error"], 0, "{doc}");
    assert_eq!(doc["jobs"][0]["read"]["io_bytes"], 4 << 20, "verified");

    let doc = json_of(
        storbench()
            .args([
                "fio",
                "--name=r",
                "--ioengine=nfs",
                "--rw=randread",
                "--bs=4k",
            ])
            .args(["--size=4M", "--iodepth=16", "--output-format=json"])
            .arg(format!("--nfs_url={}&nconnect=2", url4(&g, "", "4.2")))
            .arg("--filename=pattern.dat"),
    );
    assert_eq!(doc["jobs"][0]["read"]["io_bytes"], 4 << 20);
    assert_eq!(doc["jobs"][0]["error"], 0);
    let text = details(&doc);
    assert!(text.contains("NFSv4.2"), "{doc}");
    assert!(
        text.contains("\"nconnect\":\"2\""),
        "one session over two connections: {doc}"
    );
}

#[test]
fn quick_over_v4_runs_and_cleans_up() {
    let Some(g) = v4_only() else { return };
    let text = stdout_of(
        storbench()
            .args([
                "quick",
                "--size",
                "8M",
                "--runtime",
                "300ms",
                "--eta",
                "never",
            ])
            .arg(url4(&g, "", "4.1")),
    );
    assert!(text.contains("SEQ1M") && text.contains("RND4K"), "{text}");
    let left: Vec<_> = fs::read_dir(g.export_dir()).unwrap().collect();
    assert!(left.is_empty(), "files left on the export: {left:?}");
}

#[test]
fn bonnie_over_v4_runs_with_links_and_cleans_up() {
    let Some(g) = v4_only() else { return };
    fs::create_dir(g.export_dir().join("bench")).unwrap();
    let out = storbench()
        .args(["bonnie", "-d"])
        .arg(url4(&g, "bench", "4.1"))
        .args([
            "-q",
            "-s",
            "8:64k:256:3",
            "-r",
            "0",
            "-n",
            "1:4k:0:2",
            "-m",
            "nfs4",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let csv = String::from_utf8_lossy(&out.stdout);
    let last = csv.lines().last().unwrap_or_default();
    let f: Vec<&str> = last.split(',').collect();
    assert_eq!(f.len(), 50, "{csv}");
    for i in [11, 13, 26, 28, 30, 32, 34, 36] {
        assert!(!f[i].is_empty(), "column {i} ran: {last}");
    }
    let left: Vec<_> = fs::read_dir(g.export_dir().join("bench"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "left on the export: {left:?}");

    // Hard and symbolic links (bonnie's -n N:-1 and N:-2) through the v4 client.
    for links in ["1:-1", "1:-2"] {
        storbench()
            .args(["bonnie", "-d"])
            .arg(url4(&g, "bench", "4.1"))
            .args(["-q", "-s", "0", "-n", links])
            .assert()
            .success();
    }
    let left: Vec<_> = fs::read_dir(g.export_dir().join("bench"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "left on the export: {left:?}");
}

#[test]
fn filecreate_over_v4_makes_its_files() {
    let Some(g) = v4_only() else { return };
    fs::create_dir(g.export_dir().join("m")).unwrap();
    let doc = json_of(
        storbench()
            .args(["fio", "--name=c", "--ioengine=filecreate", "--nrfiles=20"])
            .args(["--filesize=4k", "--output-format=json"])
            .arg(format!("--directory={}", url4(&g, "m", "4.1"))),
    );
    assert_eq!(doc["jobs"][0]["error"], 0, "{doc}");
    let made = fs::read_dir(g.export_dir().join("m")).unwrap().count();
    assert_eq!(made, 20, "files created on the export");
}

/// Without version=, a server that offers v3 is spoken to over v3, and the result says so.
#[test]
fn a_v3_server_without_version_keeps_v3_and_says_so() {
    storbench_testkit::require!(ganesha::unavailable());
    let g = Ganesha::start().expect("start ganesha");
    let doc = json_of(
        storbench()
            .args([
                "fio",
                "--name=w",
                "--ioengine=nfs",
                "--rw=write",
                "--bs=64k",
            ])
            .args(["--size=1M", "--output-format=json"])
            .arg(format!("--filename={}", g.url("v3.dat"))),
    );
    let text = details(&doc);
    assert!(text.contains("NFSv3") && !text.contains("NFSv4"), "{doc}");
    assert!(
        text.contains("version= names none; the server offers NFSv3"),
        "{doc}"
    );
}

/// Without version=, a server without v3 is reached over v4.1, said in the details and in
/// the human output.
#[test]
fn a_v4_only_server_without_version_is_reached_over_v41() {
    let Some(g) = v4_only() else { return };
    let doc = json_of(
        storbench()
            .args([
                "fio",
                "--name=w",
                "--ioengine=nfs",
                "--rw=write",
                "--bs=64k",
            ])
            .args(["--size=1M", "--output-format=json"])
            .arg(format!("--filename={}", g.url4("v4.dat"))),
    );
    let text = details(&doc);
    assert!(
        text.contains("NFSv4.1") && text.contains("offers no NFSv3"),
        "{doc}"
    );
    let out = storbench()
        .args(["fio", "--name=w", "--ioengine=nfs", "--rw=read", "--bs=64k"])
        .args(["--size=1M"])
        .arg(format!("--filename={}", g.url4("v4.dat")))
        .assert()
        .success()
        .get_output()
        .clone();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("NFSv4.1"), "{all}");
}

#[test]
fn a_bad_version_is_one_line() {
    let mut fio = common::storbench();
    fio.args([
        "--no-save",
        "fio",
        "--name=x",
        "--ioengine=nfs",
        "--rw=read",
    ])
    .args(["--bs=4k", "--size=1M"])
    .arg("--filename=nfs://127.0.0.1/export/f?version=5");
    let line = common::Run::of(&mut fio).one_error_line();
    assert!(line.contains("version=5") && line.contains("4.1"), "{line}");
}

/// Trim is 4.2's DEALLOCATE: the punched range reads zeros on the export (or the server
/// says it has no DEALLOCATE); over 4.1 it is refused in one line naming version=4.2.
#[test]
fn trim_over_v42_deallocates_and_over_v41_is_refused() {
    let Some(g) = v4_only() else { return };
    fs::write(g.export_dir().join("t.dat"), vec![0x5au8; 1 << 20]).unwrap();
    let run = |version: &str| {
        let mut c = common::storbench();
        c.args([
            "--no-save",
            "fio",
            "--name=t",
            "--ioengine=nfs",
            "--rw=trim",
        ])
        .args(["--bs=64k", "--size=256k", "--output-format=json"])
        .arg(format!("--filename={}", url4(&g, "t.dat", version)));
        common::Run::of(&mut c)
    };
    let r = run("4.2");
    if r.success() {
        let data = fs::read(g.export_dir().join("t.dat")).unwrap();
        assert!(
            data[..256 << 10].iter().all(|&b| b == 0),
            "trimmed range reads zeros"
        );
        assert!(
            data[256 << 10..].iter().all(|&b| b == 0x5a),
            "the rest is kept"
        );
    } else {
        let line = r.one_error_line();
        assert!(line.contains("not supported by the server"), "{line}");
    }
    let line = run("4.1").one_error_line();
    assert!(line.contains("version=4.2"), "{line}");
}

/// The free-space check before lay-out reads the export's file system over v4 (not the
/// pseudo-root's): files larger than it are refused in one line, and nothing is made.
#[test]
fn a_layout_larger_than_the_export_is_refused_over_v4() {
    let Some(g) = v4_only() else { return };
    let mut c = common::storbench();
    c.args([
        "--no-save",
        "fio",
        "--name=big",
        "--ioengine=nfs",
        "--rw=read",
    ])
    .args(["--bs=1M", "--size=900T"])
    .arg(format!("--filename={}", url4(&g, "big.dat", "4.1")));
    let line = common::Run::of(&mut c).one_error_line();
    assert!(line.contains("not enough space"), "{line}");
    assert!(!g.export_dir().join("big.dat").exists());
}

/// The reasons of `check` in the verdict on job `z` of a fio JSON document.
fn zeros_reasons(doc: &serde_json::Value) -> Vec<String> {
    let verdicts = doc["storbench"]["verdicts"].as_array().expect("verdicts");
    let v = verdicts.iter().find(|v| v["job"] == "z").expect("job z");
    v["reasons"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|r| r["check"] == "zeros")
                .filter_map(|r| r["message"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The zeros verdict over 4.2 asks the server for the holes of the file read (SEEK), as a
/// local run asks SEEK_HOLE: written zeros are data and no sparse file, a sparse file is
/// named, and the holes counted are the file's. Over 4.1, which has no SEEK, written
/// zeros cannot be told from holes and are named, as over v3.
#[test]
fn the_zeros_verdict_over_v42_reads_the_holes_with_seek() {
    use std::io::Write;
    let Some(g) = v4_only() else { return };
    let exp = g.export_dir();
    fs::write(exp.join("zeros.dat"), vec![0u8; 8 << 20]).unwrap();
    let mut half = fs::File::create(exp.join("half.dat")).unwrap();
    half.write_all(&vec![0x5au8; 4 << 20]).unwrap();
    half.set_len(8 << 20).unwrap();
    half.sync_all().unwrap();
    fs::File::create(exp.join("sparse.dat"))
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let db = cwd.path().join("runs.db");
    let mut runs = 0;
    let mut read = |name: &str, version: &str| {
        let doc = json_of(
            saving(&db)
                .current_dir(cwd.path())
                .args(["fio", "--name=z"])
                .args(["--ioengine=nfs", "--rw=read", "--bs=4k", "--size=8M"])
                .arg("--output-format=json")
                .arg(format!("--filename={}", url4(&g, name, version))),
        );
        runs += 1;
        let raw = json_of(saving(&db).args(["show", &runs.to_string(), "--format", "raw"]));
        let holes = raw["groups"][0]["jobs"][0]["measured"]["hole_bytes"].as_u64();
        (zeros_reasons(&doc), holes)
    };
    let (reasons, holes) = read("zeros.dat", "4.2");
    assert!(reasons.is_empty(), "written zeros are data: {reasons:?}");
    assert_eq!(holes, Some(0));
    let (reasons, holes) = read("half.dat", "4.2");
    assert_eq!(holes, Some(4 << 20), "the unwritten half");
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    let (reasons, holes) = read("sparse.dat", "4.2");
    assert_eq!(holes, Some(8 << 20));
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].contains("sparse file"), "{reasons:?}");
    let (reasons, holes) = read("zeros.dat", "4.1");
    assert_eq!(holes, None, "4.1 has no SEEK");
    assert_eq!(reasons.len(), 1, "{reasons:?}");
}

/// Blocks the export's file holds, in bytes (st_blocks).
fn allocated(path: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).unwrap().blocks() * 512
}

/// fio's `fallocate=` over 4.2 reserves the laid-out file's blocks with ALLOCATE before a
/// job that writes only part of it; `none` leaves the rest unallocated. Over 4.1, which has
/// no ALLOCATE, each mode does what fio's does where fallocate(2) is not supported:
/// `native` goes on without reserving, `posix` writes zeros (as posix_fallocate(3)
/// does), `keep` ends the job in one line.
#[test]
fn fallocate_over_v42_reserves_with_allocate_and_over_v41_falls_back_as_fio() {
    let Some(g) = v4_only() else { return };
    let size: u64 = 8 << 20;
    let run = |name: &str, version: &str, mode: &str| {
        let mut c = common::storbench();
        c.args(["--no-save", "fio", "--name=f", "--ioengine=nfs"])
            .args(["--rw=write", "--bs=64k", "--size=8M", "--io_size=64k"])
            .arg(format!("--fallocate={mode}"))
            .arg(format!("--filename={}", url4(&g, name, version)));
        common::Run::of(&mut c)
    };
    let file = |name: &str| g.export_dir().join(name);
    run("native42.dat", "4.2", "native").ok();
    assert_eq!(fs::metadata(file("native42.dat")).unwrap().len(), size);
    assert!(
        allocated(&file("native42.dat")) >= size,
        "{} bytes allocated",
        allocated(&file("native42.dat"))
    );
    run("keep42.dat", "4.2", "keep").ok();
    assert!(allocated(&file("keep42.dat")) >= size);
    run("none42.dat", "4.2", "none").ok();
    assert_eq!(fs::metadata(file("none42.dat")).unwrap().len(), size);
    assert!(
        allocated(&file("none42.dat")) < size / 2,
        "{} bytes allocated",
        allocated(&file("none42.dat"))
    );

    run("native41.dat", "4.1", "native").ok();
    assert_eq!(fs::metadata(file("native41.dat")).unwrap().len(), size);
    assert!(allocated(&file("native41.dat")) < size / 2);
    run("posix41.dat", "4.1", "posix").ok();
    let data = fs::read(file("posix41.dat")).unwrap();
    assert_eq!(data.len() as u64, size);
    assert!(allocated(&file("posix41.dat")) >= size, "zeros written");
    let line = run("keep41.dat", "4.1", "keep").one_error_line();
    assert!(
        line.contains("fallocate=keep") && line.contains("version=4.2"),
        "{line}"
    );
}
