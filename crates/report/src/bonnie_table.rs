//! bonnie++ 2.00's text table, column for column, with the file-test rates printed
//! correctly (2.00a prints a float through `%d` there and shows garbage such as `8192`).
//! The run's notes come first, so deviations from bonnie++ (incompressible data, `-D` on
//! every phase, small test file) are seen before the figures.

use std::fmt::Write as _;
use std::io::{self, Write};

use storbench_model::result::{BonnieResult, BonnieTestId, Note, RunResult};

use crate::bonnie_csv::{FILE_TESTS, IO_TESTS, bonnie_of, files_spec, latency, size_units, test};
use crate::notes::level_name;

const RATE_HEADER: &str = " /sec %CP  /sec %CP  /sec %CP  /sec %CP  /sec %CP  /sec %CP";

/// Writes the notes, then the IO table and the file table of the tests that ran.
pub fn render(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let out = &mut crate::terminal::Escaped::new(out);
    let b = bonnie_of(run)?;
    render_notes(&run.notes, run.interrupted, out)?;
    out.write_all(table_of(&rows(run, b)).as_bytes())
}

/// The rows of a run's table: its suite, or in a multi-host run each host's suite and
/// then their aggregate (`all N`), as `bon_csv2txt` lists several machines under one head.
pub fn rows<'a>(run: &'a RunResult, b: &'a BonnieResult) -> Vec<&'a BonnieResult> {
    match run.hosts.as_deref().and_then(|h| h.bonnie.as_ref()) {
        Some(h) => h.hosts.iter().map(|h| &h.result).chain([b]).collect(),
        None => vec![b],
    }
}

/// One line per note, warnings first, then a blank line; nothing without notes.
fn render_notes(notes: &[Note], interrupted: bool, out: &mut dyn Write) -> io::Result<()> {
    if notes.is_empty() && !interrupted {
        return Ok(());
    }
    if interrupted {
        writeln!(out, "{:<8} {}", "warning", crate::notes::INTERRUPTED)?;
    }
    // Repeated notes merged, as in every text output.
    for (level, message, code) in crate::notes::for_people(notes) {
        writeln!(out, "{:<8} {message} [{code}]", level_name(level))?;
    }
    writeln!(out)
}

/// The two tables as bonnie++ prints them (each only if its tests were configured).
pub fn table(b: &BonnieResult) -> String {
    table_of(&[b])
}

/// The two tables with one row (and its latency line) per suite in `rows`, the first
/// giving the heads.
fn table_of(rows: &[&BonnieResult]) -> String {
    let mut s = String::new();
    let b = rows[0];
    if b.file_size_mib > 0 {
        io_table(rows, &mut s);
    }
    if b.num_files > 0 {
        file_table(rows, &mut s);
    } else {
        // 2.00a ends a table without file tests with an empty line.
        s.push('\n');
    }
    s
}

fn io_table(rows: &[&BonnieResult], s: &mut String) {
    let label = version_label(&rows[0].version);
    let _ = writeln!(
        s,
        "{label}------Sequential Output------ --Sequential Input- --Random-"
    );
    let _ = writeln!(
        s,
        "{:20}-Per Chr- --Block-- -Rewrite- -Per Chr- --Block-- --Seeks--",
        ""
    );
    let _ = writeln!(s, "Name:Size etc       {RATE_HEADER}");
    for b in rows {
        s.push_str(&name_and_size(&b.name, &size_etc(b)));
        for id in IO_TESTS {
            rate_cells(b, id, s);
        }
        latency_line(b, &IO_TESTS, s);
    }
}

fn file_table(rows: &[&BonnieResult], s: &mut String) {
    let b = rows[0];
    let label = version_label(&b.version);
    let _ = writeln!(
        s,
        "{label}------Sequential Create------ --------Random Create--------"
    );
    // Several rows name their hosts each; the head names none (as bon_csv2txt).
    let name: String = match rows {
        [one] => one.name.chars().take(19).collect(),
        _ => String::new(),
    };
    let _ = writeln!(
        s,
        "{name:<19} -Create-- --Read--- -Delete-- -Create-- --Read--- -Delete--"
    );
    let columns = if b.max_size > 0 && b.min_size > 0 {
        "files:max:min       "
    } else if b.max_size != 0 {
        "files:max           "
    } else {
        "              files "
    };
    let _ = writeln!(s, "{columns}{RATE_HEADER}");
    for (i, b) in rows.iter().enumerate() {
        // One suite: bonnie++'s layout (the name heads the table). Several: each row
        // names its host, as bon_csv2txt does.
        if i == 0 && rows.len() == 1 {
            let _ = write!(s, "{:>19}", files_spec(b, true));
        } else {
            s.push_str(&name_and_size(&b.name, &files_spec(b, true)));
        }
        for id in FILE_TESTS {
            rate_cells(b, id, s);
        }
        latency_line(b, &FILE_TESTS, s);
    }
}

/// `Version 2.00a       ` for bonnie++ results, `storbench 0.1.0     ` for ours: the
/// 20-column lead of the header lines.
fn version_label(version: &str) -> String {
    let label = match version.strip_prefix("storbench-") {
        Some(v) => format!("storbench {v}"),
        None => format!("Version {version:>5}"),
    };
    format!("{label:<19} ")
}

/// `size[:chunk[:concurrency[:seeks]]]` with only non-default parts. 2.00a never shows the
/// seeker count here (`-s 16m:8k:100:2` prints `16M:::100`); the CSV's seek_proc_count has it.
fn size_etc(b: &BonnieResult) -> String {
    let parts = [
        size_units(b.file_size_mib, &["M", "G"]),
        if b.chunk_bytes == 8192 {
            String::new()
        } else {
            size_units(b.chunk_bytes, &["", "k", "m"])
        },
        if b.concurrency == 1 {
            String::new()
        } else {
            b.concurrency.to_string()
        },
        if b.seeks == 8192 {
            String::new()
        } else {
            b.seeks.to_string()
        },
    ];
    parts.join(":").trim_end_matches(':').to_string()
}

/// bonnie++'s 19-column lead: the name cut to fit, a space, then the size flush right.
fn name_and_size(name: &str, size: &str) -> String {
    let width = size.chars().count();
    if width >= 19 {
        return size.to_string();
    }
    let keep = 18 - width;
    let name: String = name
        .chars()
        .chain(std::iter::repeat(' '))
        .take(keep)
        .collect();
    format!("{name} {size}")
}

fn rate_cells(b: &BonnieResult, id: BonnieTestId, s: &mut String) {
    let Some(t) = test(b, id) else {
        s.push_str("          ");
        return;
    };
    let (Some(rate), Some(cpu)) = (t.rate, t.cpu_pct) else {
        s.push_str(" +++++ +++");
        return;
    };
    match id {
        BonnieTestId::Seeks if rate >= 1000.0 => {
            let _ = write!(s, " {rate:5.0}");
        }
        BonnieTestId::Seeks => {
            let _ = write!(s, " {rate:5.1}");
        }
        _ if IO_TESTS.contains(&id) => s.push_str(&io_rate(rate)),
        _ => {
            let _ = write!(s, " {:5}", rate as i64);
        }
    }
    let _ = write!(s, " {:3}", cpu as i64);
}

/// KiB/s as bonnie++ shows it: `NNNNk` below 10000, then MiB/s (`NN.Nm`, `NNNm`), then
/// GiB/s (`N.Ng`).
fn io_rate(kib: f64) -> String {
    if kib < 10000.0 {
        return format!(" {:4}k", kib as i64);
    }
    let mib = kib / 1024.0;
    if mib < 100.0 {
        format!(" {mib:4.1}m")
    } else if mib < 1000.0 {
        format!(" {:4}m", (mib + 0.5) as i64)
    } else {
        format!(" {:4.1}g", mib / 1024.0)
    }
}

fn latency_line(b: &BonnieResult, ids: &[BonnieTestId], s: &mut String) {
    s.push_str("\nLatency          ");
    for id in ids {
        let lat = test(b, *id).map_or(String::new(), |t| latency(t.max_latency_ns));
        let _ = write!(s, " {lat:>9}");
    }
    s.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_rates_use_bonnies_units() {
        assert_eq!(io_rate(836.9), "  836k");
        assert_eq!(io_rate(9999.0), " 9999k");
        assert_eq!(io_rate(250784.0), "  245m");
        assert_eq!(io_rate(50000.0), " 48.8m");
        assert_eq!(io_rate(3643685.0), "  3.5g");
    }

    #[test]
    fn name_column() {
        assert_eq!(name_and_size("anchor", "512M"), "anchor         512M");
        assert_eq!(name_and_size("probe", "64M"), "probe           64M");
        assert_eq!(
            name_and_size("a-very-long-machine-name", "2G"),
            "a-very-long-mach 2G"
        );
        assert_eq!(
            name_and_size("x", "12345678901234567890"),
            "12345678901234567890"
        );
    }

    #[test]
    fn the_real_2_00a_table_with_correct_file_rates() {
        let expect = "\
Version 2.00a       ------Sequential Output------ --Sequential Input- --Random-
                    -Per Chr- --Block-- -Rewrite- -Per Chr- --Block-- --Seeks--
Name:Size etc        /sec %CP  /sec %CP  /sec %CP  /sec %CP  /sec %CP  /sec %CP
anchor         512M  836k  98  245m  51  448m  35 1325k  99 +++++ +++ 14015  47
Latency             21385us     957us    1887us   11173us     362us   17761us
Version 2.00a       ------Sequential Create------ --------Random Create--------
anchor              -Create-- --Read--- -Delete-- -Create-- --Read--- -Delete--
files:max:min        /sec %CP  /sec %CP  /sec %CP  /sec %CP  /sec %CP  /sec %CP
      8:4096:1024/2  4990  85 +++++ +++  5170  24  1817  95 +++++ +++  4039  24
Latency              1375us    4080us    2819us    5957us     112us    4199us
";
        assert_eq!(table(&crate::bonnie_csv::sample::anchor()), expect);
    }

    #[test]
    fn missing_tests_are_blank_and_parameters_shown() {
        let mut b = crate::bonnie_csv::sample::anchor();
        b.tests
            .retain(|t| !matches!(t.id, BonnieTestId::Putc | BonnieTestId::Getc));
        b.chunk_bytes = 4096;
        b.seekers = 3;
        b.num_files = 0;
        let t = table(&b);
        let row = t.lines().nth(3).unwrap();
        assert_eq!(
            row, "anchor      512M:4k            245m  51  448m  35           +++++ +++ 14015  47",
            "as 2.00a: the seeker count is not shown"
        );
        b.seeks = 100;
        let row = table(&b).lines().nth(3).unwrap().to_owned();
        assert!(row.starts_with("anchor 512M:4k::100 "), "{row}");
        assert_eq!(t.lines().count(), 6, "no file table with -n 0");
        assert!(t.ends_with("\n\n"), "then an empty line, as 2.00a: {t:?}");
    }

    #[test]
    fn labels() {
        assert_eq!(version_label("2.00a"), "Version 2.00a       ");
        assert_eq!(version_label("storbench-0.1.0"), "storbench 0.1.0     ");
    }
}
