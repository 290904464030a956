//! The bodies of the cargo-fuzz targets in `fuzz/`, kept here so that the normal test suite
//! replays the kept corpus through them on a stable toolchain (`tests/fuzz_corpus.rs`), and
//! the fuzz targets stay one line each. Not an API: each function panics when the property
//! it checks does not hold.

use crate::framing::RecordReader;
use crate::url::NfsUrl;
use crate::{proto, rpc};

/// Everything a server sends: record marking (in read splits of the first byte's size), the
/// RPC reply header, and every result decoder. None may panic, loop or allocate without
/// bound.
pub fn replies(data: &[u8]) {
    let Some((&split, stream)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(split).max(1);
    let mut reader = RecordReader::new(256, 1 << 16);
    let mut rest = stream;
    while !rest.is_empty() {
        let n = reader.push(&rest[..chunk.min(rest.len())]);
        if n == 0 {
            break;
        }
        rest = &rest[n..];
        loop {
            match reader.next_record() {
                Ok(Some(range)) => decode(reader.record(range)),
                Ok(None) => {
                    // What a direct READ looks at while a record is still arriving.
                    if let Some((head, _)) = reader.partial() {
                        decode_head(head);
                    }
                    break;
                }
                Err(_) => return,
            }
        }
    }
}

fn decode_head(head: &[u8]) {
    if let Ok(header) = rpc::parse_reply(head) {
        let _ = proto::res_read_head(&head[header.body..]);
    }
}

fn decode(record: &[u8]) {
    let Ok(header) = rpc::parse_reply(record) else {
        return;
    };
    let body = &record[header.body..];
    let _ = proto::res_read(body);
    let _ = proto::res_read_head(body);
    let _ = proto::res_write(body);
    let _ = proto::res_commit(body);
    let _ = proto::res_getattr(body);
    let _ = proto::res_lookup(body);
    let _ = proto::res_create(body);
    let _ = proto::res_link(body);
    let _ = proto::res_readlink(body);
    let _ = proto::res_wcc(body);
    let _ = proto::res_readdirplus(body);
    let _ = rpc::reply_xid(record);
    let _ = proto::res_fsinfo(body);
    let _ = proto::res_fsstat(body);
    let _ = proto::res_mnt(body);
    let _ = proto::res_export(body);
    let _ = proto::res_getport(body);
}

/// Everything an NFSv4 server sends: record marking as in [`replies`], the RPC reply
/// header, and the COMPOUND result decoder walking every result by its operation number.
pub fn replies4(data: &[u8]) {
    let Some((&split, stream)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(split).max(1);
    let mut reader = RecordReader::new(256, 1 << 16);
    let mut rest = stream;
    while !rest.is_empty() {
        let n = reader.push(&rest[..chunk.min(rest.len())]);
        if n == 0 {
            break;
        }
        rest = &rest[n..];
        loop {
            match reader.next_record() {
                Ok(Some(range)) => {
                    let record = reader.record(range);
                    if let Ok(header) = rpc::parse_reply(record) {
                        let body = &record[header.body..];
                        let _ = crate::v4::walk(body);
                        let _ = crate::v4::locate_read(body);
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
}

/// Any text as an `nfs://` URL: a URL whose path is absolute and normalised (no `//`, `.`
/// or `..` parts) and that can be printed and joined, or one error line; never a panic.
pub fn url(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match NfsUrl::parse(text) {
        Ok(u) => {
            assert!(u.path.starts_with('/'), "relative path {:?}", u.path);
            let parts = u.path.split('/').skip(1);
            assert!(
                u.path == "/" || parts.clone().all(|p| !matches!(p, "" | "." | "..")),
                "path not normalised: {:?}",
                u.path
            );
            assert!(!u.host.is_empty() && u.port != Some(0) && u.nconnect >= 1);
            let _ = (u.to_string(), u.host_port(2049));
            if let Ok(j) = u.join("d/./f") {
                assert!(j.path.ends_with("/d/f"), "join gave {:?}", j.path);
            }
            assert!(u.join("../x").is_err(), "join climbed out of {:?}", u.path);
        }
        Err(e) => {
            // Input with control characters is echoed as given; only its shape is checked.
            if !text.chars().any(char::is_control) {
                let msg = e.to_string();
                assert!(!msg.contains('\n'), "multi-line error: {msg}");
            }
        }
    }
}
