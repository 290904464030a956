//! A small driver for engine tests: a page-aligned arena, jobs, and a queue/commit/reap loop
//! shaped like the runner's worker, so each engine is exercised through the trait only.
#![allow(dead_code)]

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use storbench_core::{
    Completion, Engine, EngineError, EngineSetup, ErrorKind, FileId, FileSpec, IoKind, IoUnit,
    MetaPath, OpenOptions, Queued,
};
use storbench_job::JobSpec;

pub const PAGE: usize = 4096;

/// Page-aligned buffers, `slots` of `slot_len` bytes, like the worker's arena.
pub struct Arena {
    ptr: NonNull<u8>,
    layout: Layout,
    pub slot_len: usize,
    pub slots: u32,
}

impl Arena {
    pub fn new(slots: u32, slot_len: usize) -> Arena {
        let layout = Layout::from_size_align(slots as usize * slot_len, PAGE).unwrap();
        // SAFETY: non-zero size layout.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) }).expect("allocation failed");
        Arena {
            ptr,
            layout,
            slot_len,
            slots,
        }
    }

    pub fn slot(&self, i: u32) -> NonNull<u8> {
        // SAFETY: i < slots.
        unsafe { NonNull::new_unchecked(self.ptr.as_ptr().add(i as usize * self.slot_len)) }
    }

    pub fn buf(&mut self, i: u32) -> &mut [u8] {
        // SAFETY: the slot lies inside the allocation and is not shared while borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.slot(i).as_ptr(), self.slot_len) }
    }

    pub fn setup(&self, iodepth: u32) -> EngineSetup {
        EngineSetup {
            iodepth,
            arena: self.ptr,
            slot_len: self.slot_len,
            slots: self.slots,
        }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

pub fn job(engine: &str, iodepth: u32, opts: &[(&str, &str)]) -> JobSpec {
    let mut job = JobSpec::new("test");
    job.ioengine = engine.to_string();
    job.iodepth = iodepth;
    for (k, v) in opts {
        job.engine_options.set(k, v).expect("a valid engine option");
    }
    job
}

pub fn rw_open(direct: bool) -> OpenOptions {
    OpenOptions {
        read: true,
        write: true,
        create: true,
        direct,
        ..OpenOptions::default()
    }
}

pub fn read_only() -> OpenOptions {
    OpenOptions {
        read: true,
        ..OpenOptions::default()
    }
}

/// One engine with its arena, driven like the runner drives it.
pub struct Driver {
    pub engine: Box<dyn Engine>,
    pub arena: Arena,
    depth: u32,
    free: Vec<u32>,
    io_of_slot: Vec<usize>,
    done: Vec<Completion>,
}

impl Driver {
    /// Creates the engine through the registry (as the runner does) and sets it up.
    pub fn new(job: &JobSpec, slot_len: usize) -> Result<Driver, EngineError> {
        let mut engine = storbench_engines::create(job)?;
        let depth = if engine.caps().synchronous {
            1
        } else {
            job.iodepth.max(1)
        };
        let arena = Arena::new(depth, slot_len);
        engine.setup(&arena.setup(depth))?;
        Ok(Driver {
            engine,
            arena,
            depth,
            free: (0..depth).rev().collect(),
            io_of_slot: vec![0; depth as usize],
            done: Vec::with_capacity(depth as usize),
        })
    }

    pub fn open(&mut self, path: &str, open: OpenOptions) -> Result<FileId, EngineError> {
        self.engine.open(&FileSpec::new(
            storbench_job::target::Target::classify(path),
            open,
        ))
    }

    /// Runs `ios` (kind, offset, len) with up to iodepth in flight. `fill` prepares the
    /// buffer of IO `i` before it is queued; `check` sees its buffer and result afterwards.
    pub fn run(
        &mut self,
        file: FileId,
        ios: &[(IoKind, u64, u32)],
        mut fill: impl FnMut(usize, &mut [u8]),
        mut check: impl FnMut(usize, &[u8], i64),
    ) -> Result<(), EngineError> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let (mut next, mut inflight) = (0, 0usize);
        while next < ios.len() || inflight > 0 {
            assert!(
                Instant::now() < deadline,
                "engine made no progress for 30 s"
            );
            while next < ios.len() {
                let Some(slot) = self.free.pop() else { break };
                let (kind, offset, len) = ios[next];
                let view = (len as usize).min(self.arena.slot_len);
                fill(next, &mut self.arena.buf(slot)[..view]);
                let io = IoUnit {
                    file,
                    kind,
                    offset,
                    len,
                    buf: self.arena.slot(slot),
                    buf_index: slot,
                    tag: slot,
                    ioprio: 0,
                };
                match self.engine.queue(&io)? {
                    Queued::Done(n) => {
                        check(next, &self.arena.buf(slot)[..view], n as i64);
                        self.free.push(slot);
                    }
                    Queued::Pending => {
                        self.io_of_slot[slot as usize] = next;
                        inflight += 1;
                    }
                    Queued::Busy => {
                        self.free.push(slot);
                        break;
                    }
                    Queued::End => panic!("a storage engine ended its stream"),
                }
                next += 1;
            }
            self.engine.commit()?;
            if inflight > 0 {
                self.done.clear();
                self.engine.reap(1, &mut self.done)?;
                for c in std::mem::take(&mut self.done) {
                    assert!(c.tag < self.depth, "completion with unknown tag {}", c.tag);
                    let i = self.io_of_slot[c.tag as usize];
                    let len = (ios[i].2 as usize).min(self.arena.slot_len);
                    check(i, &self.arena.buf(c.tag)[..len], c.result);
                    self.free.push(c.tag);
                    inflight -= 1;
                }
            }
        }
        Ok(())
    }

    /// Runs one IO and returns its result (bytes or -errno).
    pub fn one(
        &mut self,
        file: FileId,
        kind: IoKind,
        offset: u64,
        len: u32,
    ) -> Result<i64, EngineError> {
        let mut result = None;
        self.run(
            file,
            &[(kind, offset, len)],
            |_, _| {},
            |_, _, r| result = Some(r),
        )?;
        Ok(result.expect("the IO completed"))
    }
}

/// Deterministic, incompressible content for block `i` of a test file.
pub fn pattern(i: usize, buf: &mut [u8]) {
    let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
}

/// Whether `dir` accepts O_DIRECT; prints why a test skips when it does not.
pub fn direct_ok(dir: &std::path::Path) -> bool {
    let path = dir.join(".direct-probe");
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: valid C string.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_CREAT | libc::O_RDWR | libc::O_DIRECT | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        eprintln!(
            "skip O_DIRECT in {}: {}",
            dir.display(),
            std::io::Error::last_os_error()
        );
        return false;
    }
    // SAFETY: we own fd.
    unsafe { libc::close(fd) };
    let _ = std::fs::remove_file(path);
    true
}

/// Whether an engine can be built here; prints why not (a probe-gated skip).
pub fn available(job: &JobSpec) -> bool {
    match storbench_engines::create(job) {
        Ok(_) => true,
        Err(e) if e.kind == ErrorKind::Unsupported => {
            eprintln!("skip {}: {e}", job.ioengine);
            false
        }
        Err(e) => panic!("creating {}: {e}", job.ioengine),
    }
}

/// Files with data made and read back by name in a directory opened with `open_dir`, as
/// bonnie's small-file tests with `-n N:max` do: `create_in`, a write, close; `open_in`, a
/// read of the same bytes, the size, close (twice, so a closed file's slot is reused).
/// Then `open_in`'s errors: a missing name, and options asking it to create. `dir_path`
/// holds a subdirectory `sub`.
pub fn data_by_name(d: &mut Driver, dir_path: &str) {
    const LEN: u32 = 4096;
    let dir = d
        .engine
        .meta()
        .unwrap()
        .open_dir(MetaPath::whole(&at(dir_path)))
        .unwrap();
    for (i, name) in ["f", "sub/g"].into_iter().enumerate() {
        let meta = d.engine.meta().unwrap();
        let file = meta.create_in(&dir, name, &rw_open(false)).unwrap();
        d.run(
            file,
            &[(IoKind::Write, 0, LEN)],
            |_, b| pattern(i, b),
            |_, _, r| assert_eq!(r, i64::from(LEN), "write {name}"),
        )
        .unwrap();
        d.engine.close(file).unwrap();
        let mut expected = vec![0u8; LEN as usize];
        pattern(i, &mut expected);
        for _ in 0..2 {
            let file = d
                .engine
                .meta()
                .unwrap()
                .open_in(&dir, name, &read_only())
                .unwrap();
            d.run(
                file,
                &[(IoKind::Read, 0, LEN)],
                |_, b| b.fill(0),
                |_, b, r| {
                    assert_eq!(r, i64::from(LEN), "read {name}");
                    assert!(b == expected.as_slice(), "{name}: data read back differs");
                },
            )
            .unwrap();
            assert_eq!(d.engine.size(file).unwrap(), u64::from(LEN), "{name}");
            d.engine.close(file).unwrap();
        }
    }
    let meta = d.engine.meta().unwrap();
    let err = meta.open_in(&dir, "sub/missing", &read_only()).unwrap_err();
    assert_eq!(err.errno, Some(libc::ENOENT), "{err}");
    assert!(err.message.contains("sub/missing"), "{err}");
    let err = meta.open_in(&dir, "f", &rw_open(false)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Unsupported, "{err}");
    assert!(err.message.contains("create_in makes new ones"), "{err}");
    for name in ["f", "sub/g"] {
        meta.unlink_in(&dir, name).unwrap();
    }
    meta.close_dir(dir);
}

/// A test's path or URL typed as the input readers type it, for the metadata calls'
/// `MetaPath` (a plain name stays a `Target::Path`: the engine takes it below its root).
pub fn at(text: impl AsRef<std::path::Path>) -> storbench_job::target::Target {
    let text = text.as_ref().to_str().expect("a UTF-8 test path");
    storbench_job::target::Target::parse(text).expect("a test target parses")
}
