//! fio's engines that move no data but change a file's allocation or size (`falloc`,
//! `ftruncate`), ext4's defragmenter (`e4defrag`, on an ext4 file system of the test's own),
//! the one-call-per-IO engines that share one body (`sync`, `psync`, `vsync`, `pvsync`,
//! `pvsync2`) and `cpp_null`: storbench and the installed fio 3.33 run the same command
//! line in temp dirs of their own, and must issue the same IOs and leave each job's file
//! with the same size and the same allocated blocks. Skipped with a reason when fio 3.33 is
//! missing (and, for e4defrag, without root for the loop device).

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use common::system::{LoopDev, Mount, have_tool, sh};
use common::{fio, fio_available, sb_fio, words};
use serde_json::Value;

/// (read, write, trim) IOs and bytes of the JSON's first job, and its error.
fn totals(doc: &Value) -> ([u64; 3], [u64; 3], i64) {
    let j = &doc["jobs"][0];
    let ios = ["read", "write", "trim"].map(|d| j[d]["total_ios"].as_u64().unwrap());
    let bytes = ["read", "write", "trim"].map(|d| j[d]["io_bytes"].as_u64().unwrap());
    (ios, bytes, j["error"].as_i64().unwrap())
}

/// Size and 512-byte blocks of `dir/name`.
fn shape(dir: &Path, name: &str) -> (u64, u64) {
    let m = std::fs::metadata(dir.join(name)).unwrap();
    (m.len(), m.blocks())
}

/// Runs each command line in `steps` in turn with fio in one temp dir and with storbench in
/// another, comparing IO totals after each step and the file `name` at the end.
fn same_effect(steps: &[&str], name: &str) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for step in steps {
        let mut args = vec!["--output-format=json"];
        args.extend(words(step));
        let theirs = fio(fd.path(), &args).fio_json();
        let ours = sb_fio(sd.path(), &args).json();
        let (mut a, mut b) = (totals(&theirs), totals(&ours));
        if step.contains("randrw") {
            // fio draws each IO's direction; only the totals over directions must agree.
            for t in [&mut a, &mut b] {
                t.0 = [t.0.iter().sum(), 0, 0];
                t.1 = [t.1.iter().sum(), 0, 0];
            }
        }
        assert_eq!(a, b, "{step}");
        assert!(totals(&ours).0.iter().sum::<u64>() > 0, "{step}: no IO");
    }
    assert_eq!(
        shape(fd.path(), name),
        shape(sd.path(), name),
        "{steps:?}: {name}"
    );
}

/// Writes grow the file by allocation only; reads reserve without growing; trims punch
/// holes that free the blocks again.
#[test]
fn falloc_allocates_and_punches_like_fio() {
    if !fio_available() {
        return;
    }
    let job = "--name=f --filename=f --ioengine=falloc --bs=4k --size=256k";
    same_effect(&[&format!("{job} --rw=write")], "f");
    same_effect(
        &[
            &format!("{job} --rw=randrw --randrepeat=1"),
            &format!("{job} --rw=trim --size=128k"),
        ],
        "f",
    );
}

/// Each write sets the size to its offset, so the file ends one block short.
#[test]
fn ftruncate_sets_the_size_like_fio() {
    if !fio_available() {
        return;
    }
    let job = "--name=t --filename=t --ioengine=ftruncate --bs=4k --size=64k";
    same_effect(&[&format!("{job} --rw=write")], "t");
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let read = words("--name=t --filename=t --ioengine=ftruncate --bs=4k --size=64k --rw=read");
    let theirs = fio(fd.path(), &read);
    let ours = sb_fio(sd.path(), &read);
    // fio prints the job's error on stdout when that is not a terminal.
    let said = format!("{}{}", theirs.stdout, theirs.stderr);
    assert!(said.contains("error=Invalid argument"), "{said}");
    assert_eq!(ours.code, theirs.code, "{}", ours.stderr);
    assert!(ours.stderr.contains("Invalid argument"), "{}", ours.stderr);
}

/// The engines that share one body issue what fio's do, sequential and random.
#[test]
fn one_call_engines_issue_what_fio_issues() {
    if !fio_available() {
        return;
    }
    common::par_each(&["sync", "psync", "vsync", "pvsync", "pvsync2"], |engine| {
        let job = format!("--name=s --filename=s --ioengine={engine} --bs=4k --size=256k");
        same_effect(
            &[
                &format!("{job} --rw=write"),
                &format!("{job} --rw=randread --randrepeat=1"),
                &format!("{job} --rw=randwrite --fsync=4"),
            ],
            "s",
        );
    });
}

/// `filefrag -v`'s extent table of `path`: where its blocks lie on the device.
fn extents(path: &Path) -> String {
    let out = sh("filefrag", &["-v", path.to_str().unwrap()]);
    out.lines().skip(3).collect::<Vec<_>>().join("\n")
}

/// fio's examples/e4defrag.fio shape on an ext4 file system of its own (a loop device):
/// each write moves the blocks under it to a donor file's (EXT4_IOC_MOVE_EXT), once over
/// the whole file (`inplace=0`) or block by block (`inplace=1`). Both tools issue the same
/// writes without an error, the file's blocks lie elsewhere afterwards and its contents are
/// intact; fio leaves the donor, storbench removes the donor it made. A donor that exists
/// before the run is refused and kept, and a job on another file system is refused in one
/// line naming it. Root only (the loop device and mounts).
#[test]
fn e4defrag_moves_each_writes_blocks_to_the_donor_like_fio() {
    if !fio_available() || !LoopDev::available() || !have_tool("mkfs.ext4") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dev = LoopDev::new(dir.path(), 64 << 20);
    sh("mkfs.ext4", &["-q", "-F", &dev.dev]);
    let mnt = Mount::new("ext4", &dev.dev, &dir.path().join("mnt"), "");
    let (fd, sd) = (mnt.point.join("fio"), mnt.point.join("sb"));
    let data: Vec<u8> = (0..4u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    for (inplace, rw, bs, ios) in [(0, "write", "32k", 128), (1, "randwrite", "4k", 1024)] {
        let job = format!(
            "[defrag]\nioengine=e4defrag\nfilename=f\nfilesize=4m\nsize=4m\nbs={bs}\n\
             buffered=0\ndonorname=f.def\ninplace={inplace}\nrw={rw}\n"
        );
        let mut before = Vec::new();
        for d in [&fd, &sd] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join("f"), &data).unwrap();
            std::fs::write(d.join("j.fio"), &job).unwrap();
            sh("sync", &[]);
            before.push(extents(&d.join("f")));
        }
        let args = ["j.fio", "--output-format=json"];
        let theirs = fio(&fd, &args).fio_json();
        let ours = sb_fio(&sd, &args);
        assert!(ours.success(), "{job}: {}", ours.stderr);
        let (a, b) = (totals(&theirs), totals(&ours.json()));
        assert_eq!(a, b, "{job}");
        assert_eq!((b.0[1], b.1[1], b.2), (ios, 4 << 20, 0), "{job}");
        for (d, before) in [&fd, &sd].into_iter().zip(&before) {
            assert!(
                std::fs::read(d.join("f")).unwrap() == data,
                "{}: data changed",
                d.display()
            );
            assert_ne!(
                &extents(&d.join("f")),
                before,
                "{}: no block moved",
                d.display()
            );
        }
        assert!(fd.join("f.def").exists(), "fio leaves its donor");
        assert!(
            !sd.join("f.def").exists(),
            "storbench removes the donor it made"
        );
        std::fs::remove_file(fd.join("f.def")).unwrap();
    }
    std::fs::write(sd.join("f.def"), b"keep").unwrap();
    let refused = sb_fio(&sd, &["j.fio"]);
    assert!(!refused.success());
    let err = refused.one_error_line();
    assert!(err.contains("f.def (donorname=) exists"), "{err}");
    assert_eq!(std::fs::read(sd.join("f.def")).unwrap(), b"keep");
    let tmp = Mount::new("tmpfs", "tmpfs", &dir.path().join("tmp"), "size=8m");
    std::fs::copy(sd.join("j.fio"), tmp.point.join("j.fio")).unwrap();
    let other = sb_fio(&tmp.point, &["j.fio"]);
    assert!(!other.success());
    let err = other.one_error_line();
    assert!(
        err.contains("needs an ext4 file system") && err.contains("is on tmpfs"),
        "{err}"
    );
}

/// `cpp_null` (fio's examples/cpp_null.fio, fio's null engine built as a C++ external
/// engine, which Debian's fio does not ship): the same IOs as fio's `null` on the same job,
/// at depth 1 and deeper, and fio's job line names it.
#[test]
fn cpp_null_issues_what_fios_null_issues() {
    if !fio_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for depth in [1, 8] {
        let job = format!(
            "--name=null --size=64m --rw=randread --bs=4k --norandommap --gtod_reduce=1 \
             --iodepth={depth} --output-format=json"
        );
        let theirs = fio(dir.path(), &words(&format!("{job} --ioengine=null"))).fio_json();
        let ours = sb_fio(dir.path(), &words(&format!("{job} --ioengine=cpp_null"))).json();
        assert_eq!(totals(&theirs), totals(&ours), "{job}");
        assert_eq!(totals(&ours).0[0], 16384, "{job}");
    }
    let normal = sb_fio(
        dir.path(),
        &words("--name=null --size=1m --ioengine=cpp_null"),
    );
    assert!(
        normal.stdout.contains("ioengine=cpp_null, iodepth=1"),
        "{}",
        normal.stdout
    );
}
