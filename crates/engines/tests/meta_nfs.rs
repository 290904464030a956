//! fio's metadata engines over NFS: filecreate/filestat/filedelete run on the nfs engine's
//! metadata operations against a real nfs-ganesha on 127.0.0.1 (skips when it is missing).

mod common;

use common::{Driver, job};
use storbench_core::{IoKind, MetaPath, OpenOptions, RelPath, RelPathBuf};
use storbench_testkit::ganesha::{self, Ganesha};

fn server() -> Option<Ganesha> {
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    Some(Ganesha::start().expect("start ganesha"))
}

/// One IO per file through metadata engine `engine`, with the job aimed at the export.
fn one_io_per_file(g: &Ganesha, engine: &str, urls: &[String]) -> Vec<i64> {
    let mut spec = job(engine, 1, &[]);
    spec.directories = vec![storbench_job::target::Target::classify(&g.url(""))];
    let mut d = Driver::new(&spec, 4096).unwrap_or_else(|e| panic!("{engine}: {e}"));
    let open = OpenOptions {
        read: true,
        write: true,
        ..Default::default()
    };
    let mut results = Vec::new();
    for url in urls {
        let id = d.open(url, open.clone()).unwrap();
        d.run(
            id,
            &[(IoKind::Read, 0, 4096)],
            |_, _| {},
            |_, _, r| results.push(r),
        )
        .unwrap_or_else(|e| panic!("{engine} {url}: {e}"));
        d.engine.close(id).unwrap();
    }
    results
}

#[test]
fn filecreate_filestat_filedelete_over_nfs() {
    let Some(g) = server() else { return };
    let names: Vec<String> = (0..10).map(|i| format!("meta.{i}")).collect();
    let urls: Vec<String> = names.iter().map(|n| g.url(n)).collect();

    assert_eq!(one_io_per_file(&g, "filecreate", &urls), vec![4096; 10]);
    for n in &names {
        assert!(
            g.export_dir().join(n).is_file(),
            "{n} created on the export"
        );
    }
    assert_eq!(one_io_per_file(&g, "filestat", &urls), vec![4096; 10]);
    assert_eq!(one_io_per_file(&g, "filedelete", &urls), vec![4096; 10]);
    for n in &names {
        assert!(
            !g.export_dir().join(n).exists(),
            "{n} removed from the export"
        );
    }
}

/// `MetaOps::link` and `symlink` on the nfs engine (bonnie's `-n N:-1` and `-n N:-2`):
/// links to the first file, errors naming the link, and a first file made again after the
/// links were removed is linked to afresh (its old handle is not reused).
#[test]
fn hard_and_symbolic_links_over_nfs() {
    let Some(g) = server() else { return };
    let mut d = Driver::new(&job("nfs", 1, &[]), 4096).unwrap();
    let meta = d.engine.meta().unwrap();
    meta.mkdir(MetaPath::whole(&common::at(g.url("ln"))))
        .unwrap();
    meta.mkdir(MetaPath::whole(&common::at(g.url("ln/sub"))))
        .unwrap();
    let dir = meta
        .open_dir(MetaPath::whole(&common::at(g.url("ln"))))
        .unwrap();
    for round in 0..2 {
        let first = g.url("ln/first");
        meta.create_empty_in(&dir, "first").unwrap();
        meta.link(
            MetaPath::whole(&common::at(&first)),
            MetaPath::whole(&common::at(g.url("ln/hard"))),
        )
        .unwrap();
        meta.link(
            MetaPath::whole(&common::at(&first)),
            MetaPath::whole(&common::at(g.url("ln/sub/hard"))),
        )
        .unwrap();
        meta.symlink("first", MetaPath::whole(&common::at(g.url("ln/soft"))))
            .unwrap();
        meta.symlink(
            "../first",
            MetaPath::whole(&common::at(g.url("ln/sub/soft"))),
        )
        .unwrap();
        let ino = |p: &str| {
            std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(g.export_dir().join(p)).unwrap())
        };
        let nlink = std::os::unix::fs::MetadataExt::nlink(
            &std::fs::metadata(g.export_dir().join("ln/first")).unwrap(),
        );
        assert_eq!(nlink, 3, "round {round}");
        assert_eq!(ino("ln/hard"), ino("ln/first"));
        assert_eq!(ino("ln/sub/soft"), ino("ln/first"), "the symlink resolves");
        assert_eq!(
            std::fs::read_link(g.export_dir().join("ln/sub/soft")).unwrap(),
            std::path::Path::new("../first")
        );

        // stat follows a symbolic link, as stat(2) does: the empty first file.
        let soft = meta
            .stat(MetaPath::whole(&common::at(g.url("ln/sub/soft"))))
            .unwrap();
        assert_eq!((soft.size, soft.is_dir), (0, false));
        let sub = meta
            .open_dir(MetaPath::whole(&common::at(g.url("ln/sub"))))
            .unwrap();
        assert_eq!(meta.stat_in(&sub, "soft").unwrap().size, 0);
        meta.close_dir(sub);
        assert_eq!(meta.stat_in(&dir, "sub/soft").unwrap().size, 0);

        let e = meta
            .link(
                MetaPath::whole(&common::at(&first)),
                MetaPath::whole(&common::at(g.url("ln/hard"))),
            )
            .unwrap_err();
        assert_eq!(e.errno, Some(17), "{e}");
        assert!(
            e.message.contains("LINK /export/ln/hard: NFS3ERR_EXIST"),
            "{e}"
        );
        let e = meta
            .symlink("first", MetaPath::whole(&common::at(g.url("ln/sub/soft"))))
            .unwrap_err();
        assert_eq!(e.errno, Some(17), "{e}");
        assert!(
            e.message
                .contains("SYMLINK /export/ln/sub/soft: NFS3ERR_EXIST"),
            "{e}"
        );
        for f in [
            "ln/first",
            "ln/hard",
            "ln/sub/hard",
            "ln/soft",
            "ln/sub/soft",
        ] {
            meta.unlink(MetaPath::whole(&common::at(g.url(f)))).unwrap();
        }
    }
    let e = meta
        .link(
            MetaPath::whole(&common::at(g.url("ln/first"))),
            MetaPath::whole(&common::at(g.url("ln/again"))),
        )
        .unwrap_err();
    assert!(e.message.contains("/export/ln/first: NFS3ERR_NOENT"), "{e}");
    meta.close_dir(dir);
    meta.rmdir(MetaPath::whole(&common::at(g.url("ln/sub"))))
        .unwrap();
    meta.rmdir(MetaPath::whole(&common::at(g.url("ln"))))
        .unwrap();
    assert_eq!(std::fs::read_dir(g.export_dir()).unwrap().count(), 0);
}

/// The path calls with a typed root and a name below it, as bonnie makes them: two roots
/// in turns (each resolved once and kept), names with directories, a listing; a plain
/// name that is not a `RelPath` is refused in one line before any RPC.
#[test]
fn path_calls_below_typed_roots_over_nfs() {
    let Some(g) = server() else { return };
    let mut d = Driver::new(&job("nfs", 1, &[]), 4096).unwrap();
    let export = common::at(g.url(""));
    let top = RelPath::new("roots").unwrap();
    let meta = d.engine.meta().unwrap();
    meta.mkdir(MetaPath::new(&export, top)).unwrap();
    let below = common::at(g.url("roots"));
    for name in ["a", "b"] {
        let dir = RelPath::new(name).unwrap();
        let meta = d.engine.meta().unwrap();
        meta.mkdir(MetaPath::new(&below, dir)).unwrap();
        let file = RelPathBuf::new(format!("roots/{name}/f")).unwrap();
        let id = meta
            .create(MetaPath::new(&export, &file), &OpenOptions::default())
            .unwrap();
        d.engine.close(id).unwrap();
        let meta = d.engine.meta().unwrap();
        let in_dir = RelPathBuf::new(format!("{name}/f")).unwrap();
        assert_eq!(meta.stat(MetaPath::new(&below, &in_dir)).unwrap().size, 0);
        assert!(meta.stat(MetaPath::new(&export, top)).unwrap().is_dir);
    }
    let meta = d.engine.meta().unwrap();
    let mut names = storbench_core::NameList::default();
    meta.read_dir_all(MetaPath::whole(&below), &mut names)
        .unwrap();
    let mut listed: Vec<&str> = names.iter().collect();
    listed.sort_unstable();
    assert_eq!(listed, ["a", "b"]);
    assert!(g.export_dir().join("roots/b/f").is_file());

    let outside = storbench_job::target::Target::Path("../etc".into());
    let e = meta.stat(MetaPath::whole(&outside)).unwrap_err();
    assert_eq!(e.kind, storbench_core::ErrorKind::Refused, "{e}");
    assert!(
        e.message.contains("`..`") && !e.message.contains('\n'),
        "{e}"
    );

    for name in ["a", "b"] {
        let file = RelPathBuf::new(format!("{name}/f")).unwrap();
        meta.unlink(MetaPath::new(&below, &file)).unwrap();
        meta.rmdir(MetaPath::new(&below, RelPath::new(name).unwrap()))
            .unwrap();
    }
    meta.rmdir(MetaPath::whole(&below)).unwrap();
    assert_eq!(std::fs::read_dir(g.export_dir()).unwrap().count(), 0);
}

/// A plain name given as an absolute path on the server is made relative to its root (the
/// export mounted, or `nfs_url`) when it lies inside it, for the path calls as for
/// `open`; one outside it, or climbing out with `..`, is refused in one line.
#[test]
fn absolute_plain_names_inside_the_root_over_nfs() {
    use storbench_core::ErrorKind;
    use storbench_job::target::Target;
    let Some(g) = server() else { return };
    std::fs::create_dir_all(g.export_dir().join("abs/sub")).unwrap();
    std::fs::write(g.export_dir().join("abs/sub/f"), b"12345").unwrap();
    for (opts, name) in [
        (vec![], "/export/abs/sub/f"),
        (vec![("nfs_url", g.url("abs"))], "/export/abs/sub/f"),
    ] {
        let opts: Vec<(&str, &str)> = opts.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut d = Driver::new(&job("nfs", 1, &opts), 4096).unwrap();
        // Mounted through a typed root first, as a run's lay-out does.
        let export = common::at(g.url(""));
        let meta = d.engine.meta().unwrap();
        assert!(meta.stat(MetaPath::whole(&export)).unwrap().is_dir);
        let abs = Target::Path(name.into());
        assert_eq!(
            meta.stat(MetaPath::whole(&abs)).unwrap().size,
            5,
            "{opts:?}"
        );
        let dir = Target::Path("/export/abs/sub".into());
        let f = RelPath::new("f").unwrap();
        assert_eq!(meta.stat(MetaPath::new(&dir, f)).unwrap().size, 5);
        for (outside, why) in [
            ("/etc/passwd", "not inside /export"),
            ("/export/abs/../../x", "`..`"),
        ] {
            let e = meta
                .stat(MetaPath::whole(&Target::Path(outside.into())))
                .unwrap_err();
            assert_eq!(e.kind, ErrorKind::Refused, "{e}");
            assert!(
                e.message.contains(why) && !e.message.contains('\n'),
                "{opts:?} {outside}: {e}"
            );
        }
        let id = d.open(name, OpenOptions::default()).unwrap();
        d.engine.close(id).unwrap();
    }
    assert!(g.export_dir().join("abs/sub/f").is_file());
}
