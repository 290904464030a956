//! The client against a real nfs-ganesha on 127.0.0.1 (skips with a reason when ganesha is
//! not installed).

use std::fs;

use storbench_nfs::{Client, NfsError, NfsStat, NfsUrl, Stable};
use storbench_testkit::ganesha::{self, Ganesha};

fn server() -> Option<Ganesha> {
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    Some(Ganesha::start().expect("start ganesha"))
}

fn client(g: &Ganesha, rel: &str) -> Client {
    Client::mount(&NfsUrl::parse(&g.url(rel)).unwrap()).expect("mount")
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0] ^ seed)
        .collect()
}

/// Waits for `n` completions and returns them as (user, bytes).
fn wait_all(c: &mut Client, n: usize) -> Vec<(u64, u64)> {
    let mut got = Vec::new();
    while got.len() < n {
        c.transport().wait(1, &mut |u, b| got.push((u, b))).unwrap();
    }
    got.sort();
    got
}

#[test]
fn pipelined_write_then_read_back_matches() {
    let Some(g) = server() else { return };
    let mut c = client(&g, "");
    assert_eq!(c.export(), "/export");
    let fh = c.create("data.bin", 0o644).unwrap();
    let label = 0;
    c.transport().set_path(label, "/export/data.bin");
    // 3 MiB in 48 pipelined writes of 64 KiB, plus one 2.5 MiB write split by wsize.
    let data = pattern(3 << 20, 7);
    let chunk = c.wsize();
    for (i, part) in data.chunks(64 << 10).enumerate() {
        let off = (i * (64 << 10)) as u64;
        // SAFETY: `data` outlives the wait below.
        unsafe {
            c.transport()
                .write(
                    &fh,
                    label,
                    off,
                    part.as_ptr(),
                    part.len() as u32,
                    chunk,
                    Stable::Unstable,
                    i as u64,
                )
                .unwrap()
        };
    }
    let big = pattern(5 << 19, 9);
    unsafe {
        c.transport()
            .write(
                &fh,
                label,
                3 << 20,
                big.as_ptr(),
                big.len() as u32,
                1 << 18,
                Stable::Unstable,
                999,
            )
            .unwrap()
    };
    c.transport().flush().unwrap();
    let done = wait_all(&mut c, 49);
    assert_eq!(done.last(), Some(&(999, big.len() as u64)));
    assert!(done[..48].iter().all(|&(_, b)| b == 64 << 10));
    c.transport().commit(&fh, label, 1000).unwrap();
    c.transport().flush().unwrap();
    assert_eq!(wait_all(&mut c, 1), vec![(1000, 0)]);

    let on_disk = fs::read(g.export_dir().join("data.bin")).unwrap();
    assert_eq!(&on_disk[..3 << 20], &data[..]);
    assert_eq!(&on_disk[3 << 20..], &big[..]);

    // Read it back pipelined, with a small rsize cap to force splitting.
    let mut back = vec![0u8; on_disk.len()];
    let total = back.len();
    for (i, part) in back.chunks_mut(1 << 20).enumerate() {
        let off = (i as u64) << 20;
        unsafe {
            c.transport()
                .read(
                    &fh,
                    label,
                    off,
                    part.as_mut_ptr(),
                    part.len() as u32,
                    96 << 10,
                    i as u64,
                )
                .unwrap()
        };
    }
    c.transport().flush().unwrap();
    let done = wait_all(&mut c, total.div_ceil(1 << 20));
    assert_eq!(done.iter().map(|d| d.1).sum::<u64>(), total as u64);
    assert!(
        back == on_disk,
        "read-back differs from what is on the export"
    );

    // Reading past the end returns a short count.
    let mut tail = vec![0u8; 8192];
    unsafe {
        c.transport()
            .read(
                &fh,
                label,
                total as u64 - 100,
                tail.as_mut_ptr(),
                8192,
                1 << 20,
                5,
            )
            .unwrap()
    };
    c.transport().flush().unwrap();
    assert_eq!(wait_all(&mut c, 1), vec![(5, 100)]);
    assert_eq!(&tail[..100], &on_disk[total - 100..]);
}

#[test]
fn metadata_operations() {
    let Some(g) = server() else { return };
    let mut c = client(&g, "");
    c.mkdir("d", 0o755).unwrap();
    c.mkdir("d/e", 0o755).unwrap();
    let fh = c.create("d/e/f", 0o644).unwrap();
    assert!(g.export_dir().join("d/e/f").is_file());
    c.set_size(&fh, 12345, "d/e/f").unwrap();
    assert_eq!(
        fs::metadata(g.export_dir().join("d/e/f")).unwrap().len(),
        12345
    );
    let (_, attr) = c.lookup("d/e/f").unwrap();
    assert_eq!((attr.size, attr.is_dir()), (12345, false));
    assert!(c.lookup("d/e").unwrap().1.is_dir());

    // GUARDED create refuses an existing file.
    let err = c.create("d/e/f", 0o644).unwrap_err();
    assert_eq!(err.nfs_status(), Some(NfsStat::EXIST), "{err}");
    assert!(err.to_string().contains("CREATE /export/d/e/f"), "{err}");

    for i in 0..300 {
        c.create(&format!("d/n{i:03}"), 0o644).unwrap();
    }
    let mut names = c.readdir("d").unwrap();
    names.sort();
    assert_eq!(names.len(), 301);
    assert_eq!((names[0].as_str(), names[300].as_str()), ("e", "n299"));

    let err = c.rmdir("d").unwrap_err();
    assert_eq!(err.nfs_status(), Some(NfsStat(66)), "{err}");
    for i in 0..300 {
        c.remove(&format!("d/n{i:03}")).unwrap();
    }
    c.remove("d/e/f").unwrap();
    c.rmdir("d/e").unwrap();
    c.rmdir("d").unwrap();
    assert_eq!(fs::read_dir(g.export_dir()).unwrap().count(), 0);
    let err = c.lookup("d").unwrap_err();
    assert_eq!(err.nfs_status(), Some(NfsStat::NOENT), "{err}");
    assert!(
        err.to_string().starts_with(&format!(
            "127.0.0.1:{}: LOOKUP /export/d: NFS3ERR_NOENT",
            g.nfs_port
        )),
        "{err}"
    );
}

/// LINK makes a second name for the same file; SYMLINK a link of type NF3LNK holding its
/// text as given; an existing name fails with NFS3ERR_EXIST naming it.
#[test]
fn link_and_symlink() {
    let Some(g) = server() else { return };
    let mut c = client(&g, "");
    c.mkdir("l", 0o755).unwrap();
    c.mkdir("l/sub", 0o755).unwrap();
    c.create("l/first", 0o644).unwrap();

    let after = c.link("l/first", "l/second").unwrap();
    let (_, first) = c.lookup("l/first").unwrap();
    let (_, second) = c.lookup("l/second").unwrap();
    assert_eq!((first.nlink, second.nlink), (2, 2));
    assert_eq!(first.fileid, second.fileid, "one file, two names");
    if let Some(a) = after {
        assert_eq!((a.fileid, a.nlink), (first.fileid, 2));
    }
    c.link("l/first", "l/sub/third").unwrap();
    assert_eq!(c.lookup("l/sub/third").unwrap().1.nlink, 3);
    let meta = fs::metadata(g.export_dir().join("l/sub/third")).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::nlink(&meta), 3);

    let err = c.link("l/first", "l/second").unwrap_err();
    assert_eq!(err.nfs_status(), Some(NfsStat::EXIST), "{err}");
    assert!(err.to_string().contains("LINK /export/l/second"), "{err}");
    let err = c.link("l/nothing", "l/fourth").unwrap_err();
    assert_eq!(err.nfs_status(), Some(NfsStat::NOENT), "{err}");
    assert!(err.to_string().contains("/export/l/nothing"), "{err}");

    c.symlink("first", "l/sym").unwrap();
    c.symlink("../first", "l/sub/sym").unwrap();
    let (_, attr) = c.lookup("l/sym").unwrap();
    assert!(attr.is_symlink() && !attr.is_dir(), "{attr:?}");
    assert_ne!(attr.fileid, first.fileid);
    for (link, text) in [("l/sym", "first"), ("l/sub/sym", "../first")] {
        let path = g.export_dir().join(link);
        assert_eq!(fs::read_link(&path).unwrap().to_str(), Some(text));
        assert!(fs::metadata(&path).unwrap().is_file(), "{link} resolves");
    }
    let mut text = String::new();
    let (sym, _) = c.lookup("l/sub/sym").unwrap();
    c.readlink(&sym, storbench_nfs::At::Path("l/sub/sym"), &mut text)
        .unwrap();
    assert_eq!(text, "../first");
    // Followed as stat(2) follows it: to the file, from the link's own directory.
    for link in ["l/sym", "l/sub/sym"] {
        let (_, to) = c.lookup_follow(link).unwrap();
        assert_eq!((to.fileid, to.ftype), (first.fileid, 1), "{link}");
    }
    c.symlink("sym", "l/chain").unwrap();
    assert_eq!(c.lookup_follow("l/chain").unwrap().1.fileid, first.fileid);
    c.symlink("missing", "l/dangling").unwrap();
    let err = c.lookup_follow("l/dangling").unwrap_err();
    assert_eq!(err.nfs_status(), Some(NfsStat::NOENT), "{err}");
    assert!(
        err.to_string().contains("LOOKUP /export/l/missing"),
        "{err}"
    );
    c.symlink("loop", "l/loop").unwrap();
    let err = c.lookup_follow("l/loop").unwrap_err();
    assert!(err.to_string().contains("too many levels"), "{err}");
    c.symlink("../../outside", "l/out").unwrap();
    let err = c.lookup_follow("l/out").unwrap_err();
    assert!(err.to_string().contains("out of the export"), "{err}");

    let err = c.symlink("first", "l/second").unwrap_err();
    assert_eq!(err.nfs_status(), Some(NfsStat::EXIST), "{err}");
    assert!(
        err.to_string().contains("SYMLINK /export/l/second"),
        "{err}"
    );

    for f in [
        "l/sym",
        "l/sub/sym",
        "l/sub/third",
        "l/second",
        "l/chain",
        "l/dangling",
        "l/loop",
        "l/out",
    ] {
        c.remove(f).unwrap();
    }
    assert_eq!(c.lookup("l/first").unwrap().1.nlink, 1);
    c.remove("l/first").unwrap();
    c.rmdir("l/sub").unwrap();
    c.rmdir("l").unwrap();
    assert_eq!(fs::read_dir(g.export_dir()).unwrap().count(), 0);
}

#[test]
fn export_resolution_and_mount_errors() {
    let Some(g) = server() else { return };
    fs::create_dir_all(g.export_dir().join("a/b")).unwrap();
    let mut c = client(&g, "a/b/file");
    assert_eq!(c.export(), "/export");
    assert_eq!(c.relative("/export/a/b/file"), Some("a/b/file"));
    assert!(c.lookup("a/b").unwrap().1.is_dir());

    let url = format!(
        "nfs://127.0.0.1:{}/nothere/x?mountport={}",
        g.nfs_port, g.mount_port
    );
    let err = Client::mount(&NfsUrl::parse(&url).unwrap())
        .err()
        .expect("unknown export must fail");
    let msg = err.to_string();
    assert!(
        matches!(err, NfsError::NoExport { .. } | NfsError::Mount { .. }),
        "{msg}"
    );
    assert!(
        msg.contains(&format!("127.0.0.1:{}", g.mount_port)) && msg.contains("/nothere"),
        "{msg}"
    );
    // ganesha answers a path that is no export with MNT3ERR_ACCES: the message names what
    // the server does export, not only "access denied".
    assert!(msg.contains("exports: /export"), "{msg}");
}

#[test]
fn portmapper_finds_the_ports() {
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let g = Ganesha::start_registered().expect("start ganesha");
    let mut c =
        Client::mount(&NfsUrl::parse(&g.portmap_url("")).unwrap()).expect("mount via portmapper");
    assert_eq!(c.transport().server(), format!("127.0.0.1:{}", g.nfs_port));
    c.null().unwrap();
}

#[test]
fn host_names_resolve() {
    let Some(g) = server() else { return };
    let url = g.url("").replace("127.0.0.1", "localhost");
    let mut c = Client::mount(&NfsUrl::parse(&url).unwrap()).expect("mount via localhost");
    c.null().unwrap();
    assert!(c.transport().server().starts_with("localhost:"));
}

/// A symbolic link met as a directory in a longer path is followed, as a path walk on a
/// mount follows it: files are made and found through it; a link into itself, or to a
/// file, fails with an error naming it.
#[test]
fn directory_links_inside_a_path_are_followed() {
    let Some(g) = server() else { return };
    let mut c = client(&g, "");
    c.mkdir("dl", 0o755).unwrap();
    c.mkdir("dl/real", 0o755).unwrap();
    c.symlink("real", "dl/alias").unwrap();
    c.symlink("alias", "dl/chain").unwrap();
    c.create("dl/alias/f", 0o644).unwrap();
    assert!(g.export_dir().join("dl/real/f").is_file(), "made in real");
    let (_, by_link) = c.lookup("dl/chain/f").unwrap();
    let (_, by_name) = c.lookup("dl/real/f").unwrap();
    assert_eq!(by_link.fileid, by_name.fileid);

    c.symlink("self/x", "dl/self").unwrap();
    let err = c.lookup("dl/self/y").unwrap_err();
    assert!(err.to_string().contains("too many levels"), "{err}");
    c.symlink("real/f", "dl/file").unwrap();
    let err = c.lookup("dl/file/y").unwrap_err();
    assert_eq!(err.nfs_status(), Some(NfsStat::NOTDIR), "{err}");
    assert!(err.to_string().contains("/export/dl/file"), "{err}");

    for f in ["dl/alias/f", "dl/alias", "dl/chain", "dl/self", "dl/file"] {
        c.remove(f).unwrap();
    }
    c.rmdir("dl/real").unwrap();
    c.rmdir("dl").unwrap();
    assert_eq!(fs::read_dir(g.export_dir()).unwrap().count(), 0);
}
