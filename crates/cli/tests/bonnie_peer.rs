//! storbench bonnie beside the real bonnie++ 2.00a with the same small parameters: the
//! CSV lines must have the same layout, the same parameters in the same columns, and obey
//! the same `+++++` rules. The only differences allowed are the 2.00a defects we fix
//! (named in each test).

mod bonnie_support;

use bonnie_support::*;

/// Runs both tools with `args` (each in its own empty directory) and returns their CSV
/// fields: (bonnie++, storbench).
fn both(args: &[&str]) -> Option<(Vec<String>, Vec<String>)> {
    let Some(bin) = bonnie_pp() else {
        skip("bonnie++ is not installed (apt-get install bonnie++)");
        return None;
    };
    let (theirs_dir, ours_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut theirs_args = vec!["-d", theirs_dir.path().to_str().unwrap(), "-q"];
    theirs_args.extend(args);
    let theirs = bonnie_pp_ok(bin, &theirs_args);
    let mut ours_args = vec!["-d", ours_dir.path().to_str().unwrap(), "-q"];
    ours_args.extend(args);
    let ours = bonnie_ok(&ours_args);
    assert!(
        entries(ours_dir.path()).is_empty(),
        "storbench left files behind"
    );
    Some((fields(&last_line(&theirs)), fields(&last_line(&ours))))
}

/// Checks what must agree between two 1.98 lines; `skip` lists columns that may differ.
fn agree(theirs: &[String], ours: &[String], skip: &[usize]) {
    assert_eq!(theirs.len(), 50, "bonnie++: {theirs:?}");
    assert_eq!(ours.len(), 50, "storbench: {ours:?}");
    assert_eq!(ours[0], "1.98");
    assert!(ours[1].starts_with("storbench-"), "{}", ours[1]);
    for i in [2, 3, 4, 5, 7, 8, 21, 22, 23] {
        if !skip.contains(&i) {
            assert_eq!(ours[i], theirs[i], "column {i}");
        }
    }
    // A test ran in one tool exactly when it ran in the other: same empty columns.
    for i in (9..21).chain(26..50) {
        assert_eq!(
            ours[i].is_empty(),
            theirs[i].is_empty(),
            "column {i}: {} vs {}",
            ours[i],
            theirs[i]
        );
    }
    for i in (9..21).step_by(2).chain((26..38).step_by(2)) {
        check_pair(&ours[i], &ours[i + 1], &format!("storbench column {i}"));
        check_pair(&theirs[i], &theirs[i + 1], &format!("bonnie++ column {i}"));
    }
    for (i, lat) in ours.iter().enumerate().skip(38) {
        assert!(lat.is_empty() || is_latency(lat), "column {i}: {lat}");
    }
}

#[test]
fn file_tests_only_with_sizes_and_directories() {
    let Some((theirs, ours)) = both(&["-s", "0", "-n", "1:4k:1k:2", "-z", "7", "-m", "peer"])
    else {
        return;
    };
    agree(&theirs, &ours, &[]);
    assert_eq!(ours[21], "1", "the file count is in units of 1024");
    // 2.00a defect: it writes the directory count into file_chunk_size; we put it in num_dirs.
    assert_eq!((theirs[24].as_str(), theirs[25].as_str()), ("", "2"));
    assert_eq!((ours[24].as_str(), ours[25].as_str()), ("2", ""));
}

/// `-n N:-1` and `-n N:-2`: every file but the first a hard or symbolic link to it.
#[test]
fn hard_and_symbolic_links() {
    // (bonnie++ 2.00a cannot stat its own symlinks across directories: `1:-2:0:2` fails
    // there; storbench's links point at `../name`, tested in the bonnie crate.)
    for (files, kind) in [("1:-1:0:2", "link"), ("1:-2", "symlink")] {
        let Some((theirs, ours)) = both(&["-s", "0", "-n", files, "-z", "7"]) else {
            return;
        };
        agree(&theirs, &ours, &[24, 25]);
        assert_eq!(
            (theirs[22].as_str(), ours[22].as_str()),
            (kind, kind),
            "{files}"
        );
    }
}

#[test]
fn io_tests_without_per_char_and_with_own_chunk_seeks_and_seekers() {
    let Some((theirs, ours)) = both(&["-s", "16:4k:100:2", "-r", "0", "-n", "0", "-f", "-z", "7"])
    else {
        return;
    };
    agree(&theirs, &ours, &[]);
    assert_eq!(
        (ours[5].as_str(), ours[7].as_str(), ours[8].as_str()),
        ("16M", "100", "2")
    );
    // 2.00a defect: io_chunk_size stays empty even when the chunk is not the default.
    assert_eq!((theirs[6].as_str(), ours[6].as_str()), ("", "4k"));
    for i in [9, 10, 15, 16, 38, 41] {
        assert_eq!(ours[i], "", "-f leaves the per-char column {i} empty");
    }
}

#[test]
fn runs_with_x_print_a_header_and_one_line_each() {
    let Some(bin) = bonnie_pp() else {
        return skip("bonnie++ is not installed");
    };
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let theirs = bonnie_pp_ok(
        bin,
        &["-d", &path_str(&d1), "-q", "-s", "0", "-n", "1", "-x", "2"],
    );
    let ours = bonnie_ok(&["-d", &path_str(&d2), "-q", "-s", "0", "-n", "1", "-x", "2"]);
    let (t, o) = (
        String::from_utf8_lossy(&theirs.stdout),
        String::from_utf8_lossy(&ours.stdout),
    );
    let (t, o): (Vec<&str>, Vec<&str>) = (t.lines().collect(), o.lines().collect());
    assert_eq!((t.len(), o.len()), (3, 3), "{o:?}");
    // 2.00a defect: its header names 48 columns for 50-field lines; ours names all 50.
    assert_eq!(t[0].split(',').count(), 48);
    assert_eq!(o[0].split(',').count(), 50);
    assert!(o[0].starts_with("format_version,bonnie_version,name,concurrency,seed,file_size"));
    for line in &o[1..] {
        assert_eq!(line.split(',').count(), 50);
    }
    // The seed is chosen once and used by every run, as in bonnie++.
    assert_eq!(fields(o[1])[4], fields(o[2])[4]);
    assert_eq!(fields(t[1])[4], fields(t[2])[4]);
}

/// bonnie++ 2.00a prints file-test rates through `%d` on a double (garbage); our table must
/// show exactly the CSV's figures.
#[test]
fn text_table_shows_the_csv_file_rates() {
    let dir = tempfile::tempdir().unwrap();
    let out = bonnie_ok(&[
        "-d",
        &path_str(&dir),
        "-q",
        "-s",
        "0",
        "-n",
        "1",
        "-m",
        "tbl",
    ]);
    let csv = fields(&last_line(&out));
    let text = String::from_utf8_lossy(&out.stderr);
    let row = text
        .lines()
        .skip_while(|l| !l.contains("files  /sec %CP"))
        .nth(1)
        .expect("the file table's data row");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[0], "1");
    assert_eq!(
        &cells[1..],
        &csv[26..38].iter().map(String::as_str).collect::<Vec<_>>()[..]
    );
}

/// The text table's parameter cell and the empty line that ends a table without file
/// tests, beside bonnie++'s own (stdout without -q: table, then the CSV line).
#[test]
fn table_size_cell_and_ending_match() {
    let Some(bin) = bonnie_pp() else {
        skip("bonnie++ is not installed (apt-get install bonnie++)");
        return;
    };
    for size in ["16:8k:100:2", "16:8k:8192:3", "16:4k:100:2"] {
        let args = ["-s", size, "-r", "0", "-n", "0", "-f", "-m", "peer"];
        let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let theirs = bonnie_pp_ok(bin, &[&["-d", &path_str(&d1)], &args[..]].concat());
        let ours = bonnie_ok(&[&["-d", &path_str(&d2)], &args[..]].concat());
        let table = |out: &std::process::Output| {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let lines: Vec<String> = text.lines().map(str::to_owned).collect();
            let row = lines.iter().find(|l| l.starts_with("peer")).cloned();
            let before_csv = lines.iter().rev().nth(1).cloned();
            (row.map(|r| r[..20].to_owned()), before_csv)
        };
        assert_eq!(table(&ours), table(&theirs), "-s {size}");
    }
}

/// bonnie++ makes its test file and small files 0600 and its directories 0700 (it passes
/// those modes to open and mkdir); so does storbench, whatever the umask.
#[test]
fn files_and_directories_are_owner_only_as_in_bonnie_pp() {
    let args = ["-s", "16:8k:256", "-r", "8", "-f", "-n", "1:1k:0:2", "-q"];
    let ours_dir = tempfile::tempdir().unwrap();
    let ours = bonnie_spawn(ours_dir.path().to_str().unwrap(), &args);
    assert_eq!(modes_while_running(ours, ours_dir.path()), OWNER_ONLY);
    let Some(bin) = bonnie_pp() else {
        return skip("bonnie++ is not installed (apt-get install bonnie++)");
    };
    let theirs_dir = tempfile::tempdir().unwrap();
    let mut theirs = std::process::Command::new(bin);
    theirs
        .args(["-d", theirs_dir.path().to_str().unwrap()])
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        theirs.args(["-u", "root"]);
    }
    assert_eq!(
        modes_while_running(theirs.spawn().unwrap(), theirs_dir.path()),
        OWNER_ONLY
    );
}

/// The owner-only umask covers the suite alone: a results database the run creates gets
/// the user's umask like any other file (a shared database stays readable to the group).
#[test]
fn the_results_database_keeps_the_users_umask() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared").join("results.db");
    let work = tempfile::tempdir().unwrap();
    let out = storbench()
        .args([
            "--db",
            db.to_str().unwrap(),
            "bonnie",
            "-q",
            "-s",
            "0",
            "-n",
            "1",
        ])
        .args(["-d", &path_str(&work)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // SAFETY: umask(2) cannot fail; the value is put back at once.
    let ours = unsafe { libc::umask(0o022) };
    unsafe { libc::umask(ours) };
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&db), 0o666 & !ours, "the database");
    assert_eq!(mode(db.parent().unwrap()), 0o777 & !ours, "its directory");
}
