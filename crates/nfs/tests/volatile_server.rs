//! The transport against a scripted NFSv3 data server that models RFC 1813's write cache
//! to the letter: UNSTABLE writes go to volatile memory, COMMIT makes it stable, FILE_SYNC
//! writes are stable at once, and a restart throws away everything volatile and changes
//! the write verifier. Random sequences of writes (overlapping, of odd sizes), fsyncs and
//! restarts at random requests must always end with the stable image equal to what the
//! client wrote last, after every fsync and at the end. Calls waiting together are executed
//! in random order (NFS servers run outstanding calls concurrently). Replies are delivered in random
//! pieces and sometimes in two record fragments, so record reassembly and READ payloads
//! placed straight into the caller's buffer are exercised on a real socket too.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use proptest::prelude::*;
use storbench_nfs::rpc::Auth;
use storbench_nfs::xdr::{Dec, Enc};
use storbench_nfs::{Fh, Stable, Transport, TransportConfig};

const FILE: usize = 192 << 10;

struct Disk {
    stable: Vec<u8>,
    volatile: Vec<u8>,
    verf: u64,
    /// Requests served so far, and at which ones the server crashes (before applying).
    served: u32,
    crash_at: Vec<u32>,
    restarts: u32,
}

fn rng(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// One whole record (fragments joined), or `None` when the client closed.
fn read_record(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut rec = Vec::new();
    loop {
        let mut mark = [0u8; 4];
        s.read_exact(&mut mark).ok()?;
        let mark = u32::from_be_bytes(mark);
        let start = rec.len();
        rec.resize(start + (mark & 0x7fff_ffff) as usize, 0);
        s.read_exact(&mut rec[start..]).ok()?;
        if mark & 0x8000_0000 != 0 {
            return Some(rec);
        }
    }
}

/// Sends a reply as one or two fragments, written in random pieces.
fn send(s: &mut TcpStream, body: &[u8], seed: &mut u64) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    let split = if rng(seed).is_multiple_of(4) {
        (rng(seed) as usize % body.len()).max(1)
    } else {
        body.len()
    };
    for (part, last) in [
        (&body[..split], split == body.len()),
        (&body[split..], true),
    ] {
        if part.is_empty() {
            continue;
        }
        let mark = part.len() as u32 | if last { 0x8000_0000 } else { 0 };
        bytes.extend_from_slice(&mark.to_be_bytes());
        bytes.extend_from_slice(part);
    }
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let n = (rng(seed) as usize % (rest.len().min(48 << 10)) + 1).min(rest.len());
        s.write_all(&rest[..n])?;
        rest = &rest[n..];
        if rest.len() > 16 << 10 {
            thread::sleep(Duration::from_micros(200));
        }
    }
    Ok(())
}

/// Decodes one call and applies it; `None` for anything but READ, WRITE and COMMIT.
fn answer(call: &[u8], disk: &mut Disk) -> Option<Vec<u8>> {
    let mut d = Dec::new(call);
    let xid = d.u32().ok()?;
    let _call_rpcvers_prog_vers = (d.u32().ok()?, d.u32().ok()?, d.u32().ok()?, d.u32().ok()?);
    let proc_ = d.u32().ok()?;
    d.u32().ok()?;
    d.opaque(400, "cred").ok()?;
    d.u32().ok()?;
    d.opaque(400, "verf").ok()?;
    d.opaque(64, "fh").ok()?;
    let offset = d.u64().ok()? as usize;
    let count = d.u32().ok()? as usize;
    let mut out = Vec::new();
    let mut e = Enc::new(&mut out);
    e.u32(xid).u32(1).u32(0).u32(0).u32(0).u32(0); // accepted, AUTH_NONE, SUCCESS
    match proc_ {
        6 => {
            let end = (offset + count).min(FILE);
            let data = &disk.volatile[offset.min(end)..end];
            // status, no post_op_attr, count, eof, data
            e.u32(0)
                .u32(0)
                .u32(data.len() as u32)
                .bool(end == FILE)
                .opaque(data);
        }
        7 => {
            let stable = d.u32().ok()?;
            let data = d.opaque(1 << 20, "data").ok()?;
            assert_eq!(data.len(), count, "WRITE count and data length");
            disk.volatile[offset..offset + count].copy_from_slice(data);
            if stable != 0 {
                disk.stable[offset..offset + count].copy_from_slice(data);
            }
            e.u32(0).u32(0).u32(0).u32(count as u32).u32(stable);
            e.u64(disk.verf);
        }
        21 => {
            disk.stable.copy_from_slice(&disk.volatile);
            e.u32(0).u32(0).u32(0).u64(disk.verf);
        }
        _ => return None,
    }
    Some(out)
}

/// Whether another call has started to arrive.
fn more_waiting(s: &TcpStream) -> bool {
    let _ = s.set_nonblocking(true);
    let waiting = matches!(s.peek(&mut [0u8; 1]), Ok(n) if n > 0);
    let _ = s.set_nonblocking(false);
    waiting
}

/// The calls waiting on a connection (at least one), or `None` when it closed.
fn read_batch(s: &mut TcpStream) -> Option<Vec<Vec<u8>>> {
    let mut batch = vec![read_record(s)?];
    while batch.len() < 16 && more_waiting(s) {
        batch.push(read_record(s)?);
    }
    Some(batch)
}

/// Serves connections one after the other. Calls that are waiting together are executed
/// in a random order, as a server running them on several threads may.
fn server(disk: Arc<Mutex<Disk>>, seed: u64) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    thread::spawn(move || {
        let mut seed = seed | 1;
        for conn in l.incoming() {
            let Ok(mut s) = conn else { return };
            'conn: while let Some(mut batch) = read_batch(&mut s) {
                while !batch.is_empty() {
                    let call = batch.swap_remove(rng(&mut seed) as usize % batch.len());
                    let mut d = disk.lock().unwrap();
                    let n = d.served;
                    d.served += 1;
                    if d.crash_at.contains(&n) {
                        d.volatile = d.stable.clone();
                        d.verf += 1;
                        d.restarts += 1;
                        break 'conn;
                    }
                    let Some(reply) = answer(&call, &mut d) else {
                        return;
                    };
                    drop(d);
                    if send(&mut s, &reply, &mut seed).is_err() {
                        break 'conn;
                    }
                }
            }
        }
    });
    addr
}

#[derive(Clone, Debug)]
enum Step {
    Write { offset: usize, len: usize },
    Fsync,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (0..FILE - 1, 1usize..40_000).prop_map(|(offset, len)| Step::Write {
            offset,
            len: len.min(FILE - offset),
        }),
        1 => Just(Step::Fsync),
    ]
}

struct Client {
    t: Transport,
    fh: Fh,
    bufs: Vec<Vec<u8>>,
    /// What each buffer slot is writing now.
    busy: Vec<Option<(usize, usize)>>,
}

impl Client {
    fn reap_one(&mut self) {
        self.t.flush().unwrap();
        let busy = &mut self.busy;
        self.t
            .wait(1, &mut |user, _| busy[user as usize] = None)
            .unwrap();
    }

    fn drain(&mut self) {
        while self.busy.iter().any(Option::is_some) {
            self.reap_one();
        }
    }

    /// Writes `data` at `offset` once a buffer is free and no overlapping write is out
    /// (the order of overlapping writes in flight together is not defined by NFS).
    fn write(&mut self, offset: usize, data: &[u8], chunk: u32) {
        let overlaps = |b: &[Option<(usize, usize)>]| {
            b.iter()
                .flatten()
                .any(|&(o, l)| o < offset + data.len() && offset < o + l)
        };
        while overlaps(&self.busy) || self.busy.iter().all(Option::is_some) {
            self.reap_one();
        }
        let slot = self.busy.iter().position(Option::is_none).unwrap();
        self.bufs[slot][..data.len()].copy_from_slice(data);
        self.busy[slot] = Some((offset, data.len()));
        let p = self.bufs[slot].as_ptr();
        // SAFETY: the slot's buffer is left alone until its completion is reaped.
        unsafe {
            self.t
                .write(
                    &self.fh,
                    0,
                    offset as u64,
                    p,
                    data.len() as u32,
                    chunk,
                    Stable::Unstable,
                    slot as u64,
                )
                .unwrap()
        };
        self.t.flush().unwrap();
    }

    fn fsync(&mut self) {
        self.drain();
        self.t.commit(&self.fh, 0, 999).unwrap();
        self.t.flush().unwrap();
        let mut done = false;
        while !done {
            self.t.wait(1, &mut |user, _| done |= user == 999).unwrap();
        }
    }

    fn read_all(&mut self, rsize: u32, piece: usize) -> Vec<u8> {
        let mut back = vec![0u8; FILE];
        let mut n = 0;
        for (i, part) in back.chunks_mut(piece).enumerate() {
            // SAFETY: `back` outlives the waits below.
            unsafe {
                self.t
                    .read(
                        &self.fh,
                        0,
                        (i * piece) as u64,
                        part.as_mut_ptr(),
                        part.len() as u32,
                        rsize,
                        i as u64,
                    )
                    .unwrap()
            };
            n += 1;
        }
        self.t.flush().unwrap();
        let mut got = 0;
        while got < n {
            got += self.t.wait(1, &mut |_, _| {}).unwrap();
        }
        back
    }
}

/// Runs the steps; returns how often the server restarted and how many verifier changes
/// the client saw.
fn run(steps: &[Step], crash_at: Vec<u32>, depth: usize, ring: usize, seed: u64) -> (u32, u32) {
    let disk = Arc::new(Mutex::new(Disk {
        stable: vec![0; FILE],
        volatile: vec![0; FILE],
        verf: 0x5eed_0000,
        served: 0,
        crash_at,
        restarts: 0,
    }));
    let addr = server(Arc::clone(&disk), seed);
    let cfg = TransportConfig {
        server: addr.to_string(),
        addrs: vec![addr],
        connections: 1,
        timeout: Duration::from_secs(5),
        reconnect_window: Duration::from_secs(10),
        recv_capacity: 4096,
    };
    let mut t = Transport::connect(cfg, Auth::sys("t", 0, 0), "NFS").unwrap();
    t.set_uncommitted_limit(ring);
    t.set_path(0, "/export/f");
    let mut c = Client {
        t,
        fh: Fh::new(&[7; 8]).unwrap(),
        bufs: vec![vec![0; 40_000]; depth],
        busy: vec![None; depth],
    };
    let mut model = vec![0u8; FILE];
    let mut s = seed | 1;
    for step in steps {
        match *step {
            Step::Write { offset, len } => {
                let data: Vec<u8> = (0..len).map(|_| rng(&mut s) as u8).collect();
                model[offset..offset + len].copy_from_slice(&data);
                c.write(offset, &data, 12 << 10);
            }
            Step::Fsync => {
                c.fsync();
                assert!(
                    disk.lock().unwrap().stable == model,
                    "not stable after fsync"
                );
            }
        }
    }
    c.drain();
    c.t.commit_wait(&c.fh, 0).unwrap();
    assert!(
        disk.lock().unwrap().stable == model,
        "not stable at the end"
    );
    assert!(
        c.read_all(96 << 10, 160 << 10) == model,
        "read back differs"
    );
    let restarts = disk.lock().unwrap().restarts;
    (restarts, c.t.verifier_changes())
}

#[test]
fn restarts_with_everything_volatile_lost() {
    let steps: Vec<Step> = (0..60)
        .map(|i| Step::Write {
            offset: (i * 7919) % (FILE - 30_000),
            len: 1 + (i * 4099) % 29_000,
        })
        .collect();
    // Crashes on the 10th, 25th and 26th request: data, then a restart during recovery.
    let (restarts, seen) = run(&steps, vec![10, 25, 26], 6, 128 << 10, 42);
    assert_eq!(restarts, 3);
    assert!(seen >= 2, "{seen} verifier changes seen");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn any_writes_fsyncs_and_restarts_end_stable(
        steps in proptest::collection::vec(step(), 1..50),
        crash_at in proptest::collection::vec(0u32..120, 0..3),
        depth in 1usize..8,
        ring in prop_oneof![Just(48usize << 10), Just(256 << 10), Just(4 << 20)],
        seed in any::<u64>(),
    ) {
        run(&steps, crash_at, depth, ring, seed);
    }
}
