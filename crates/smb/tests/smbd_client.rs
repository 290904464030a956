//! The client against a real Samba smbd on 127.0.0.1 (skips with a reason when Samba is not
//! installed).

use std::fs;

use storbench_smb::{Client, ClientConfig, NtStatus, SmbUrl, Submit};
use storbench_testkit::smbd::{
    self, GUEST_SHARE, PRIVATE_SHARE, READ_ONLY_SHARE, SHARE, Smbd, SmbdOptions,
};

fn server(opts: SmbdOptions) -> Option<Smbd> {
    if let Some(why) = smbd::unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    Some(Smbd::start_with(opts).expect("start smbd"))
}

fn url(s: &Smbd, share: &str, query: &str) -> String {
    format!("smb://{}@127.0.0.1:{}/{share}{query}", s.user(), s.port)
}

fn login(s: &Smbd, query: &str) -> Client {
    let u = SmbUrl::parse(&url(s, SHARE, query)).unwrap();
    let cfg = ClientConfig::from_url(&u, Some(s.password().to_string())).unwrap();
    Client::connect(&cfg).unwrap_or_else(|e| panic!("login: {e}\n{}", s.log()))
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0] ^ seed)
        .collect()
}

/// Writes then reads back 3 MiB in 1 MiB IOs (multi-credit) plus a small one.
fn round_trip(c: &mut Client, s: &Smbd, name: &str) {
    let data = pattern(3 << 20, 7);
    let (id, _) = c.open(name, true, true).expect("create");
    for (i, chunk) in data.chunks(1 << 20).enumerate() {
        assert_eq!(c.write_at(id, (i as u64) << 20, chunk).unwrap(), 1 << 20);
    }
    c.flush(id).unwrap();
    let mut back = vec![0u8; data.len()];
    for (i, chunk) in back.chunks_mut(1 << 20).enumerate() {
        assert_eq!(c.read_at(id, (i as u64) << 20, chunk).unwrap(), 1 << 20);
    }
    assert!(back == data, "read back differs");
    let mut tail = [0u8; 10];
    assert_eq!(c.read_at(id, (3 << 20) - 4, &mut tail).unwrap(), 4);
    assert_eq!(
        c.read_at(id, 5 << 20, &mut tail).unwrap(),
        0,
        "read past the end"
    );
    c.close(id).unwrap();
    let on_disk = fs::read(s.share_dir(SHARE).join(name)).unwrap();
    assert!(on_disk == data, "server file differs");
    c.unlink(name).unwrap();
    assert!(!s.share_dir(SHARE).join(name).exists());
}

#[test]
fn smb_user_login_round_trips_data_on_every_dialect() {
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    for (vers, name) in [
        ("2.0.2", "2.0.2"),
        ("2.1", "2.1"),
        ("3.0", "3.0"),
        ("3.0.2", "3.0.2"),
        ("3.1.1", "3.1.1"),
    ] {
        let mut c = login(&s, &format!("?vers={vers}"));
        assert_eq!(c.info().dialect_name(), name);
        assert!(!c.info().guest);
        if vers == "2.0.2" {
            assert_eq!(c.info().max_read, 65536);
        } else {
            assert!(c.info().max_read >= 1 << 20, "{:?}", c.info());
        }
        round_trip(&mut c, &s, &format!("f-{vers}"));
        c.logoff().unwrap();
    }
}

#[test]
fn smb_signing_required_signs_with_each_dialects_algorithm() {
    let Some(s) = server(SmbdOptions {
        signing: Some("mandatory"),
        ..Default::default()
    }) else {
        return;
    };
    for (vers, alg) in [
        ("2.1", "HMAC-SHA256"),
        ("3.0", "AES-128-CMAC"),
        ("3.1.1", "AES-128-GMAC"),
    ] {
        let mut c = login(&s, &format!("?vers={vers}"));
        assert_eq!(c.info().signing, Some(alg), "{vers}");
        round_trip(&mut c, &s, &format!("signed-{vers}"));
    }
}

#[test]
fn smb_encryption_required_seals_every_message() {
    let Some(s) = server(SmbdOptions {
        encrypt: Some("required"),
        ..Default::default()
    }) else {
        return;
    };
    for (vers, cipher) in [("3.0", "AES-128-CCM"), ("3.1.1", "AES-128-GCM")] {
        let mut c = login(&s, &format!("?vers={vers}"));
        assert_eq!(c.info().cipher, Some(cipher), "{vers}");
        round_trip(&mut c, &s, &format!("sealed-{vers}"));
    }
    // 2.1 has no encryption: refused by the server, one line.
    let u = SmbUrl::parse(&url(&s, SHARE, "?vers=2.1")).unwrap();
    let cfg = ClientConfig::from_url(&u, Some(s.password().into())).unwrap();
    let e = Client::connect(&cfg)
        .err()
        .expect("2.1 cannot encrypt")
        .to_string();
    assert!(!e.contains('\n'), "{e}");
}

/// A share flagged for encryption on a server that does not ask the session for it: sealing
/// is switched on at TREE_CONNECT, every later message is encrypted, and data round trips.
/// Where the dialect has no encryption (2.1) the refusal is one line naming `?seal=1`.
#[test]
fn smb_a_share_that_requires_encryption_is_sealed_from_its_tree_connect() {
    let Some(s) = server(SmbdOptions {
        sealed_share: true,
        ..Default::default()
    }) else {
        return;
    };
    let dir = s.share_dir(smbd::SEALED_SHARE);
    for (vers, cipher) in [("3.0", "AES-128-CCM"), ("3.1.1", "AES-128-GCM")] {
        let u = SmbUrl::parse(&url(&s, smbd::SEALED_SHARE, &format!("?vers={vers}"))).unwrap();
        let cfg = ClientConfig::from_url(&u, Some(s.password().into())).unwrap();
        let mut c = Client::connect(&cfg).unwrap_or_else(|e| panic!("{vers}: {e}\n{}", s.log()));
        assert_eq!(c.info().cipher, Some(cipher), "{vers}");
        let data = pattern(1 << 20, 3);
        let name = format!("on-sealed-{vers}");
        let (id, _) = c.open(&name, true, true).expect("create");
        assert_eq!(c.write_at(id, 0, &data).unwrap(), 1 << 20);
        let mut back = vec![0u8; data.len()];
        assert_eq!(c.read_at(id, 0, &mut back).unwrap(), 1 << 20);
        assert!(back == data, "{vers}: read back differs");
        c.close(id).unwrap();
        assert!(fs::read(dir.join(&name)).unwrap() == data, "{vers}");
        c.unlink(&name).unwrap();
    }
    let u = SmbUrl::parse(&url(&s, smbd::SEALED_SHARE, "?vers=2.1")).unwrap();
    let cfg = ClientConfig::from_url(&u, Some(s.password().into())).unwrap();
    let e = Client::connect(&cfg)
        .err()
        .expect("2.1 cannot encrypt")
        .to_string();
    assert!(!e.contains('\n') && e.contains("?seal=1"), "{e}");
}

#[test]
fn smb_seal_on_request_encrypts_on_a_server_that_does_not_require_it() {
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    let mut c = login(&s, "?seal=1");
    assert!(c.info().cipher.is_some());
    round_trip(&mut c, &s, "sealed-asked");
}

#[test]
fn smb_guest_and_refusals_are_named() {
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    let u = SmbUrl::parse(&format!("smb://127.0.0.1:{}/{GUEST_SHARE}", s.port)).unwrap();
    let mut g = Client::connect(&ClientConfig::from_url(&u, None).unwrap()).expect("guest");
    assert!(g.info().guest);
    g.mkdir("d").unwrap();
    let (id, _) = g.open("d/x", true, true).unwrap();
    g.write_at(id, 0, b"guest data").unwrap();
    g.close(id).unwrap();
    assert_eq!(
        fs::read(s.share_dir(GUEST_SHARE).join("d/x")).unwrap(),
        b"guest data"
    );
    let names: Vec<String> = g.list("d").unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["x"]);
    assert_eq!(g.stat("d/x").unwrap().size, 10);
    assert!(g.stat("d").unwrap().is_dir());
    let e = g.rmdir("d").unwrap_err();
    assert_eq!(e.status(), Some(NtStatus(0xC000_0101)), "{e}");
    g.unlink("d/x").unwrap();
    g.rmdir("d").unwrap();
    assert!(
        fs::read_dir(s.share_dir(GUEST_SHARE))
            .unwrap()
            .next()
            .is_none()
    );

    let connect = |share: &str, pw: &str| {
        let u = SmbUrl::parse(&url(&s, share, "")).unwrap();
        Client::connect(&ClientConfig::from_url(&u, Some(pw.into())).unwrap())
            .err()
            .expect("refused")
    };
    let e = connect(SHARE, "wrong");
    assert_eq!(e.status(), Some(NtStatus::LOGON_FAILURE), "{e}");
    assert!(e.to_string().contains("bad user name or password"), "{e}");
    let e = connect("nosuchshare", s.password());
    assert_eq!(e.status(), Some(NtStatus::BAD_NETWORK_NAME), "{e}");
    assert!(e.to_string().contains("share not found"), "{e}");
    let e = connect(PRIVATE_SHARE, s.password());
    assert_eq!(e.status(), Some(NtStatus::ACCESS_DENIED), "{e}");

    let mut c = login(&s, "");
    let e = c.open("missing/file", false, false).unwrap_err();
    assert!(e.to_string().contains("missing/file"), "{e}");
    let (id, _) = c.open("once", true, true).unwrap();
    c.close(id).unwrap();
    let e = c.open("once", true, true).unwrap_err();
    assert_eq!(e.status(), Some(NtStatus::OBJECT_NAME_COLLISION), "{e}");
    c.unlink("once").unwrap();
}

#[test]
fn smb_unreachable_server_is_one_line() {
    let port = storbench_testkit::ports::free_port().unwrap();
    let u = SmbUrl::parse(&format!("smb://127.0.0.1:{port}/s?timeout=2")).unwrap();
    let e = Client::connect(&ClientConfig::from_url(&u, None).unwrap())
        .err()
        .expect("nothing listens")
        .to_string();
    assert!(e.contains("cannot connect") && !e.contains('\n'), "{e}");
}

#[test]
fn smb_pipelined_ios_complete_by_message_id_within_the_credit_window() {
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    let mut c = login(&s, "?credits=64");
    let (id, _) = c.open("pipe", true, true).unwrap();
    let bs = 64 * 1024;
    let n = 160usize;
    let data = pattern(bs * n, 3);
    let mut done = Vec::new();
    let mut next = 0usize;
    let mut busy = 0u32;
    while done.len() < n {
        while next < n {
            // SAFETY: `data` outlives every IO (all are reaped below).
            let r = unsafe {
                c.submit_write(
                    id,
                    (next * bs) as u64,
                    data[next * bs..].as_ptr(),
                    bs as u32,
                    next as u64,
                )
            }
            .unwrap();
            if r == Submit::Busy {
                busy += 1;
                break;
            }
            next += 1;
        }
        c.commit().unwrap();
        c.reap(1, &mut done).unwrap();
    }
    let mut users: Vec<u64> = done.iter().map(|d| d.user).collect();
    users.sort_unstable();
    assert_eq!(users, (0..n as u64).collect::<Vec<_>>());
    assert!(done.iter().all(|d| d.result == Ok(bs as u64)));
    assert!(
        busy > 0,
        "160 one-credit writes never found a window of about 64 credits full"
    );
    c.close(id).unwrap();
    assert!(fs::read(s.share_dir(SHARE).join("pipe")).unwrap() == data);
    c.unlink("pipe").unwrap();
}

#[test]
fn smb_share_list_names_every_share() {
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    for who in [format!("{}@", s.user()), String::new()] {
        let u = SmbUrl::parse(&format!("smb://{who}127.0.0.1:{}/IPC$", s.port)).unwrap();
        let cfg = ClientConfig::from_url(&u, Some(s.password().into())).unwrap();
        let shares = Client::list_shares(&cfg).unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
        let mut names: Vec<(&str, &str)> = shares
            .iter()
            .map(|s| (s.name.as_str(), s.kind_name()))
            .collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                ("IPC$", "IPC"),
                (GUEST_SHARE, "disk"),
                (PRIVATE_SHARE, "disk"),
                (READ_ONLY_SHARE, "disk"),
                (SHARE, "disk")
            ],
            "{who}"
        );
    }
}

/// Metadata calls that open, act and close go out as one compounded message: one round
/// trip each, on plain, signed and sealed sessions, with the server's answers intact.
#[test]
fn smb_metadata_calls_compound_create_and_close_into_one_round_trip() {
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    for query in ["", "?sign=1", "?seal=1"] {
        let mut c = login(&s, query);
        let trips = |c: &mut Client, f: &mut dyn FnMut(&mut Client)| {
            let before = c.conn().frames_sent();
            f(c);
            c.conn().frames_sent() - before
        };
        assert_eq!(
            trips(&mut c, &mut |c| c.mkdir("cd").unwrap()),
            1,
            "{query} mkdir"
        );
        assert!(s.share_dir(SHARE).join("cd").is_dir());
        assert_eq!(
            trips(&mut c, &mut |c| c.create_empty("cd/f").unwrap()),
            1,
            "{query} create"
        );
        fs::write(s.share_dir(SHARE).join("cd/f"), b"12345").unwrap();
        let mut size = 0;
        assert_eq!(
            trips(&mut c, &mut |c| size = c.stat("cd/f").unwrap().size),
            1,
            "{query} stat"
        );
        assert_eq!(size, 5, "{query}");
        let e = c.create_empty("cd/f").unwrap_err();
        assert_eq!(e.status(), Some(NtStatus::OBJECT_NAME_COLLISION), "{e}");
        let e = c.stat("cd/none").unwrap_err();
        assert_eq!(e.status(), Some(NtStatus::OBJECT_NAME_NOT_FOUND), "{e}");
        // A directory that is not empty is refused, and its handle still closed.
        let e = c.rmdir("cd").unwrap_err();
        assert_eq!(e.status(), Some(NtStatus(0xC000_0101)), "{query}: {e}");
        assert_eq!(
            trips(&mut c, &mut |c| c.unlink("cd/f").unwrap()),
            1,
            "{query} unlink"
        );
        assert_eq!(
            trips(&mut c, &mut |c| c.rmdir("cd").unwrap()),
            1,
            "{query} rmdir"
        );
        assert!(!s.share_dir(SHARE).join("cd").exists(), "{query}");
        // The session still works after every chain (credits and MessageIds in step).
        round_trip(&mut c, &s, "after-chains.dat");
    }
}

/// FileFsFullSizeInformation on the share's root: the capacity of the file system under
/// the share's directory, as statvfs(3) sees it there.
#[test]
fn fs_size_is_the_capacity_of_the_shares_file_system() {
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    let mut c = login(&s, "");
    let fs = c.fs_size().expect("QUERY_INFO FileFsFullSizeInformation");
    let local = statvfs(&s.share_dir(SHARE));
    assert_eq!(fs.total, local.0, "{fs:?}");
    assert!(fs.caller_available <= fs.total, "{fs:?}");
    // Free space moves while other tests write: within 1 GiB of what statvfs says.
    assert!(
        fs.caller_available.abs_diff(local.1) < 1 << 30,
        "{fs:?} {local:?}"
    );
    assert!(fs.unit > 0);
    c.logoff().unwrap();
}

/// (total, available to an unprivileged user) bytes of the file system under `dir`.
fn statvfs(dir: &std::path::Path) -> (u64, u64) {
    let out = std::process::Command::new("stat")
        .args(["-f", "-c", "%S %b %a"])
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    (v[0] * v[1], v[0] * v[2])
}
