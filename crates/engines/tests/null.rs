//! The null engine: instant completion, the right tags, fio's null-engine queueing.

mod common;

use common::{Driver, job};
use storbench_core::{Completion, IoKind, IoUnit, OpenOptions, Queued};
use storbench_job::SizeSpec;

#[test]
fn iodepth_32_completes_everything_with_the_right_tags() {
    let mut spec = job("null", 32, &[]);
    spec.size = Some(SizeSpec::Bytes(1 << 30));
    let mut d = Driver::new(&spec, 4096).unwrap();
    let caps = d.engine.caps();
    assert!(!caps.synchronous && caps.no_data);
    let id = d
        .open("/nonexistent/null-target", OpenOptions::default())
        .unwrap();
    assert_eq!(d.engine.size(id).unwrap(), 1 << 30);

    let mut seen = vec![0u32; 1000];
    let ios: Vec<_> = (0..1000u64)
        .map(|i| (IoKind::Read, i * 4096, 4096))
        .collect();
    d.run(
        id,
        &ios,
        |_, _| {},
        |i, _, r| {
            assert_eq!(r, 4096);
            seen[i] += 1;
        },
    )
    .unwrap();
    assert!(
        seen.iter().all(|&n| n == 1),
        "every IO completed exactly once"
    );

    // Queue a full depth by hand: the 33rd is refused, a commit and reap return all 32 tags.
    let buf = d.arena.slot(0);
    for tag in 0..32 {
        let io = IoUnit {
            file: id,
            kind: IoKind::Write,
            offset: 0,
            len: 512,
            buf,
            buf_index: 0,
            tag,
            ioprio: 0,
        };
        assert_eq!(d.engine.queue(&io).unwrap(), Queued::Pending);
    }
    let extra = IoUnit {
        file: id,
        kind: IoKind::Write,
        offset: 0,
        len: 512,
        buf,
        buf_index: 0,
        tag: 99,
        ioprio: 0,
    };
    assert_eq!(d.engine.queue(&extra).unwrap(), Queued::Busy);
    let mut out = Vec::new();
    d.engine.reap(0, &mut out).unwrap();
    assert!(out.is_empty(), "nothing completes before commit");
    d.engine.commit().unwrap();
    d.engine.reap(1, &mut out).unwrap();
    let tags: Vec<u32> = out.iter().map(|c: &Completion| c.tag).collect();
    assert_eq!(tags, (0..32).collect::<Vec<_>>());
    assert!(out.iter().all(|c| c.result == 512));
}

#[test]
fn iodepth_1_is_synchronous() {
    let mut d = Driver::new(&job("null", 1, &[]), 4096).unwrap();
    assert!(d.engine.caps().synchronous);
    let id = d.open("x", OpenOptions::default()).unwrap();
    let io = IoUnit {
        file: id,
        kind: IoKind::Read,
        offset: 0,
        len: 8192,
        buf: d.arena.slot(0),
        buf_index: 0,
        tag: 0,
        ioprio: 0,
    };
    assert_eq!(d.engine.queue(&io).unwrap(), Queued::Done(8192));
    let err = d.engine.size(id).unwrap_err();
    assert!(err.message.contains("size="), "{err}");
}
