//! Debian's `bon_csv2txt` and `bon_csv2html` (bonnie++ 2.00a) read our CSV and put every
//! value in its column.

mod bonnie_support;

use std::io::Write;
use std::process::{Command, Stdio};

use bonnie_support::*;

fn tool(name: &str) -> Option<String> {
    ["/usr/bin", "/usr/sbin"]
        .iter()
        .map(|d| format!("{d}/{name}"))
        .find(|p| std::path::Path::new(p).exists())
}

fn pipe(tool: &str, input: &str) -> (String, String) {
    let mut child = Command::new(tool)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start converter");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One short run with every column family filled: per-char, block, seeks, file sizes,
/// directories and a non-default chunk.
fn our_line() -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = bonnie_ok(&[
        "-d",
        &path_str(&dir),
        "-q",
        "-m",
        "conv",
        "-s",
        "8:4k",
        "-r",
        "0",
        "-f",
        "1",
        "-n",
        "1:2k:1k:2",
    ]);
    last_line(&out)
}

/// bon_csv2txt's speed column: KiB/s, then MiB/s, then GiB/s.
fn conv_spd(s: &str) -> String {
    let Ok(v) = s.parse::<f64>() else {
        // Perl reads "+++++" as 0.
        return if s.is_empty() {
            String::new()
        } else {
            "   0k".into()
        };
    };
    if v < 10000.0 {
        format!("{:4}k", v as i64)
    } else if v / 1024.0 < 100.0 {
        format!("{:4.1}m", v / 1024.0)
    } else if v / 1024.0 < 1000.0 {
        format!("{:4}m", (v / 1024.0 + 0.5) as i64)
    } else {
        format!("{:4.1}g", v / 1024.0 / 1024.0)
    }
}

fn desc(name: &str, size: &str) -> String {
    let padded = format!("{name}                   ");
    let lead: String = padded.chars().take(18 - size.len()).collect();
    format!("{lead} {size}")
}

#[test]
fn bon_csv2txt_puts_values_in_their_columns() {
    let Some(txt) = tool("bon_csv2txt") else {
        return skip("bon_csv2txt is not installed (apt-get install bonnie++)");
    };
    let line = our_line();
    let f = fields(&line);
    let (out, err) = pipe(&txt, &format!("{line}\n"));
    assert!(err.is_empty(), "bon_csv2txt complained: {err}");
    let rows: Vec<&str> = out.lines().collect();
    // IO header (3 lines), IO row, latency, file header (3 lines), file row, latency.
    assert_eq!(rows.len(), 10, "{out}");
    let io = format!(
        "{:>19} {:>5} {:>3} {:>5} {:>3} {:>5} {:>3} {:>5} {:>3} {:>5} {:>3} {:>5} {:>3}",
        desc("conv", "8M:4k:8192:5"),
        conv_spd(&f[9]),
        f[10],
        conv_spd(&f[11]),
        f[12],
        conv_spd(&f[13]),
        f[14],
        conv_spd(&f[15]),
        f[16],
        conv_spd(&f[17]),
        f[18],
        f[19],
        f[20]
    );
    assert_eq!(rows[3], io);
    let lat = |r: std::ops::Range<usize>| {
        let cells: Vec<String> = f[r].iter().map(|c| format!("{c:>9}")).collect();
        format!("Latency           {}", cells.join(" "))
    };
    assert_eq!(rows[4], lat(38..44));
    let files = format!(
        "{:>19} {:>5} {:>3} {:>5} {:>3} {:>5} {:>3} {:>5} {:>3} {:>5} {:>3} {:>5} {:>3}",
        desc("conv", "1:2048:1024/2"),
        f[26],
        f[27],
        f[28],
        f[29],
        f[30],
        f[31],
        f[32],
        f[33],
        f[34],
        f[35],
        f[36],
        f[37]
    );
    assert_eq!(rows[8], files);
    assert_eq!(rows[9], lat(44..50));
}

#[test]
fn bon_csv2html_puts_values_in_their_columns() {
    let Some(html) = tool("bon_csv2html") else {
        return skip("bon_csv2html is not installed (apt-get install bonnie++)");
    };
    let line = our_line();
    let f = fields(&line);
    let (out, err) = pipe(&html, &format!("{line}\n"));
    assert!(err.is_empty(), "bon_csv2html complained: {err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("<tr><td rowspan=\"2\""))
        .expect("a data row");
    let cells = td_texts(row);
    // Name, size, chunk size (used), then putc..num_files (9..=21), then the used file
    // parameters (max, min, dirs), then seq_create..ran_del_cpu (26..=37).
    let block = |s: &str| {
        s.parse::<i64>()
            .map_or("0".to_string(), |v| ((v + 512) / 1024).to_string())
    };
    let mut want = vec![f[2].clone(), f[5].clone(), f[6].clone()];
    for (i, v) in f.iter().enumerate().take(22).skip(9) {
        want.push(if [11, 13, 17].contains(&i) {
            block(v)
        } else {
            v.clone()
        });
    }
    want.extend([f[22].clone(), f[23].clone(), f[24].clone()]);
    want.extend(f[26..38].iter().cloned());
    assert_eq!(cells, want, "{row}");
    assert_eq!(&want[1..3], ["8M", "4k"]);
    assert_eq!(&want[16..19], ["2048", "1024", "2"], "max, min, dirs");
}

/// The text of each `<td …>text</td>` cell, in order.
fn td_texts(row: &str) -> Vec<String> {
    row.split("<td")
        .skip(1)
        .map(|cell| {
            let start = cell.find('>').unwrap() + 1;
            let end = cell.find("</td>").unwrap();
            let text = &cell[start..end];
            // The name cell wraps its text in <font size=+1>.
            text.rsplit('>').next().unwrap().to_string()
        })
        .collect()
}

#[test]
fn our_1_03_lines_have_27_fields() {
    let dir = tempfile::tempdir().unwrap();
    let out = bonnie_ok(&[
        "-d",
        &path_str(&dir),
        "-q",
        "-s",
        "0",
        "-n",
        "1",
        "--format",
        "csv-1.03",
    ]);
    let line = last_line(&out);
    let f = fields(&line);
    assert_eq!(f.len(), 27, "{line}");
    assert!(f[1..14].iter().all(String::is_empty), "no IO tests: {line}");
    assert_eq!(f[14], "1");
    for i in (15..27).step_by(2) {
        check_pair(&f[i], &f[i + 1], &format!("column {i}"));
    }
}
