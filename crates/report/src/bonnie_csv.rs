//! bonnie++'s CSV lines: format "1.98" (50 fields, what bonnie++ 1.98 to 2.00a write and
//! Debian's `bon_csv2txt`/`bon_csv2html` read) and the 27-field format of bonnie++ 1.03,
//! which most published home-lab tables use.
//!
//! Where bonnie++ 2.00a writes a field wrongly we write it correctly, in the column the
//! converters read it from: `io_chunk_size` (6) holds a non-default chunk (2.00a leaves it
//! empty), `num_dirs` (24) holds the directory count and `file_chunk_size` (25) a
//! non-default file chunk (2.00a moves the directory count into 25 and loses the chunk),
//! and the `-x` header names all 50 fields (2.00a's names 48).

use std::fmt::Write as _;
use std::io::{self, Write};
use std::str::FromStr;

use storbench_model::result::{BonnieResult, BonnieTest, BonnieTestId, RunResult};

/// bonnie++'s default chunk, which the CSV leaves out.
const DEFAULT_CHUNK: u64 = 8192;

/// Which CSV layout to write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CsvFormat {
    /// bonnie++ 1.98 / 2.00 / 2.00a.
    #[default]
    V198,
    /// bonnie++ 1.00 to 1.03e.
    V103,
}

impl FromStr for CsvFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "csv" | "csv-1.98" | "1.98" => Ok(CsvFormat::V198),
            "csv-1.03" | "1.03" => Ok(CsvFormat::V103),
            _ => Err(format!(
                "unknown bonnie CSV format '{s}': use csv-1.98 (default) or csv-1.03"
            )),
        }
    }
}

/// The header line bonnie++ prints before the CSV lines of a `-x` run (no newline).
pub fn header(format: CsvFormat) -> &'static str {
    match format {
        CsvFormat::V198 => concat!(
            "format_version,bonnie_version,name,concurrency,seed,file_size,io_chunk_size,",
            "seek_count,seek_proc_count,putc,putc_cpu,put_block,put_block_cpu,rewrite,rewrite_cpu,",
            "getc,getc_cpu,get_block,get_block_cpu,seeks,seeks_cpu,num_files,max_size,",
            "min_size,num_dirs,file_chunk_size,seq_create,seq_create_cpu,seq_stat,",
            "seq_stat_cpu,seq_del,seq_del_cpu,ran_create,ran_create_cpu,ran_stat,ran_stat_cpu,",
            "ran_del,ran_del_cpu,putc_latency,put_block_latency,rewrite_latency,getc_latency,",
            "get_block_latency,seeks_latency,seq_create_latency,seq_stat_latency,",
            "seq_del_latency,ran_create_latency,ran_stat_latency,ran_del_latency"
        ),
        CsvFormat::V103 => concat!(
            "name,file_size,putc,putc_cpu,put_block,put_block_cpu,rewrite,rewrite_cpu,",
            "getc,getc_cpu,get_block,get_block_cpu,seeks,seeks_cpu,num_files,seq_create,",
            "seq_create_cpu,seq_stat,seq_stat_cpu,seq_del,seq_del_cpu,ran_create,",
            "ran_create_cpu,ran_stat,ran_stat_cpu,ran_del,ran_del_cpu"
        ),
    }
}

/// Writes the header line.
pub fn render_header(format: CsvFormat, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", header(format))
}

/// Writes one CSV line for a bonnie run; for a multi-host run one line per host, each
/// named by its host (bonnie++'s converters take one machine per line; the aggregate,
/// which no bonnie++ machine measured, stays out of the CSV).
pub fn render(run: &RunResult, format: CsvFormat, out: &mut dyn Write) -> io::Result<()> {
    let b = bonnie_of(run)?;
    match run.hosts.as_deref().and_then(|h| h.bonnie.as_ref()) {
        Some(h) => {
            for host in &h.hosts {
                writeln!(out, "{}", line(&host.result, format))?;
            }
            Ok(())
        }
        None => writeln!(out, "{}", line(b, format)),
    }
}

pub(crate) fn bonnie_of(run: &RunResult) -> io::Result<&BonnieResult> {
    run.bonnie.as_ref().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "this run has no bonnie results (it was not made by `storbench bonnie`)",
        )
    })
}

/// One CSV line, without the newline.
pub fn line(b: &BonnieResult, format: CsvFormat) -> String {
    match format {
        CsvFormat::V198 => line_198(b).join(","),
        CsvFormat::V103 => line_103(b).join(","),
    }
}

/// The columns of bonnie++'s IO tests and file tests, in its order.
pub(crate) const IO_TESTS: [BonnieTestId; 6] = [
    BonnieTestId::Putc,
    BonnieTestId::PutBlock,
    BonnieTestId::Rewrite,
    BonnieTestId::Getc,
    BonnieTestId::GetBlock,
    BonnieTestId::Seeks,
];
pub(crate) const FILE_TESTS: [BonnieTestId; 6] = [
    BonnieTestId::SeqCreate,
    BonnieTestId::SeqStat,
    BonnieTestId::SeqDel,
    BonnieTestId::RanCreate,
    BonnieTestId::RanStat,
    BonnieTestId::RanDel,
];

fn line_198(b: &BonnieResult) -> Vec<String> {
    let mut f: Vec<String> = vec![
        "1.98".into(),
        b.version.clone(),
        b.name.clone(),
        b.concurrency.to_string(),
        b.seed.to_string(),
    ];
    if b.file_size_mib > 0 {
        f.push(size_units(b.file_size_mib, &["M", "G"]));
        f.push(non_default_chunk(b.chunk_bytes));
        f.push(b.seeks.to_string());
        f.push(b.seekers.to_string());
        push_rates(&mut f, b, &IO_TESTS, CsvFormat::V198);
    } else {
        f.extend(std::iter::repeat_n(String::new(), 16));
    }
    if b.num_files > 0 {
        f.push(b.num_files.to_string());
        let (max, min) = match b.max_size {
            -1 => ("link".into(), String::new()),
            -2 => ("symlink".into(), String::new()),
            max if max > 0 => (max.to_string(), nonzero(b.min_size)),
            _ => (String::new(), String::new()),
        };
        f.push(max);
        f.push(min);
        f.push(if b.num_dirs > 1 {
            b.num_dirs.to_string()
        } else {
            String::new()
        });
        f.push(non_default_chunk(b.file_chunk_bytes));
        push_rates(&mut f, b, &FILE_TESTS, CsvFormat::V198);
    } else {
        f.extend(std::iter::repeat_n(String::new(), 17));
    }
    for id in IO_TESTS.iter().chain(&FILE_TESTS) {
        f.push(test(b, *id).map_or(String::new(), |t| latency(t.max_latency_ns)));
    }
    f
}

fn line_103(b: &BonnieResult) -> Vec<String> {
    let mut f = vec![b.name.clone()];
    if b.file_size_mib > 0 {
        let mut size = if b.file_size_mib.is_multiple_of(1024) {
            format!("{}G", b.file_size_mib / 1024)
        } else {
            format!("{}M", b.file_size_mib)
        };
        if b.chunk_bytes != DEFAULT_CHUNK {
            if b.chunk_bytes >= 1024 {
                let _ = write!(size, ":{}k", b.chunk_bytes / 1024);
            } else {
                let _ = write!(size, ":{}", b.chunk_bytes);
            }
        }
        f.push(size);
        push_rates(&mut f, b, &IO_TESTS, CsvFormat::V103);
    } else {
        f.extend(std::iter::repeat_n(String::new(), 13));
    }
    if b.num_files > 0 {
        f.push(files_spec(b, false));
        push_rates(&mut f, b, &FILE_TESTS, CsvFormat::V103);
    } else {
        f.extend(std::iter::repeat_n(String::new(), 13));
    }
    f
}

/// `16`, `16:link`, `8:4096:1024/2`: the file-test parameters as the text table and the
/// 1.03 CSV show them; `with_chunk` adds a non-default file chunk (`…/2:4k`).
pub(crate) fn files_spec(b: &BonnieResult, with_chunk: bool) -> String {
    let mut s = b.num_files.to_string();
    match b.max_size {
        -1 => s.push_str(":link"),
        -2 => s.push_str(":symlink"),
        max if max > 0 => {
            let _ = write!(s, ":{max}:{}", b.min_size);
        }
        _ => {}
    }
    if b.num_dirs > 1 {
        let _ = write!(s, "/{}", b.num_dirs);
    }
    if with_chunk && b.file_chunk_bytes != DEFAULT_CHUNK {
        let _ = write!(s, ":{}", size_units(b.file_chunk_bytes, &["", "k", "m"]));
    }
    s
}

fn push_rates(f: &mut Vec<String>, b: &BonnieResult, ids: &[BonnieTestId], format: CsvFormat) {
    for id in ids {
        match test(b, *id) {
            None => f.extend([String::new(), String::new()]),
            Some(t) => match t.rate {
                None => f.extend(["+++++".to_string(), "+++".to_string()]),
                Some(rate) => {
                    f.push(csv_rate(*id, rate, format));
                    f.push(t.cpu_pct.map_or(String::new(), |c| (c as i64).to_string()));
                }
            },
        }
    }
}

/// KiB/s and files/s as whole numbers; seeks/s with one decimal below 1000 (1.98) or
/// always (1.03).
fn csv_rate(id: BonnieTestId, rate: f64, format: CsvFormat) -> String {
    if id != BonnieTestId::Seeks {
        return (rate as i64).to_string();
    }
    if format == CsvFormat::V198 && rate >= 1000.0 {
        format!("{rate:.0}")
    } else {
        format!("{rate:.1}")
    }
}

pub(crate) fn test(b: &BonnieResult, id: BonnieTestId) -> Option<&BonnieTest> {
    b.tests.iter().find(|t| t.id == id)
}

fn nonzero(v: u64) -> String {
    if v == 0 { String::new() } else { v.to_string() }
}

fn non_default_chunk(chunk: u64) -> String {
    if chunk == DEFAULT_CHUNK {
        String::new()
    } else {
        size_units(chunk, &["", "k", "m"])
    }
}

/// bonnie++'s `print_size`: divide by 1024 while it divides evenly and a larger unit is
/// left (`2048` MiB → `2G`, `4096` B → `4k`, `0` → `0` plus the first unit).
pub(crate) fn size_units(mut value: u64, units: &[&str]) -> String {
    let mut unit = 0;
    while value != 0 && value.is_multiple_of(1024) && unit + 1 < units.len() {
        value /= 1024;
        unit += 1;
    }
    format!("{value}{}", units[unit])
}

/// bonnie++'s latency: `NNNus` below 0.1 s, `NNNms` below 100 s, `NNNs` above; empty when
/// not measured.
pub fn latency(ns: Option<u64>) -> String {
    match ns {
        None | Some(0) => String::new(),
        Some(ns) if ns > 99_999_999_000 => format!("{}s", ns / 1_000_000_000),
        Some(ns) if ns > 99_999_000 => format!("{}ms", ns / 1_000_000),
        Some(ns) => format!("{}us", ns / 1000),
    }
}

/// A result with the figures of a real bonnie++ 2.00a run, for reporter tests.
#[cfg(test)]
pub(crate) mod sample {
    use storbench_model::result::{BonnieResult, BonnieTest, BonnieTestId};

    /// `bonnie++ -s 512M -r 256 -n 8:4096:1024:2 -m anchor` (reference doc §6.4/6.5).
    pub fn anchor() -> BonnieResult {
        use BonnieTestId::*;
        let t = |id, rate: Option<f64>, cpu: f64, lat_us: u64| BonnieTest {
            id,
            rate,
            cpu_pct: rate.map(|_| cpu),
            elapsed_ns: if rate.is_some() {
                2_000_000_000
            } else {
                100_000_000
            },
            max_latency_ns: Some(lat_us * 1000),
            span: None,
        };
        BonnieResult {
            name: "anchor".into(),
            version: "2.00a".into(),
            concurrency: 1,
            seed: 1795972858,
            file_size_mib: 512,
            chunk_bytes: 8192,
            seeks: 8192,
            seekers: 5,
            num_files: 8,
            max_size: 4096,
            min_size: 1024,
            num_dirs: 2,
            file_chunk_bytes: 8192,
            compressible: true,
            target_compression: None,
            compression_unknown: None,
            direct: false,
            fsync_each_write: false,
            tests: vec![
                t(Putc, Some(836.0), 98.0, 21385),
                t(PutBlock, Some(250784.0), 51.0, 957),
                t(Rewrite, Some(458356.0), 35.0, 1887),
                t(Getc, Some(1325.0), 99.0, 11173),
                t(GetBlock, None, 0.0, 362),
                t(Seeks, Some(14015.0), 47.0, 17761),
                t(SeqCreate, Some(4990.0), 85.0, 1375),
                t(SeqStat, None, 0.0, 4080),
                t(SeqDel, Some(5170.0), 24.0, 2819),
                t(RanCreate, Some(1817.0), 95.0, 5957),
                t(RanStat, None, 0.0, 112),
                t(RanDel, Some(4039.0), 24.0, 4199),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_bonnie_2_00a_except_its_misplaced_num_dirs() {
        let real = "1.98,2.00a,anchor,1,1795972858,512M,,8192,5,836,98,250784,51,458356,35,\
                    1325,99,+++++,+++,14015,47,8,4096,1024,,2,4990,85,+++++,+++,5170,24,1817,95,\
                    +++++,+++,4039,24,21385us,957us,1887us,11173us,362us,17761us,1375us,4080us,\
                    2819us,5957us,112us,4199us";
        let ours = line(&sample::anchor(), CsvFormat::V198);
        let (r, o): (Vec<_>, Vec<_>) = (real.split(',').collect(), ours.split(',').collect());
        assert_eq!(o.len(), 50);
        for i in 0..50 {
            match i {
                24 => assert_eq!(o[i], "2", "num_dirs goes in num_dirs"),
                25 => assert_eq!(o[i], "", "default file chunk stays empty"),
                _ => assert_eq!(o[i], r[i], "field {i}"),
            }
        }
    }

    #[test]
    fn format_1_03_has_27_fields() {
        let l = line(&sample::anchor(), CsvFormat::V103);
        assert_eq!(
            l,
            "anchor,512M,836,98,250784,51,458356,35,1325,99,+++++,+++,14015.0,47,\
             8:4096:1024/2,4990,85,+++++,+++,5170,24,1817,95,+++++,+++,4039,24"
        );
        let mut b = sample::anchor();
        b.file_size_mib = 0;
        b.num_files = 0;
        assert_eq!(line(&b, CsvFormat::V103).split(',').count(), 27);
        assert_eq!(line(&b, CsvFormat::V198).split(',').count(), 50);
    }

    #[test]
    fn non_default_chunks_are_kept() {
        let mut b = sample::anchor();
        b.chunk_bytes = 4096;
        b.file_chunk_bytes = 16384;
        b.num_dirs = 1;
        b.min_size = 0;
        let f: Vec<String> = line(&b, CsvFormat::V198)
            .split(',')
            .map(String::from)
            .collect();
        assert_eq!(
            (f[6].as_str(), f[24].as_str(), f[25].as_str()),
            ("4k", "", "16k")
        );
        assert_eq!((f[22].as_str(), f[23].as_str()), ("4096", ""));
        assert!(line(&b, CsvFormat::V103).starts_with("anchor,512M:4k,"));
    }

    #[test]
    fn tests_that_did_not_run_are_empty() {
        let mut b = sample::anchor();
        b.tests
            .retain(|t| !matches!(t.id, BonnieTestId::Putc | BonnieTestId::Getc));
        let f: Vec<String> = line(&b, CsvFormat::V198)
            .split(',')
            .map(String::from)
            .collect();
        for i in [9, 10, 15, 16, 38, 41] {
            assert_eq!(f[i], "", "field {i}");
        }
    }

    #[test]
    fn sizes_as_bonnie_prints_them() {
        assert_eq!(size_units(512, &["M", "G"]), "512M");
        assert_eq!(size_units(2048, &["M", "G"]), "2G");
        assert_eq!(size_units(1536, &["M", "G"]), "1536M");
        assert_eq!(size_units(4096, &["", "k", "m"]), "4k");
        assert_eq!(size_units(1 << 20, &["", "k", "m"]), "1m");
        assert_eq!(size_units(512, &["", "k", "m"]), "512");
    }

    #[test]
    fn latency_units() {
        assert_eq!(latency(None), "");
        assert_eq!(latency(Some(0)), "");
        assert_eq!(latency(Some(964_123)), "964us");
        assert_eq!(latency(Some(99_999_000)), "99999us");
        assert_eq!(latency(Some(100_000_000)), "100ms");
        assert_eq!(latency(Some(12_345_678_901)), "12345ms");
        assert_eq!(latency(Some(150_000_000_000)), "150s");
    }

    #[test]
    fn formats_parse() {
        assert_eq!("csv-1.03".parse::<CsvFormat>(), Ok(CsvFormat::V103));
        assert_eq!("csv".parse::<CsvFormat>(), Ok(CsvFormat::V198));
        assert!("csv-2".parse::<CsvFormat>().is_err());
        assert_eq!(header(CsvFormat::V198).split(',').count(), 50);
        assert_eq!(header(CsvFormat::V103).split(',').count(), 27);
        // Each name once, so csv.DictReader and friends keep every column.
        for format in [CsvFormat::V198, CsvFormat::V103] {
            let names: Vec<&str> = header(format).split(',').collect();
            let unique: std::collections::HashSet<&&str> = names.iter().collect();
            assert_eq!(unique.len(), names.len(), "{names:?}");
        }
    }
}
