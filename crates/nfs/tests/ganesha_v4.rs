//! The NFSv4.1/4.2 client against a real nfs-ganesha serving v4 only on 127.0.0.1 (skips
//! with a reason when ganesha is not installed).

use std::fs;
use std::os::unix::fs::PermissionsExt;

use storbench_nfs::NfsUrl;
use storbench_nfs::v4::{Client4, Content, Create, SHARE_ACCESS_BOTH, SHARE_ACCESS_READ, Stable4};
use storbench_testkit::ganesha::{self, Ganesha};

fn server() -> Option<Ganesha> {
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    Some(Ganesha::start_v4_only().expect("start ganesha"))
}

fn connect(g: &Ganesha, minor: u32, depth: u32) -> Client4 {
    let url = NfsUrl::parse(&g.url4("")).unwrap();
    Client4::connect(&url, minor, depth).expect("session")
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0] ^ seed)
        .collect()
}

/// An engine moves its client to the job's thread.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<Client4>();
};

#[test]
fn v4_session_comes_up_and_goes_down() {
    let Some(g) = server() else { return };
    let mut c = connect(&g, 1, 16);
    assert!(c.slots() >= 1 && c.slots() <= 16, "slots {}", c.slots());
    assert!(c.lease().as_secs() > 0);
    assert!(c.rsize() >= 4096 && c.wsize() >= 4096);
    c.ping().unwrap();
    c.renew_if_idle().unwrap();
    c.shutdown().unwrap();
    // A second client after the first said goodbye starts cleanly.
    let mut d = connect(&g, 2, 1);
    assert_eq!(d.slots(), 1);
    d.ping().unwrap();
}

#[test]
fn v4_missing_path_fails_in_one_line() {
    let Some(g) = server() else { return };
    let url = NfsUrl::parse(&g.url4("missing/dir")).unwrap();
    let e = Client4::connect(&url, 1, 4)
        .err()
        .expect("a missing path fails");
    let msg = e.to_string();
    assert!(
        msg.contains("NFS4ERR_NOENT") && !msg.contains('\n'),
        "{msg}"
    );
}

#[test]
fn v4_write_commit_read_back() {
    let Some(g) = server() else { return };
    let mut c = connect(&g, 1, 8);
    let f = c
        .open(
            "data.bin",
            SHARE_ACCESS_BOTH,
            Some(Create::Guarded { mode: 0o644 }),
        )
        .unwrap();
    let data = pattern(3 * c.wsize() as usize + 1234, 5);
    let mut off = 0;
    for (i, part) in data.chunks(c.wsize() as usize).enumerate() {
        let stable = if i % 2 == 0 {
            Stable4::Unstable
        } else {
            Stable4::FileSync
        };
        let w = c.write(f, off, part, stable).unwrap();
        assert_eq!(w.count as usize, part.len());
        off += part.len() as u64;
    }
    c.commit(f).unwrap();
    let mut back = vec![0u8; data.len()];
    let mut at = 0;
    while at < back.len() {
        let (n, _eof) = c.read(f, at as u64, &mut back[at..]).unwrap();
        assert!(n > 0);
        at += n;
    }
    assert!(back == data, "read back differs");
    assert_eq!(fs::read(g.export_dir().join("data.bin")).unwrap(), data);
    let (fh, attrs) = c.lookup("data.bin").unwrap();
    assert_eq!(fh, c.file_handle(f).unwrap());
    assert_eq!(attrs.size, data.len() as u64);
    assert_eq!(attrs.mode & 0o777, 0o644);
    c.truncate(f, 100).unwrap();
    assert_eq!(c.getattr(&fh).unwrap().size, 100);
    c.close(f).unwrap();
    // GUARDED refuses an existing file; UNCHECKED and EXCLUSIVE4_1 behave as specified.
    let e = c
        .open(
            "data.bin",
            SHARE_ACCESS_BOTH,
            Some(Create::Guarded { mode: 0o644 }),
        )
        .unwrap_err();
    assert!(e.to_string().contains("NFS4ERR_EXIST"), "{e}");
    let u = c
        .open(
            "data.bin",
            SHARE_ACCESS_READ,
            Some(Create::Unchecked { mode: 0o600 }),
        )
        .unwrap();
    c.close(u).unwrap();
    let verf = storbench_nfs::v4::Verifier(*b"storbnch");
    let x = c
        .open(
            "excl.bin",
            SHARE_ACCESS_BOTH,
            Some(Create::Exclusive { verf, mode: 0o640 }),
        )
        .unwrap();
    c.close(x).unwrap();
    assert!(g.export_dir().join("excl.bin").exists());
    let o = c.open("data.bin", SHARE_ACCESS_READ, None).unwrap();
    c.close(o).unwrap();
    c.shutdown().unwrap();
}

#[test]
fn v4_metadata_operations() {
    let Some(g) = server() else { return };
    let mut c = connect(&g, 1, 4);
    c.mkdir("d", 0o755).unwrap();
    c.mkdir("d/e", 0o700).unwrap();
    let f = c
        .open(
            "d/f",
            SHARE_ACCESS_BOTH,
            Some(Create::Guarded { mode: 0o644 }),
        )
        .unwrap();
    c.write(f, 0, b"hello", Stable4::FileSync).unwrap();
    c.close(f).unwrap();
    c.symlink("d/l", "f").unwrap();
    assert_eq!(c.readlink("d/l").unwrap(), "f");
    assert!(c.lookup("d/l").unwrap().1.is_symlink());
    c.link("d/f", "d/g").unwrap();
    assert_eq!(c.lookup("d/g").unwrap().1.nlink, 2);
    c.rename("d/g", "d/e/h").unwrap();
    let mut names: Vec<String> = c.readdir("d").unwrap().into_iter().map(|e| e.0).collect();
    names.sort();
    assert_eq!(names, ["e", "f", "l"]);
    let dir = g.export_dir().join("d");
    assert_eq!(fs::read(dir.join("e/h")).unwrap(), b"hello");
    assert_eq!(fs::read_link(dir.join("l")).unwrap().to_str(), Some("f"));
    assert_eq!(
        fs::metadata(dir.join("e")).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let e = c.remove("d").unwrap_err();
    assert!(e.to_string().contains("NFS4ERR_NOTEMPTY"), "{e}");
    for p in ["d/e/h", "d/e", "d/f", "d/l", "d"] {
        c.remove(p).unwrap();
    }
    assert!(!dir.exists());
    let e = c.remove("d").unwrap_err();
    assert!(
        e.to_string().contains("NFS4ERR_NOENT") && e.to_string().contains("/export/d"),
        "{e}"
    );
}

/// Operations one call sent.
fn ops_of<T>(c: &mut Client4, call: impl FnOnce(&mut Client4) -> T) -> (T, u64) {
    let before = c.ops_sent();
    let got = call(c);
    (got, c.ops_sent() - before)
}

/// A directory is walked once: afterwards a create, stat or remove three levels down costs
/// the operations of one at the top (SEQUENCE, PUTFH of the kept handle, the operation),
/// and a handle made stale by another client is walked again instead of failing the call.
#[test]
fn v4_metadata_calls_start_at_kept_directory_handles() {
    let Some(g) = server() else { return };
    let mut c = connect(&g, 1, 4);
    for d in ["a", "a/b", "a/b/c"] {
        c.mkdir(d, 0o755).unwrap();
    }
    let create = |path: &'static str| {
        move |c: &mut Client4| {
            let mode = 0o644;
            let f = c.open(path, SHARE_ACCESS_BOTH, Some(Create::Guarded { mode }));
            c.close(f.unwrap()).unwrap();
        }
    };
    let (_, top) = ops_of(&mut c, create("f0"));
    // SEQUENCE, PUTFH, OPEN, GETFH; then SEQUENCE, PUTFH, CLOSE.
    assert_eq!(top, 7);
    for i in 0..20 {
        let name = format!("a/b/c/f{i}");
        let (_, deep) = ops_of(&mut c, |c| {
            let mode = 0o644;
            let f = c.open(&name, SHARE_ACCESS_BOTH, Some(Create::Guarded { mode }));
            c.close(f.unwrap()).unwrap();
        });
        assert_eq!(deep, top, "create of {name}");
        let (found, stat) = ops_of(&mut c, |c| c.lookup(&name).unwrap());
        assert_eq!(found.1.ftype, storbench_nfs::v4::FileType4::Regular);
        // SEQUENCE, PUTFH, LOOKUP of the name only, GETFH, GETATTR.
        assert_eq!(stat, 5, "stat of {name}");
        let (_, gone) = ops_of(&mut c, |c| c.remove(&name).unwrap());
        assert_eq!(gone, 3, "remove of {name}");
    }
    // A directory this client did not make is walked once, in one COMPOUND (SEQUENCE,
    // PUTFH, two LOOKUPs, GETFH, GETATTR), when it is first named.
    fs::create_dir_all(g.export_dir().join("x/y")).unwrap();
    let (_, walked) = ops_of(&mut c, |c| c.lookup("x/y/f").unwrap_err());
    assert_eq!(walked, 6 + 5, "the walk to x/y, then the LOOKUP of f");
    let (_, known) = ops_of(&mut c, |c| c.lookup("x/y/f").unwrap_err());
    assert_eq!(known, 5, "x/y is kept");

    // Another client removes a/b/c and makes it again: the kept handle is stale.
    let mut other = connect(&g, 1, 1);
    other.remove("a/b/c").unwrap();
    other.mkdir("a/b/c", 0o755).unwrap();
    let (_, again) = ops_of(&mut c, create("a/b/c/g"));
    // The OPEN at the stale handle (SEQUENCE, PUTFH, OPEN, GETFH), the walk to a/b/c
    // (SEQUENCE, PUTFH, three LOOKUPs, GETFH, GETATTR), then the create as before.
    assert_eq!(again, 4 + 7 + top, "the stale handle was walked again");
    assert!(g.export_dir().join("a/b/c/g").is_file());
    let (_, after) = ops_of(&mut c, create("a/b/c/h"));
    assert_eq!(after, top, "the new handle is kept");

    // A directory removed by this client is forgotten with what is below it.
    for p in ["a/b/c/g", "a/b/c/h", "a/b/c", "a/b", "a", "f0", "x/y", "x"] {
        c.remove(p).unwrap();
    }
    let e = c.lookup("a/b/c/x").unwrap_err().to_string();
    assert!(e.contains("NFS4ERR_NOENT") && e.contains("/a"), "{e}");
    assert_eq!(c.dirs_kept(), 0);
}

#[test]
fn v4_free_space_matches_the_export() {
    let Some(g) = server() else { return };
    let mut c = connect(&g, 1, 1);
    let (avail, free, total) = c.free_space().unwrap();
    assert!(
        total > 0 && free <= total && avail <= free,
        "{avail} {free} {total}"
    );
    let st = fs_stat(&g.export_dir());
    let local_total = st.0;
    let ratio = total as f64 / local_total as f64;
    assert!(
        (0.99..1.01).contains(&ratio),
        "server {total}, local {local_total}"
    );
}

fn fs_stat(p: &std::path::Path) -> (u64, u64) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut s) }, 0);
    (s.f_blocks * s.f_frsize, s.f_bavail * s.f_frsize)
}

#[test]
fn v4_pipelined_qd32_reads_of_4k() {
    let Some(g) = server() else { return };
    let data = pattern(4 << 20, 3);
    fs::write(g.export_dir().join("r.bin"), &data).unwrap();
    let mut c = connect(&g, 1, 32);
    assert_eq!(c.slots(), 32, "ganesha grants the 32 slots asked for");
    let f = c.open("r.bin", SHARE_ACCESS_READ, None).unwrap();
    let blocks = data.len() / 4096;
    let mut bufs = vec![[0u8; 4096]; 32];
    // A pseudo-random order of every block, 32 in flight at a time.
    let order: Vec<usize> = (0..blocks).map(|i| (i * 389) % blocks).collect();
    let mut next = 0;
    let mut free: Vec<usize> = (0..32).collect();
    let mut at = [0usize; 32];
    let mut done = 0;
    let mut max_inflight = 0;
    while done < blocks {
        while let Some(b) = free.pop() {
            if next == blocks {
                free.push(b);
                break;
            }
            at[b] = order[next];
            next += 1;
            let off = (at[b] * 4096) as u64;
            unsafe {
                c.submit_read(f, off, bufs[b].as_mut_ptr(), 4096, b as u64)
                    .unwrap()
            };
        }
        max_inflight = max_inflight.max(c.in_flight());
        let mut got = Vec::new();
        c.reap(1, &mut |user, bytes| got.push((user as usize, bytes)))
            .unwrap();
        for (b, bytes) in got {
            assert_eq!(bytes, 4096);
            let blk = at[b];
            assert!(
                bufs[b][..] == data[blk * 4096..(blk + 1) * 4096],
                "block {blk}"
            );
            free.push(b);
            done += 1;
        }
    }
    assert_eq!(max_inflight, 32);
    c.close(f).unwrap();
}

#[test]
fn v4_pipelined_writes_then_commit() {
    let Some(g) = server() else { return };
    let mut c = connect(&g, 2, 8);
    let f = c
        .open(
            "w.bin",
            SHARE_ACCESS_BOTH,
            Some(Create::Unchecked { mode: 0o644 }),
        )
        .unwrap();
    let data = pattern(8 << 20, 11);
    let chunk = 256 << 10;
    let mut n = 0;
    for (i, part) in data.chunks(chunk).enumerate() {
        if c.in_flight() == 8 {
            n += c.reap(1, &mut |_, b| assert_eq!(b, chunk as u64)).unwrap();
        }
        unsafe {
            c.submit_write(
                f,
                (i * chunk) as u64,
                part.as_ptr(),
                part.len() as u32,
                Stable4::Unstable,
                i as u64,
            )
            .unwrap()
        };
    }
    while n < data.len() / chunk {
        n += c.reap(1, &mut |_, _| {}).unwrap();
    }
    c.commit(f).unwrap();
    assert!(fs::read(g.export_dir().join("w.bin")).unwrap() == data);
    c.close(f).unwrap();
}

#[test]
fn v4_2_allocate_deallocate_seek_work_or_say_not_supported() {
    let Some(g) = server() else { return };
    let mut c = connect(&g, 2, 2);
    let f = c
        .open(
            "s.bin",
            SHARE_ACCESS_BOTH,
            Some(Create::Unchecked { mode: 0o644 }),
        )
        .unwrap();
    c.write(f, 1 << 20, &[7u8; 4096], Stable4::FileSync)
        .unwrap();
    // Each either works, with its effect checked, or says the server does not support it.
    let unsupported = |e: storbench_nfs::NfsError| {
        assert!(e.to_string().contains("not supported by the server"), "{e}");
        eprintln!("{e}");
    };
    match c.seek(f, 0, Content::Data) {
        Ok(at) => assert!(at.is_some_and(|at| at <= 1 << 20), "data found at {at:?}"),
        Err(e) => unsupported(e),
    }
    match c.seek(f, 1 << 20, Content::Hole) {
        Ok(at) => assert!(at.is_none_or(|at| at >= (1 << 20) + 4096), "hole at {at:?}"),
        Err(e) => unsupported(e),
    }
    match c.allocate(f, 0, 65536, false) {
        Ok(()) => assert_eq!(
            c.getattr(&c.file_handle(f).unwrap()).unwrap().size,
            (1 << 20) + 4096
        ),
        Err(e) => unsupported(e),
    }
    match c.allocate(f, 1 << 20, 4096, true) {
        Ok(()) => {
            let mut back = [1u8; 4096];
            let (n, _) = c.read(f, 1 << 20, &mut back).unwrap();
            assert!(
                n == 4096 && back.iter().all(|&b| b == 0),
                "punched range reads zeros"
            );
        }
        Err(e) => unsupported(e),
    }
    c.close(f).unwrap();
}

/// Writes the replies of a fixed sequence of calls, as ganesha sent them, to
/// `src/v4/fixtures/` for the wire-level unit tests (`src/v4/tests.rs`). Run by hand:
/// `cargo nextest run -p storbench-nfs --test ganesha_v4 --run-ignored only`.
#[test]
#[ignore]
fn capture_v4_reply_fixtures() {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    let Some(g) = server() else { return };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let upstream = g.nfs_port;
    let proxy = std::thread::spawn(move || {
        let (mut down, _) = listener.accept().unwrap();
        let mut up = TcpStream::connect(("127.0.0.1", upstream)).unwrap();
        let (mut down2, mut up2) = (down.try_clone().unwrap(), up.try_clone().unwrap());
        let calls = std::thread::spawn(move || {
            let _ = std::io::copy(&mut down2, &mut up2);
            let _ = up2.shutdown(std::net::Shutdown::Write);
        });
        let mut replies = Vec::new();
        let mut buf = [0u8; 65536];
        loop {
            match up.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    replies.extend_from_slice(&buf[..n]);
                    if down.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = calls.join();
        replies
    });
    let url = NfsUrl::parse(&format!("nfs://127.0.0.1:{port}/export")).unwrap();
    let mut c = Client4::connect(&url, 2, 4).unwrap();
    let f = c
        .open(
            "f",
            SHARE_ACCESS_BOTH,
            Some(Create::Guarded { mode: 0o644 }),
        )
        .unwrap();
    c.write(f, 0, b"hello", Stable4::Unstable).unwrap();
    c.commit(f).unwrap();
    c.read(f, 0, &mut [0u8; 4]).unwrap();
    c.mkdir("d", 0o755).unwrap();
    c.readdir("").unwrap();
    c.remove("missing").unwrap_err();
    c.free_space().unwrap();
    c.close(f).unwrap();
    c.shutdown().unwrap();
    drop(c);
    let stream = proxy.join().unwrap();
    let names = [
        "exchange_id",
        "create_session",
        "reclaim_complete",
        "lease_time",
        "lookup_root",
        "open_create",
        "write_unstable",
        "commit",
        "read",
        "mkdir",
        "lookup_dir",
        "readdir",
        "remove_noent",
        "free_space",
        "close",
        "destroy_session",
        "destroy_clientid",
    ];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/v4/fixtures");
    fs::create_dir_all(&dir).unwrap();
    let mut rest = &stream[..];
    let mut i = 0;
    while rest.len() >= 4 {
        let len = (u32::from_be_bytes(rest[..4].try_into().unwrap()) & 0x7fff_ffff) as usize;
        let record = &rest[4..4 + len];
        fs::write(dir.join(format!("{i:02}-{}.bin", names[i])), record).unwrap();
        rest = &rest[4 + len..];
        i += 1;
    }
    assert_eq!(i, names.len(), "one reply per call");
}

#[test]
fn v4_url_version_picks_the_minor_and_v3_client_refuses_v4() {
    let Some(g) = server() else { return };
    let url = |q: &str| NfsUrl::parse(&format!("{}?{q}", g.url4(""))).unwrap();
    assert_eq!(
        Client4::connect_url(&url("version=4"), 2)
            .unwrap()
            .minor_version(),
        2
    );
    assert_eq!(
        Client4::connect_url(&url("version=4.1"), 2)
            .unwrap()
            .minor_version(),
        1
    );
    assert_eq!(
        Client4::connect_url(&url("version=4.2"), 2)
            .unwrap()
            .minor_version(),
        2
    );
    let e = storbench_nfs::Client::mount(&url("version=4.1"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("NFSv3") && !e.contains('\n'), "{e}");
}

#[test]
fn v4_nconnect_spreads_one_session_over_two_connections() {
    let Some(g) = server() else { return };
    let data = pattern(1 << 20, 9);
    fs::write(g.export_dir().join("n.bin"), &data).unwrap();
    let url = NfsUrl::parse(&format!("{}?nconnect=2", g.url4(""))).unwrap();
    let mut c = Client4::connect(&url, 1, 16).unwrap();
    assert_eq!(c.transport().connections(), 2);
    let f = c.open("n.bin", SHARE_ACCESS_READ, None).unwrap();
    let mut back = vec![0u8; data.len()];
    for (i, chunk) in back.chunks_mut(64 << 10).enumerate() {
        let off = (i * (64 << 10)) as u64;
        unsafe {
            c.submit_read(f, off, chunk.as_mut_ptr(), 64 << 10, i as u64)
                .unwrap()
        };
    }
    let mut n = 0;
    while n < 16 {
        n += c.reap(1, &mut |_, b| assert_eq!(b, 64 << 10)).unwrap();
    }
    assert!(back == data);
    c.close(f).unwrap();
}
