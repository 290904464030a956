//! Everything a server sends passes through here: record marking (in arbitrary read
//! splits), the RPC reply header, and every result decoder. None may panic, loop or
//! allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storbench_nfs::framing::RecordReader;
use storbench_nfs::{proto, rpc};

fuzz_target!(|data: &[u8]| {
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
});

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
    let _ = proto::res_wcc(body);
    let _ = proto::res_readdirplus(body);
    let _ = proto::res_fsinfo(body);
    let _ = proto::res_mnt(body);
    let _ = proto::res_export(body);
    let _ = proto::res_getport(body);
}
