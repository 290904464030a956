//! The HTML report in a real browser: headless Chromium (Debian's `chromium`) loads the file
//! with networking disabled; the rendered DOM must show every chart drawn and no script
//! error, and Chromium's log must hold no console error or blocked request. A screenshot is
//! kept under the target dir (or `$STORBENCH_ARTIFACTS`) and its path printed.
//! Without Chromium the browser tests skip with a reason, unless
//! `STORBENCH_REQUIRE_BROWSER=1` (CI) makes that a failure.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use storbench_model::result::*;
use storbench_report::compare::NamedRun;
use storbench_report::html::render;

fn job(name: &str, mb_s: u64, lat_base: u64, secs: u64) -> JobResult {
    let mut dirs: [DirResult; 3] = Default::default();
    for (d, share) in [(0usize, 3u64), (1, 1)] {
        let dir = &mut dirs[d];
        dir.io_bytes = mb_s * 1_000_000 * secs * share / 4;
        dir.total_ios = dir.io_bytes / 4096;
        dir.runtime_ms = secs * 1000;
        for i in 0..2000u64 {
            dir.clat.record(lat_base + (i * i) % (lat_base * 20));
        }
    }
    let timeline = (1..=secs)
        .map(|s| TimelinePoint {
            t_ms: s * 1000,
            bytes: [mb_s * 750_000 + s * 10_000, mb_s * 250_000, 0],
            ios: [mb_s * 183, mb_s * 61, 0],
            lat_sum_ns: [0; 3],
        })
        .collect();
    JobResult {
        name: name.into(),
        groupid: 0,
        jobnum: 0,
        jobs: 1,
        pid: 1,
        error: 0,
        error_text: None,
        description: None,
        options: Vec::new(),
        header: JobHeader::default(),
        settings: ReportSettings::default(),
        targets: vec!["/mnt/pool".into()],
        elapsed_ms: secs * 1000,
        runtime_ms: secs * 1000,
        end_unix_ms: 0,
        dirs,
        sync: SyncResult::default(),
        cpu: CpuUsage {
            usr_ns: 400_000_000,
            sys_ns: 900_000_000,
            ..CpuUsage::default()
        },
        depth: DepthStats::default(),
        lat_buckets: LatBuckets::default(),
        timeline,
        engine_details: Vec::new(),
        disks: Vec::new(),
        server_cpu: Vec::new(),
        measured: Default::default(),
        steadystate: None,
        latency_target: None,
    }
}

fn run(scale: u64, hostname: &str) -> RunResult {
    RunResult {
        command_line: vec!["storbench".into(), "fio".into(), "nas.fio".into()],
        job_files: vec![(
            "nas.fio".into(),
            "[seq]\nrw=rw\n<script>alert(1)</script>\n".into(),
        )],
        groups: vec![GroupResult {
            id: 0,
            group_reporting: false,
            jobs: vec![
                job("seq", 100 * scale, 20_000 / scale, 5),
                job("rand", 10 * scale, 90_000 / scale, 5),
            ],
        }],
        notes: vec![Note {
            level: NoteLevel::Warning,
            code: "warn.page-cache".into(),
            message: "test file smaller than RAM".into(),
        }],
        environment: Some(Environment {
            hostname: hostname.into(),
            cpu_model: "AMD EPYC".into(),
            ncpus: 2,
            mem_bytes: 24 << 30,
            kernel: "6.18.44".into(),
            storbench_version: "0.1.0".into(),
            targets: vec![TargetInfo {
                target: "/mnt/pool".into(),
                fs_type: Some("zfs".into()),
                rotational: Some(scale == 1),
                ..TargetInfo::default()
            }],
        }),
        ..RunResult::new(
            RunMode::Fio,
            "storbench-0.1.0".into(),
            1_795_972_858_000,
            1_795_972_868_000,
        )
    }
}

fn report_html() -> String {
    let runs = [run(1, "hdd-box"), run(3, "ssd-box"), run(2, "nvme-box")];
    let named: Vec<NamedRun> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| NamedRun {
            id: i as i64 + 1,
            name: ["HDD", "SSD", "NVMe"][i].into(),
            run: r,
        })
        .collect();
    let mut out = Vec::new();
    render(&named, 0, &Default::default(), &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn bonnie(put_block: f64, seq_create: Option<f64>) -> RunResult {
    let mut r = run(1, "nas");
    r.mode = RunMode::Bonnie;
    r.groups.clear();
    let test = |id, rate, cpu| BonnieTest {
        id,
        rate,
        cpu_pct: cpu,
        elapsed_ns: 1_000_000_000,
        max_latency_ns: Some(950_000),
        span: None,
    };
    r.bonnie = Some(BonnieResult {
        name: "nas".into(),
        tests: vec![
            test(BonnieTestId::PutBlock, Some(put_block), Some(51.0)),
            test(BonnieTestId::Seeks, Some(14_015.0), Some(47.0)),
            test(
                BonnieTestId::SeqCreate,
                seq_create,
                seq_create.map(|_| 85.0),
            ),
        ],
        ..BonnieResult::default()
    });
    r
}

/// Every `http://`/`https://` must sit inside a `/*! … */` licence comment.
#[test]
fn no_urls_outside_licence_comments() {
    let html = report_html();
    let mut rest = html.as_str();
    let mut outside = String::new();
    while let Some(start) = rest.find("/*!") {
        outside.push_str(&rest[..start]);
        let end = rest[start..]
            .find("*/")
            .map_or(rest.len(), |e| start + e + 2);
        rest = &rest[end..];
    }
    outside.push_str(rest);
    assert!(!outside.contains("http://") && !outside.contains("https://"));
    assert!(html.contains("Content-Security-Policy"));
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"),
        "job file text escaped"
    );
    assert!(
        html.contains("Permission is hereby granted"),
        "uPlot's licence travels with it"
    );
}

#[test]
fn report_has_tables_and_environment_without_javascript() {
    let html = report_html();
    for needed in [
        "<h3>seq read</h3>",
        "<h3>rand write</h3>",
        "hdd-box",
        "nvme-box",
        "zfs",
        "+200.0%",
        "test file smaller than RAM",
    ] {
        assert!(html.contains(needed), "missing {needed}");
    }
}

/// Renders `runs` (named b0, b1, …) in Chromium and returns its DOM, with no script error
/// and nothing wrong in its log.
fn chromium_dom_of_bonnie(exe: &Path, runs: &[RunResult]) -> String {
    let named: Vec<NamedRun> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| NamedRun {
            id: i as i64 + 1,
            name: format!("b{i}"),
            run: r,
        })
        .collect();
    let mut html = Vec::new();
    render(&named, 0, &Default::default(), &mut html).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bonnie.html");
    std::fs::write(&file, html).unwrap();
    let (dom, log) = run_chromium(exe, dir.path(), &file, &["--dump-dom".into()]);
    assert_eq!(
        attr(&dom, "data-errors").as_deref(),
        Some("0"),
        "{:?}",
        attr(&dom, "data-error-text")
    );
    assert_eq!(log_problems(&log), Vec::<String>::new());
    dom
}

/// bonnie runs have no latency histograms or timelines: only bar charts are drawn, and the
/// other sections say why they are empty. A test one run finished too fast to time
/// (`+++++`) has no bar in that run and is named under the chart.
#[test]
fn chromium_renders_bonnie_runs() {
    let Some(exe) = chromium() else {
        eprintln!("SKIP: chromium is not installed (apt-get install chromium)");
        return;
    };
    let dom = chromium_dom_of_bonnie(
        &exe,
        &[bonnie(250_784.0, None), bonnie(300_000.0, Some(4990.0))],
    );
    // One bar chart per metric and unit: MB/s, MiB/s, seeks/s, files/s, max latency, %CP.
    assert_eq!(attr(&dom, "data-charts-expected").as_deref(), Some("6"));
    assert_eq!(attr(&dom, "data-charts-drawn").as_deref(), Some("6"));
    assert!(dom.contains("No latency histograms in these runs"));
    assert!(dom.contains("No per-second samples in these runs"));
    assert!(
        dom.contains("b0 finished too fast to measure"),
        "+++++ note in the tables"
    );
    assert!(
        dom.contains("<td class=\"num\">+++++</td>"),
        "+++++ cell in the tables"
    );
    assert!(
        dom.contains(
            "too fast to measure (bonnie++'s +++++), no bar: b0 \u{2014} Sequential Create"
        ),
        "+++++ named under the files/s chart"
    );
}

/// A metric whose every figure is bonnie's `+++++` says "too fast to measure" in its panel
/// instead of drawing empty axes.
#[test]
fn chromium_names_a_chart_of_only_too_fast_results() {
    let Some(exe) = chromium() else {
        eprintln!("SKIP: chromium is not installed (apt-get install chromium)");
        return;
    };
    let dom = chromium_dom_of_bonnie(&exe, &[bonnie(250_784.0, None), bonnie(300_000.0, None)]);
    // MB/s, MiB/s, seeks/s, max latency and %CP are drawn; files/s has no figure to draw.
    assert_eq!(attr(&dom, "data-charts-expected").as_deref(), Some("5"));
    assert_eq!(attr(&dom, "data-charts-drawn").as_deref(), Some("5"));
    assert!(
        dom.contains(
            "too fast to measure (bonnie++'s +++++): b0 \u{2014} Sequential Create, b1 \u{2014} Sequential Create"
        ),
        "{dom}"
    );
    assert_eq!(dom.matches("<canvas").count(), 5);
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let ok = Command::new(name)
                .arg("--version")
                .output()
                .ok()?
                .status
                .success();
            ok.then(|| PathBuf::from(name))
        })
}

/// Kills the browser by its PID if a test fails or times out.
struct Browser(Child);

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs headless Chromium on `file` with networking disabled; returns (stdout, stderr).
fn run_chromium(exe: &Path, profile: &Path, file: &Path, extra: &[String]) -> (String, String) {
    let out_path = profile.join("stdout.txt");
    let err_path = profile.join("stderr.txt");
    let child = Command::new(exe)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--mute-audio",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--proxy-server=127.0.0.1:9",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=10000",
            "--window-size=1280,3200",
        ])
        .arg(format!(
            "--user-data-dir={}",
            profile.join("profile").display()
        ))
        .args(extra)
        .arg(format!("file://{}", file.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("start chromium");
    let mut browser = Browser(child);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if browser.0.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "chromium did not finish in 120 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(browser);
    (
        std::fs::read_to_string(out_path).unwrap_or_default(),
        std::fs::read_to_string(err_path).unwrap_or_default(),
    )
}

/// Lines of Chromium's log that show a console message (our page logs none), a blocked
/// request or a failed name lookup.
fn log_problems(log: &str) -> Vec<String> {
    log.lines()
        .filter(|line| {
            let lower = line.to_lowercase();
            line.contains(":CONSOLE")
                || lower.contains("content security policy")
                || lower.contains("err_name_not_resolved")
        })
        .map(str::to_string)
        .collect()
}

/// The checks above can fail: a page with a console error, a script error and a blocked
/// image request is caught by each of them.
#[test]
fn chromium_checks_catch_a_broken_page() {
    let Some(exe) = chromium() else {
        eprintln!("SKIP: chromium is not installed (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.html");
    let page = "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" \
        content=\"default-src 'none'; script-src 'unsafe-inline'\"></head><body>\
        <img src=\"http://example.invalid/x.png\"><script>console.error('boom');\
        document.body.setAttribute('data-ready', '1'); missing();</script></body></html>";
    std::fs::write(&file, page).unwrap();
    let (dom, log) = run_chromium(&exe, dir.path(), &file, &["--dump-dom".into()]);
    assert_eq!(attr(&dom, "data-ready").as_deref(), Some("1"));
    let problems = log_problems(&log).join("\n");
    assert!(problems.contains("boom"), "{log}");
    assert!(problems.contains("missing is not defined"), "{log}");
    assert!(problems.contains("Content Security Policy"), "{log}");
}

fn attr(dom: &str, name: &str) -> Option<String> {
    let key = format!("{name}=\"");
    let start = dom.find(&key)? + key.len();
    Some(dom[start..].split('"').next()?.to_string())
}

fn artifacts_dir() -> PathBuf {
    std::env::var_os("STORBENCH_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser"))
}

#[test]
fn chromium_renders_every_chart_without_errors() {
    let Some(exe) = chromium() else {
        if std::env::var_os("STORBENCH_REQUIRE_BROWSER").is_some() {
            panic!("chromium is required (STORBENCH_REQUIRE_BROWSER is set) but not installed");
        }
        eprintln!("SKIP: chromium is not installed (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.html");
    std::fs::write(&file, report_html()).unwrap();

    let (dom, log) = run_chromium(&exe, dir.path(), &file, &["--dump-dom".into()]);
    assert_eq!(
        attr(&dom, "data-ready").as_deref(),
        Some("1"),
        "script did not finish:\n{log}"
    );
    assert_eq!(
        attr(&dom, "data-errors").as_deref(),
        Some("0"),
        "script errors:\n{log}"
    );
    let expected: usize = attr(&dom, "data-charts-expected").unwrap().parse().unwrap();
    let drawn: usize = attr(&dom, "data-charts-drawn").unwrap().parse().unwrap();
    // 3 runs share 4 tests (seq/rand × read/write): 7 metric bar charts, 4 latency
    // curves, 4 latency histograms, 4 × 2 timelines.
    assert_eq!(expected, 7 + 4 + 4 + 8);
    assert_eq!(drawn, expected);
    assert_eq!(dom.matches("<canvas").count(), expected);
    assert!(dom.contains("class=\"uplot"), "uPlot did not build its DOM");
    assert_eq!(log_problems(&log), Vec::<String>::new());

    let shots = artifacts_dir();
    std::fs::create_dir_all(&shots).unwrap();
    let png = shots.join("report.png");
    let _ = std::fs::remove_file(&png);
    let (_, log) = run_chromium(
        &exe,
        dir.path(),
        &file,
        &[format!("--screenshot={}", png.display())],
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot ({e}):\n{log}"));
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "screenshot looks empty"
    );
    std::fs::copy(&file, shots.join("report.html")).unwrap();
    println!("screenshot: {}", png.display());
    eprintln!("screenshot: {}", png.display());
}

/// A quick run as two machines made it: per-second samples whose times differ by a few ms
/// (2.000 s here, 2.004 s there), which must still draw as one unbroken line per run.
fn quick(hostname: &str, speed: u64, skew_ms: u64) -> RunResult {
    let mut r = common::sample::quick_run();
    for j in r.groups.iter_mut().flat_map(|g| &mut g.jobs) {
        for d in &mut j.dirs {
            d.io_bytes = d.io_bytes * speed / 2;
            d.total_ios = d.total_ios * speed / 2;
        }
        j.timeline = (1..=5u64)
            .map(|s| TimelinePoint {
                t_ms: s * 1000 + skew_ms,
                bytes: [s * 1_000_000 * speed, s * 500_000 * speed, 0],
                ios: [s * 244 * speed, s * 122 * speed, 0],
                lat_sum_ns: [0; 3],
            })
            .collect();
    }
    r.environment = Some(Environment {
        hostname: hostname.into(),
        cpu_model: "AMD EPYC".into(),
        ncpus: 2,
        mem_bytes: 16 << 30,
        kernel: "6.18.44".into(),
        storbench_version: "0.1.0".into(),
        targets: vec![TargetInfo {
            target: format!("nfs://{hostname}-nas.lan/tank"),
            fs_type: Some("nfs".into()),
            server: Some(format!("{hostname}-nas.lan:2049")),
            ..TargetInfo::default()
        }],
    });
    r.command_line = vec![
        "/home/ann/.cargo/bin/storbench".into(),
        "--db".into(),
        "/home/ann/lab/results.db".into(),
        "quick".into(),
        format!("nfs://{hostname}-nas.lan/tank"),
    ];
    r
}

/// The page's text with `&#x2f;` read as `/`, as a browser shows it.
fn quick_report(opts: &storbench_report::html::Opts) -> String {
    // The template escapes `/` too; the checks read the text as a browser shows it.
    quick_report_exact(opts).replace("&#x2f;", "/")
}

fn quick_report_exact(opts: &storbench_report::html::Opts) -> String {
    let runs = [quick("hdd-box", 2, 0), quick("ssd-box", 3, 4)];
    let named: Vec<NamedRun> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| NamedRun {
            id: i as i64 + 1,
            name: ["before", "after"][i].into(),
            run: r,
        })
        .collect();
    let mut out = Vec::new();
    render(&named, 0, opts, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn shared_opts() -> storbench_report::html::Opts {
    storbench_report::html::Opts {
        title: Some("Home lab NAS".into()),
        privacy: storbench_report::privacy::Privacy {
            hide_host: true,
            show_paths: false,
        },
    }
}

/// --title, --hide-host and no local paths: checked in the page's text.
#[test]
fn shared_report_hides_hosts_and_paths() {
    let html = quick_report(&shared_opts());
    assert!(html.contains("<h1>Home lab NAS</h1>"));
    assert!(html.contains("<title>Home lab NAS</title>"));
    for hidden in ["hdd-box", "ssd-box", "/home/ann", "results.db", "--db"] {
        assert!(!html.contains(hidden), "{hidden} is in the report");
    }
    assert!(html.contains("nfs://(host)/tank"));
    let plain = quick_report(&Default::default());
    assert!(plain.contains("hdd-box") && !plain.contains("/home/ann"));
    let asked = quick_report(&storbench_report::html::Opts {
        privacy: storbench_report::privacy::Privacy {
            show_paths: true,
            ..Default::default()
        },
        ..Default::default()
    });
    assert!(asked.contains("/home/ann/lab/results.db"));
}

/// The card as an image: an SVG that parses, a PNG resvg drew with text in it.
#[test]
fn summary_card_as_svg_and_png() {
    let run = quick("hdd-box", 2, 0);
    let privacy = storbench_report::privacy::Privacy::default();
    let svg = storbench_report::card::svg(&run, Some("Home lab NAS"), &privacy).unwrap();
    assert_eq!(svg.matches("class=\"card-row\"").count(), 4, "{svg}");
    assert_eq!(svg.matches("class=\"mbps\"").count(), 8);
    assert!(svg.contains("SEQ1M") && svg.contains("Q8T1") && svg.contains("IOPS"));
    assert!(!svg.contains("NaN") && !svg.contains("inf"));
    let png = storbench_report::card::png(&svg).unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    // Text drawn with the embedded font makes a PNG far larger than blank boxes would.
    assert!(png.len() > 30_000, "PNG of {} bytes", png.len());
    let shots = artifacts_dir();
    std::fs::create_dir_all(&shots).unwrap();
    std::fs::write(shots.join("card.png"), &png).unwrap();
    std::fs::write(shots.join("card.svg"), &svg).unwrap();
    eprintln!("card: {}", shots.join("card.png").display());
    let bonnie_run = bonnie(250_784.0, None);
    assert!(storbench_report::card::svg(&bonnie_run, None, &privacy).is_none());
}

/// A report of two quick runs in Chromium: the cards first, every chart drawn, legends
/// naming the runs (never "--"), no NaN anywhere, rate bars on a log scale, and each
/// run's timeline one unbroken line although their sample times differ by 4 ms.
#[test]
fn chromium_renders_quick_report_for_sharing() {
    let Some(exe) = chromium() else {
        if std::env::var_os("STORBENCH_REQUIRE_BROWSER").is_some() {
            panic!("chromium is required (STORBENCH_REQUIRE_BROWSER is set) but not installed");
        }
        eprintln!("SKIP: chromium is not installed (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("quick.html");
    std::fs::write(&file, quick_report_exact(&shared_opts())).unwrap();
    let (dom, log) = run_chromium(&exe, dir.path(), &file, &["--dump-dom".into()]);
    assert_eq!(attr(&dom, "data-ready").as_deref(), Some("1"), "{log}");
    assert_eq!(
        attr(&dom, "data-errors").as_deref(),
        Some("0"),
        "{:?}",
        attr(&dom, "data-error-text")
    );
    assert_eq!(log_problems(&log), Vec::<String>::new());
    let expected: usize = attr(&dom, "data-charts-expected").unwrap().parse().unwrap();
    assert_eq!(attr(&dom, "data-charts-drawn"), Some(expected.to_string()));
    // 8 tests: bar charts per metric, and per test a percentile curve, a histogram and
    // two timelines.
    assert!(expected >= 8 * 4, "{expected} charts");
    assert_eq!(dom.matches("<figure class=\"card\"").count(), 2);
    assert_eq!(dom.matches("class=\"card-row\"").count(), 8);
    assert!(dom.find("id=\"summary\"") < dom.find("id=\"bars\""));
    assert!(!dom.contains("NaN"), "NaN in the page");
    let legends = legend_labels(&dom);
    assert!(!legends.is_empty());
    for l in &legends {
        assert!(l == "before" || l == "after", "legend {l:?}");
    }
    assert!(!dom.contains("u-value\">--"), "a legend shows \"--\"");
    assert!(
        dom.contains("data-scale=\"log\""),
        "MB/s bars not on a log scale"
    );
    assert_eq!(attr(&dom, "data-timeline-gaps").as_deref(), Some("0"));
    for section in ["histogram-charts", "timeline-charts"] {
        assert!(dom.contains(&format!("id=\"{section}\"")));
    }
    let shots = artifacts_dir();
    std::fs::create_dir_all(&shots).unwrap();
    let png = shots.join("quick-report.png");
    let _ = std::fs::remove_file(&png);
    let (_, log) = run_chromium(
        &exe,
        dir.path(),
        &file,
        &[format!("--screenshot={}", png.display())],
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot ({e}):\n{log}"));
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000);
    std::fs::copy(&file, shots.join("quick-report.html")).unwrap();
    eprintln!("screenshot: {}", png.display());
}

/// The texts of uPlot's legend labels (`<th>…<div class="u-label">NAME</div></th>`).
fn legend_labels(dom: &str) -> Vec<String> {
    dom.split("class=\"u-label\">")
        .skip(1)
        .filter_map(|rest| Some(rest.split('<').next()?.to_string()))
        .filter(|l| !l.is_empty())
        .collect()
}

/// The report's embedded data, as the page's script reads it.
fn embedded_json(html: &str) -> serde_json::Value {
    let open = r#"<script type="application/json" id="report-data">"#;
    let start = html.find(open).expect("no embedded data") + open.len();
    let len = html[start..]
        .find("</script>")
        .expect("data element not closed");
    serde_json::from_str(&html[start..start + len]).expect("embedded data is not JSON")
}

fn strings_of(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|v| strings_of(v, out)),
        serde_json::Value::Object(o) => o.values().for_each(|v| strings_of(v, out)),
        _ => {}
    }
}

/// Run names (labels) that try to close the data element, open a comment or start a script.
const HOSTILE: [&str; 3] = [
    "<!-- a",
    "</script><b>x",
    "<script>alert(1)</script>&\u{2028}",
];

fn hostile_report_html() -> String {
    let runs = [run(1, "hdd-box"), run(3, "ssd-box"), run(2, "nvme-box")];
    let named: Vec<NamedRun> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| NamedRun {
            id: i as i64 + 1,
            name: HOSTILE[i].into(),
            run: r,
        })
        .collect();
    let mut out = Vec::new();
    render(&named, 0, &Default::default(), &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn hostile_labels_leave_the_embedded_data_valid_json() {
    let html = hostile_report_html();
    let mut strings = Vec::new();
    strings_of(&embedded_json(&html), &mut strings);
    for name in HOSTILE {
        assert!(
            strings.iter().any(|s| s == name),
            "{name:?} not in the data"
        );
    }
    assert_eq!(html.matches("<!--").count(), html.matches("-->").count());
}

#[test]
fn chromium_draws_every_chart_of_hostile_labels() {
    let Some(exe) = chromium() else {
        if std::env::var_os("STORBENCH_REQUIRE_BROWSER").is_some() {
            panic!("chromium is required (STORBENCH_REQUIRE_BROWSER is set) but not installed");
        }
        eprintln!("SKIP: chromium is not installed (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.html");
    std::fs::write(&file, hostile_report_html()).unwrap();
    let (dom, log) = run_chromium(&exe, dir.path(), &file, &["--dump-dom".into()]);
    assert_eq!(attr(&dom, "data-ready").as_deref(), Some("1"), "{log}");
    assert_eq!(attr(&dom, "data-errors").as_deref(), Some("0"), "{log}");
    let expected: usize = attr(&dom, "data-charts-expected").unwrap().parse().unwrap();
    let drawn: usize = attr(&dom, "data-charts-drawn").unwrap().parse().unwrap();
    assert_eq!(expected, 7 + 4 + 4 + 8);
    assert_eq!(drawn, expected);
    assert!(!dom.contains("<b>x"), "a label became markup");
    assert_eq!(log_problems(&log), Vec::<String>::new());
}
