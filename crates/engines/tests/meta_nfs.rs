//! fio's metadata engines over NFS: filecreate/filestat/filedelete run on the nfs engine's
//! metadata operations against a real nfs-ganesha on 127.0.0.1 (skips when it is missing).

mod common;

use common::{Driver, job};
use storbench_core::{IoKind, OpenOptions};
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
    spec.directories = vec![g.url("")];
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
