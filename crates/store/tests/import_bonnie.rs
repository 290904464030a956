//! Import of bonnie++ CSV: a line from the installed bonnie++, and fixed lines of formats 1.03,
//! 1.9x and 1.98 (bonnie++ 2.00a, with its quirks).

use std::process::Command;

use storbench_model::result::{BonnieResult, BonnieTestId as T, RunMode};
use storbench_store::import::import_text;

/// Real 2.00a lines (reference doc §6.5): `+++++` fields, an empty io_chunk_size column, and
/// num_dirs written in the file_chunk_size column.
const LINE_200A: &str = "1.98,2.00a,anchor,1,1795972858,512M,,8192,5,836,98,250784,51,458356,35,1325,99,+++++,+++,14015,47,8,4096,1024,,2,4990,85,+++++,+++,5170,24,1817,95,+++++,+++,4039,24,21385us,957us,1887us,11173us,362us,17761us,1375us,4080us,2819us,5957us,112us,4199us";
/// The 48-name header bonnie++ 2.00a prints with `-x`, although its lines have 50 fields.
const HEADER_200A: &str = "format_version,bonnie_version,name,concurrency,seed,file_size,io_chunk_size,putc,putc_cpu,put_block,put_block_cpu,rewrite,rewrite_cpu,getc,getc_cpu,get_block,get_block_cpu,seeks,seeks_cpu,num_files,max_size,min_size,num_dirs,file_chunk_size,seq_create,seq_create_cpu,seq_stat,seq_stat_cpu,seq_del,seq_del_cpu,ran_create,ran_create_cpu,ran_stat,ran_stat_cpu,ran_del,ran_del_cpu,putc_latency,put_block_latency,rewrite_latency,getc_latency,get_block_latency,seeks_latency,seq_create_latency,seq_stat_latency,seq_del_latency,ran_create_latency,ran_stat_latency,ran_del_latency";
const LINE_197: &str = "1.97,1.97,oldbox,1,1400000000,4G,64k,800,98,100000,20,50000,10,2000,97,200000,15,300.5,5,16,link,,2,,1000,10,+++++,+++,2000,12,1100,11,+++++,+++,1900,13,20ms,1500us,800ms,30ms,200ms,2s,300us,500us,600us,310us,40us,700us";
const LINE_103: &str = "antique,300M:4k,12345,98,45678,20,23456,10,34567,97,123456,25,150.5,1,16:1000:100/4,+++++,+++,+++++,+++,5000,40,6000,50,+++++,+++,7000,60";

fn bonnie(runs: &[storbench_model::result::RunResult], i: usize) -> &BonnieResult {
    assert_eq!(runs[i].mode, RunMode::Bonnie);
    runs[i].bonnie.as_ref().unwrap()
}

fn test(b: &BonnieResult, id: T) -> (Option<f64>, Option<f64>, Option<u64>) {
    let t = b
        .tests
        .iter()
        .find(|t| t.id == id)
        .unwrap_or_else(|| panic!("{id:?} missing"));
    (t.rate, t.cpu_pct, t.max_latency_ns)
}

#[test]
fn format_198_from_bonnie_200a_with_its_quirks() {
    let text = format!("{HEADER_200A}\n{LINE_200A}\n");
    let runs = import_text("b.csv", &text, 1_700_000_000_000).unwrap();
    assert_eq!(runs.len(), 1, "the header line is skipped");
    assert_eq!(runs[0].tool_version, "bonnie++ 2.00a");
    assert_eq!(runs[0].started_unix_ms, 1_700_000_000_000);
    let b = bonnie(&runs, 0);
    assert_eq!((b.name.as_str(), b.version.as_str()), ("anchor", "2.00a"));
    assert_eq!(
        (b.concurrency, b.seed, b.file_size_mib),
        (1, 1_795_972_858, 512)
    );
    assert_eq!((b.chunk_bytes, b.seeks, b.seekers), (8192, 8192, 5));
    assert_eq!((b.num_files, b.max_size, b.min_size), (8, 4096, 1024));
    assert_eq!(
        (b.num_dirs, b.file_chunk_bytes),
        (2, 8192),
        "num_dirs from the chunk column"
    );
    assert_eq!(
        test(b, T::Putc),
        (Some(836.0), Some(98.0), Some(21_385_000))
    );
    assert_eq!(
        test(b, T::PutBlock),
        (Some(250_784.0), Some(51.0), Some(957_000))
    );
    assert_eq!(
        test(b, T::GetBlock),
        (None, None, Some(362_000)),
        "+++++ / +++"
    );
    assert_eq!(
        test(b, T::Seeks),
        (Some(14_015.0), Some(47.0), Some(17_761_000))
    );
    assert_eq!(
        test(b, T::SeqCreate),
        (Some(4990.0), Some(85.0), Some(1_375_000))
    );
    assert_eq!(
        test(b, T::RanDel),
        (Some(4039.0), Some(24.0), Some(4_199_000))
    );
    assert_eq!(b.tests.len(), 12);
}

#[test]
fn format_19x() {
    let runs = import_text("old.csv", LINE_197, 0).unwrap();
    let b = bonnie(&runs, 0);
    assert_eq!(
        (b.version.as_str(), b.file_size_mib, b.chunk_bytes),
        ("1.97", 4096, 65536)
    );
    assert_eq!((b.seeks, b.seekers), (8192, 5), "1.9x defaults");
    assert_eq!((b.num_files, b.max_size, b.num_dirs), (16, -1, 2));
    assert_eq!(
        test(b, T::Seeks),
        (Some(300.5), Some(5.0), Some(2_000_000_000))
    );
    assert_eq!(
        test(b, T::Rewrite),
        (Some(50_000.0), Some(10.0), Some(800_000_000))
    );
    assert_eq!(test(b, T::SeqStat), (None, None, Some(500_000)));
}

#[test]
fn format_103() {
    let runs = import_text("ancient.csv", &format!("\n# from 2004\n{LINE_103}\n"), 0).unwrap();
    let b = bonnie(&runs, 0);
    assert_eq!((b.name.as_str(), b.version.as_str()), ("antique", "1.03"));
    assert_eq!((b.file_size_mib, b.chunk_bytes, b.seekers), (300, 4096, 3));
    assert_eq!(
        (b.num_files, b.max_size, b.min_size, b.num_dirs),
        (16, 1000, 100, 4)
    );
    assert_eq!(
        test(b, T::Putc),
        (Some(12_345.0), Some(98.0), None),
        "no latency in 1.03"
    );
    assert_eq!(test(b, T::Seeks), (Some(150.5), Some(1.0), None));
    assert_eq!(test(b, T::SeqCreate), (None, None, None));
    assert_eq!(test(b, T::RanDel), (Some(7000.0), Some(60.0), None));
}

#[test]
fn several_lines_are_several_runs_and_errors_name_the_line() {
    let text = format!("{LINE_200A}\n{LINE_197}\n{LINE_103}\n");
    assert_eq!(import_text("all.csv", &text, 0).unwrap().len(), 3);

    let bad = format!("{LINE_200A}\n{}\n", LINE_200A.replace("836", "fast"));
    let err = import_text("all.csv", &bad, 0).unwrap_err();
    assert_eq!(err.to_string(), "all.csv:2: bad rate value 'fast'");
    let err = import_text("x.csv", "1.98,2.00a,short\n", 0).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("x.csv:1: bonnie++ CSV format 1.98 has 50 fields")
    );
    let err = import_text("x.csv", "hello world\n", 0).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("x.csv:1: not a bonnie++ CSV line"),
        "{err}"
    );
    let short = LINE_200A.replace("21385us", "21385");
    let err = import_text("x.csv", &short, 0).unwrap_err();
    assert!(err.to_string().contains("bad latency '21385'"), "{err}");
}

#[test]
fn csv_from_the_installed_bonnie() {
    if Command::new("bonnie++").arg("-h").output().is_err() {
        eprintln!("SKIP: bonnie++ is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("bonnie++")
        .args([
            "-d",
            dir.path().to_str().unwrap(),
            "-s",
            "0",
            "-n",
            "1",
            "-u",
            "root",
        ])
        .args(["-m", "ci-box", "-q"])
        .output()
        .expect("run bonnie++");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8(out.stdout).unwrap();
    let runs = import_text("bonnie.csv", &csv, 0).unwrap();
    let b = bonnie(&runs, 0);
    assert_eq!(b.name, "ci-box");
    assert_eq!(b.num_files, 1);
    assert_eq!(b.file_size_mib, 0, "-s 0 skips the IO tests");
    let ids: Vec<T> = b.tests.iter().map(|t| t.id).collect();
    assert_eq!(
        ids,
        vec![
            T::SeqCreate,
            T::SeqStat,
            T::SeqDel,
            T::RanCreate,
            T::RanStat,
            T::RanDel
        ]
    );
    // Each rate is either a number or +++++ (too fast), never lost; latencies always parse.
    for t in &b.tests {
        assert_eq!(t.rate.is_none(), t.cpu_pct.is_none(), "{:?}", t.id);
        assert!(t.max_latency_ns.is_some(), "{:?}", t.id);
    }
}

/// bonnie++ 2.00a without `-q` (real output): the table, then the CSV line, both on stdout.
/// The table is skipped; a stray line elsewhere is still an error.
#[test]
fn table_before_the_csv_line_is_skipped() {
    let out = "Version 2.00a       ------Sequential Create------ --------Random Create--------
hostD               -Create-- --Read--- -Delete-- -Create-- --Read--- -Delete--
              files  /sec %CP  /sec %CP  /sec %CP  /sec %CP  /sec %CP  /sec %CP
                  1 +++++ +++ +++++ +++ +++++ +++ +++++ +++ +++++ +++ +++++ +++
Latency                98us      38us     209us      61us      10us      35us
1.98,2.00a,hostD,1,1796067220,,,,,,,,,,,,,,,,,1,,,,,+++++,+++,+++++,+++,+++++,+++,+++++,+++,+++++,+++,+++++,+++,,,,,,,98us,38us,209us,61us,10us,35us
";
    let runs = import_text("nq.out", out, 0).unwrap();
    assert_eq!(runs.len(), 1);
    let b = bonnie(&runs, 0);
    assert_eq!(b.name, "hostD");
    assert_eq!(test(b, T::SeqDel), (None, None, Some(209_000)));
    let err = import_text("x.csv", &format!("{LINE_200A}\nstray text\n"), 0).unwrap_err();
    assert!(err.to_string().starts_with("x.csv:2: "), "{err}");
}

/// A 1.03 line's first field is the machine name (`-m`), which may well be a number.
#[test]
fn format_103_with_a_numeric_machine_name() {
    let line = LINE_103.replacen("antique", "2024", 1);
    let runs = import_text("n.csv", &line, 0).unwrap();
    assert_eq!(bonnie(&runs, 0).name, "2024");
    assert_eq!(bonnie(&runs, 0).version, "1.03");
}
