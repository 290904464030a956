//! bonnie++ CSV lines into the result model, one run per line. Formats: 1.03 (27 fields, no
//! version), 1.9x (48 fields) and 1.98 (50 fields, bonnie++ 1.98 to 2.00a). Header lines
//! (`name,…`, `format_version,…`, which in 2.00a names only 48 of the 50 fields), blank lines
//! and `#` comments are skipped, and so is the table bonnie++ prints before its CSV line
//! without `-q`.

use storbench_model::result::{BonnieResult, BonnieTest, BonnieTestId, RunMode, RunResult};

use super::{ImportError, empty_run, info_note};

use BonnieTestId::*;

const IO_TESTS: [BonnieTestId; 6] = [Putc, PutBlock, Rewrite, Getc, GetBlock, Seeks];
const FILE_TESTS: [BonnieTestId; 6] = [SeqCreate, SeqStat, SeqDel, RanCreate, RanStat, RanDel];

/// Parses every CSV line of `text`; `mtime_ms` dates the runs (bonnie++ writes no time).
pub fn parse_bonnie_csv(
    file: &str,
    text: &str,
    mtime_ms: u64,
) -> Result<Vec<RunResult>, ImportError> {
    let mut runs = Vec::new();
    let has_table = text.lines().any(is_table_heading);
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty()
            || line.starts_with('#')
            || line.starts_with("name,")
            || line.starts_with("format_version,")
            || (has_table && !line.contains(','))
        {
            continue;
        }
        let bonnie = parse_line(line).map_err(|m| ImportError::new(file, Some(i + 1), m))?;
        let mut run = empty_run(
            RunMode::Bonnie,
            format!("bonnie++ {}", bonnie.version),
            mtime_ms,
        );
        run.notes.push(info_note(
            "import.bonnie",
            format!(
                "imported from {file} line {}; dated by the file's modification time",
                i + 1
            ),
        ));
        run.bonnie = Some(bonnie);
        runs.push(run);
    }
    if runs.is_empty() {
        return Err(ImportError::new(file, None, "no bonnie++ CSV line found"));
    }
    Ok(runs)
}

/// bonnie++ without `-q` prints its table before the CSV line on stdout, so a saved run
/// (`bonnie++ … > result.txt`) holds both. The table's heading is `Version 2.00a  ------…`
/// (`Version  1.03 …` in 1.03); once one is seen, lines without a comma are table text.
fn is_table_heading(line: &str) -> bool {
    line.starts_with("Version ") && line.contains("------")
}

/// One line of any known format.
fn parse_line(line: &str) -> Result<BonnieResult, String> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    let version = fields[0];
    match (version, fields.len()) {
        ("1.98", 50) => {
            let mut f48 = fields.clone();
            let seeks = f48.remove(7);
            let seekers = f48.remove(7);
            let mut b = parse_19x(&f48)?;
            b.seeks = opt_num(seeks, "seeks")?.unwrap_or(b.seeks);
            b.seekers = opt_num(seekers, "seek_proc_count")?.map_or(b.seekers, |s| s as u32);
            Ok(b)
        }
        (v, 48) if v.starts_with("1.9") => parse_19x(&fields),
        // 1.03 has no version field: the first is the machine name, which may be a number.
        (v, 27) if !v.starts_with("1.9") => parse_103(&fields),
        (v, n) if v.starts_with("1.9") => Err(format!(
            "bonnie++ CSV format {v} has {} fields, this line has {n}",
            if v == "1.98" { 50 } else { 48 }
        )),
        (_, n) => Err(format!(
            "not a bonnie++ CSV line: expected 27 fields (1.03), 48 (1.9x) or 50 (1.98), \
             found {n}"
        )),
    }
}

/// The 48-field layout of 1.9x (and 1.98 without its seeks columns).
fn parse_19x(f: &[&str]) -> Result<BonnieResult, String> {
    let bonnie_version = f[1].to_string();
    let (file_size_mib, _) = parse_file_size(f[5])?;
    let mut b = defaults(f[2], bonnie_version.clone(), 5);
    b.concurrency = opt_num(f[3], "concurrency")?.unwrap_or(1) as u32;
    b.seed = opt_num(f[4], "seed")?.unwrap_or(0);
    b.file_size_mib = file_size_mib;
    b.chunk_bytes = opt_size(f[6], "io_chunk_size")?.unwrap_or(b.chunk_bytes);
    let (mut dirs, mut file_chunk) = (f[22], f[23]);
    if dirs.is_empty() && bonnie_version.starts_with("2.00") {
        // 2.00 writes num_dirs in the file_chunk_size column and leaves num_dirs empty.
        (dirs, file_chunk) = (file_chunk, "");
    }
    parse_file_params(&mut b, f[19], f[20], f[21], dirs, file_chunk)?;
    let io_lat = &f[36..42];
    let file_lat = &f[42..48];
    push_tests(&mut b, &IO_TESTS, &f[7..19], Some(io_lat))?;
    push_tests(&mut b, &FILE_TESTS, &f[24..36], Some(file_lat))?;
    Ok(b)
}

/// 1.03: `name,size[:chunk],putc,putc_cpu,…,seeks_cpu,num_files,seq_create,…,ran_del_cpu`.
fn parse_103(f: &[&str]) -> Result<BonnieResult, String> {
    let (file_size_mib, chunk) = parse_file_size(f[1])?;
    let mut b = defaults(f[0], "1.03".into(), 3);
    b.file_size_mib = file_size_mib;
    b.chunk_bytes = chunk.unwrap_or(b.chunk_bytes);
    // num_files is `N[:max:min][/dirs]`, `N:link` or `N:symlink`.
    let (files, dirs) = f[14].split_once('/').unwrap_or((f[14], ""));
    let mut parts = files.split(':');
    let num = parts.next().unwrap_or("");
    let max = parts.next().unwrap_or("");
    let min = parts.next().unwrap_or("");
    parse_file_params(&mut b, num, max, min, dirs, "")?;
    push_tests(&mut b, &IO_TESTS, &f[2..14], None)?;
    push_tests(&mut b, &FILE_TESTS, &f[15..27], None)?;
    Ok(b)
}

fn defaults(name: &str, version: String, seekers: u32) -> BonnieResult {
    BonnieResult {
        name: name.to_string(),
        version,
        concurrency: 1,
        chunk_bytes: 8192,
        seeks: 8192,
        seekers,
        num_dirs: 1,
        file_chunk_bytes: 8192,
        ..BonnieResult::default()
    }
}

fn parse_file_params(
    b: &mut BonnieResult,
    num: &str,
    max: &str,
    min: &str,
    dirs: &str,
    chunk: &str,
) -> Result<(), String> {
    b.num_files = opt_num(num, "num_files")?.unwrap_or(0);
    b.max_size = match max {
        "link" => -1,
        "symlink" => -2,
        m => opt_num(m, "max_size")?.unwrap_or(0) as i64,
    };
    b.min_size = opt_num(min, "min_size")?.unwrap_or(0);
    b.num_dirs = opt_num(dirs, "num_dirs")?.unwrap_or(1);
    b.file_chunk_bytes = opt_size(chunk, "file_chunk_size")?.unwrap_or(b.file_chunk_bytes);
    Ok(())
}

/// Pairs of (rate, %CP) fields; an empty rate means the test did not run.
fn push_tests(
    b: &mut BonnieResult,
    ids: &[BonnieTestId; 6],
    pairs: &[&str],
    latencies: Option<&[&str]>,
) -> Result<(), String> {
    for (i, id) in ids.iter().enumerate() {
        let (rate, cpu) = (pairs[2 * i], pairs[2 * i + 1]);
        if rate.is_empty() {
            continue;
        }
        let lat = latencies.map(|l| l[i]).unwrap_or("");
        b.tests.push(BonnieTest {
            id: *id,
            rate: plus_or(rate, "rate", |s| s.parse::<f64>().ok())?,
            cpu_pct: plus_or(cpu, "%CP", |s| s.parse::<f64>().ok())?,
            elapsed_ns: 0,
            max_latency_ns: parse_latency(lat)?,
            span: None,
        });
    }
    Ok(())
}

/// `+++++`/`+++` (too fast to measure) and empty fields are None.
fn plus_or<T>(s: &str, what: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Option<T>, String> {
    if s.is_empty() || (s.chars().all(|c| c == '+')) {
        return Ok(None);
    }
    parse(s)
        .map(Some)
        .ok_or_else(|| format!("bad {what} value '{s}'"))
}

/// `964us`, `21ms`, `3s` (bonnie++ picks the unit) into ns.
fn parse_latency(s: &str) -> Result<Option<u64>, String> {
    if s.is_empty() {
        return Ok(None);
    }
    let (num, mult) = if let Some(n) = s.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e9)
    } else {
        return Err(format!("bad latency '{s}' (expected a us, ms or s suffix)"));
    };
    let v: f64 = num.parse().map_err(|_| format!("bad latency '{s}'"))?;
    Ok(Some((v * mult).round() as u64))
}

/// `512M`, `4G`, `1T`, or 1.03's `300M:8k`; returns MiB and the chunk if given.
fn parse_file_size(s: &str) -> Result<(u64, Option<u64>), String> {
    let (size, chunk) = s.split_once(':').unwrap_or((s, ""));
    if size.is_empty() {
        return Ok((0, None));
    }
    let bytes = parse_units(size).ok_or_else(|| format!("bad file_size '{s}'"))?;
    let mib = if size.ends_with(|c: char| c.is_ascii_digit()) {
        bytes // bare numbers are MiB
    } else {
        bytes >> 20
    };
    Ok((mib, opt_size(chunk, "chunk size")?))
}

/// A number with an optional k/M/G/T suffix, in bytes.
fn parse_units(s: &str) -> Option<u64> {
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..digits].parse().ok()?;
    let shift = match &s[digits..] {
        "" => 0,
        "k" | "K" => 10,
        "m" | "M" => 20,
        "g" | "G" => 30,
        "t" | "T" => 40,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

fn opt_size(s: &str, what: &str) -> Result<Option<u64>, String> {
    if s.is_empty() {
        return Ok(None);
    }
    parse_units(s)
        .map(Some)
        .ok_or_else(|| format!("bad {what} '{s}'"))
}

fn opt_num(s: &str, what: &str) -> Result<Option<u64>, String> {
    if s.is_empty() {
        return Ok(None);
    }
    s.parse().map(Some).map_err(|_| format!("bad {what} '{s}'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_units() {
        assert_eq!(parse_latency("964us"), Ok(Some(964_000)));
        assert_eq!(parse_latency("12ms"), Ok(Some(12_000_000)));
        assert_eq!(parse_latency("3s"), Ok(Some(3_000_000_000)));
        assert_eq!(parse_latency(""), Ok(None));
        assert!(parse_latency("12").is_err());
    }

    #[test]
    fn file_sizes() {
        assert_eq!(parse_file_size("512M"), Ok((512, None)));
        assert_eq!(parse_file_size("4G"), Ok((4096, None)));
        assert_eq!(parse_file_size("300M:4k"), Ok((300, Some(4096))));
        assert!(parse_file_size("lots").is_err());
    }
}
