//! storbench as a drop-in `fio`: through a link named `fio` it is
//! `storbench fio`, says it is fio 3.33 run by storbench, and the tools that call fio
//! themselves run it unchanged. End to end with fio-plot from PyPI: `bench-fio` runs a small
//! matrix with the link first on PATH, then `fio-plot` draws its charts from the results.
//! fio-plot is looked for in a venv next to the test binaries (`<target>/fio-plot-venv`,
//! which test.sh makes) or at `STORBENCH_FIO_PLOT_VENV`; skipped with a reason without it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Run;

/// A temp dir with `bin/fio`, a link to the storbench under test.
struct LinkDir {
    dir: tempfile::TempDir,
}

impl LinkDir {
    fn new() -> LinkDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        std::os::unix::fs::symlink(
            assert_cmd::cargo::cargo_bin("storbench"),
            dir.path().join("bin/fio"),
        )
        .unwrap();
        LinkDir { dir }
    }

    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// `fio ARGS` through the link, in the temp dir, with a results database of its own.
    fn fio(&self, args: &[&str]) -> Run {
        Run::of(
            Command::new(self.bin().join("fio"))
                .current_dir(self.dir.path())
                .env("STORBENCH_DB", self.dir.path().join("results.db"))
                .args(args),
        )
    }
}

#[test]
fn the_fio_link_prints_a_fio_style_version() {
    let link = LinkDir::new();
    let run = link.fio(&["--version"]);
    let want = format!("fio-3.33 (storbench {})\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(run.ok(), want);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn the_fio_link_runs_a_fio_command_line_with_fios_json() {
    let link = LinkDir::new();
    let run = link.fio(&[
        "--name=j",
        "--ioengine=null",
        "--size=1m",
        "--rw=randread",
        "--output-format=json",
    ]);
    // Tools that call fio treat anything on stderr as a failure (bench-fio does).
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let doc = run.json();
    let version = doc["fio version"].as_str().unwrap();
    assert!(version.starts_with("fio-3.33 (storbench "), "{version}");
    assert_eq!(doc["jobs"][0]["read"]["total_ios"], 256);
}

/// fio-plot's venv, or None with the reason printed.
fn fio_plot_venv() -> Option<PathBuf> {
    let venv = std::env::var_os("STORBENCH_FIO_PLOT_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            // target/debug/storbench → target/fio-plot-venv
            let bin = assert_cmd::cargo::cargo_bin("storbench");
            bin.parent()
                .unwrap()
                .parent()
                .unwrap()
                .join("fio-plot-venv")
        });
    if venv.join("bin/bench-fio").is_file() && venv.join("bin/fio-plot").is_file() {
        return Some(venv);
    }
    eprintln!(
        "SKIP: fio-plot is not installed in {} (test.sh installs it: pip install fio-plot)",
        venv.display()
    );
    None
}

fn path_with(first: &[&Path]) -> std::ffi::OsString {
    let mut dirs: Vec<PathBuf> = first.iter().map(|p| p.to_path_buf()).collect();
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

#[test]
fn bench_fio_runs_a_matrix_and_fio_plot_draws_it() {
    let Some(venv) = fio_plot_venv() else { return };
    let link = LinkDir::new();
    let work = link.dir.path();
    let target = work.join("target.img");
    std::fs::write(&target, vec![1u8; 4 << 20]).unwrap();
    let out = work.join("out");
    let path = path_with(&[&link.bin(), &venv.join("bin")]);
    let bench = Run::of(
        Command::new(venv.join("bin/bench-fio"))
            .current_dir(work)
            .env("PATH", &path)
            .env("STORBENCH_DB", work.join("results.db"))
            .args(["--target", target.to_str().unwrap(), "--type", "file"])
            .args(["--size", "4M", "--output", out.to_str().unwrap()])
            .args(["--mode", "randread", "--engine", "libaio", "--direct", "0"])
            .args(["--iodepth", "1", "2", "--numjobs", "1", "2"])
            .args(["--runtime", "1", "--quiet"]),
    );
    assert!(
        bench.success(),
        "bench-fio: {}\n{}",
        bench.stdout,
        bench.stderr
    );
    // bench-fio's layout: OUT/<target name>/<bs>/<mode>-<iodepth>-<numjobs>.json
    let results = out.join("target.img").join("4k");
    for (qd, jobs) in [(1, 1), (1, 2), (2, 1), (2, 2)] {
        let file = results.join(format!("randread-{qd}-{jobs}.json"));
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e}; bench-fio said {}", file.display(), bench.stdout));
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(
            doc["fio version"]
                .as_str()
                .unwrap()
                .starts_with("fio-3.33 (storbench "),
            "{text}"
        );
        assert_eq!(doc["jobs"].as_array().unwrap().len(), jobs, "{text}");
        assert!(
            doc["jobs"][0]["read"]["total_ios"].as_u64().unwrap() > 0,
            "{text}"
        );
    }
    let chart = work.join("chart.png");
    let plot = Run::of(
        Command::new(venv.join("bin/fio-plot"))
            .current_dir(work)
            .env("PATH", &path)
            .env("MPLBACKEND", "Agg")
            .args(["-i", results.to_str().unwrap(), "-T", "storbench as fio"])
            .args(["-l", "-r", "randread", "-n", "1"])
            .args(["-o", chart.to_str().unwrap()]),
    );
    assert!(plot.success(), "fio-plot: {}\n{}", plot.stdout, plot.stderr);
    let png = std::fs::read(&chart).expect("fio-plot wrote its chart");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
}
