//! What creating a small file with data costs through the engine, as bonnie's `-n N:max`
//! create does (`MetaOps::create_written_in`), against exactly bonnie++'s calls (`open` of
//! a bare name in the working directory, `write`, `close`). `GENERAL=1` takes the general
//! path instead (`create_in`, a `pwrite` through `Engine::queue`, `close`).
//! Both sides work in one directory (names differ by a last letter), in alternating
//! batches of 2,000, each side first in turn. `AA=1` runs bonnie++'s calls on both sides
//! (the scatter); `SYSCALLS=1` makes side 2 the engine's system calls without the engine
//! (`openat` by an `O_PATH` directory descriptor, `O_CLOEXEC`, 0644, `pwrite`), which
//! separates what the kernel does differently from what the engine's code costs.
//!
//! usage: data_create DIR [FILES] [ROUNDS]    (DIR on tmpfs: the cheapest calls)
//! prints per round: µs per file each way, and the engine's rate over bonnie++'s

mod support;

use std::ffi::CString;
use std::ptr::NonNull;
use std::time::Duration;

use storbench_core::{DirRef, Engine, EngineSetup, IoKind, IoUnit, MetaPath, OpenOptions, Queued};
use storbench_job::JobSpec;
use storbench_job::target::Target;

use support::{BATCH, take_turns};

/// What side 2 runs.
#[derive(Clone, Copy, PartialEq)]
enum Side2 {
    Engine,
    EngineGeneral,
    BonnieCalls,
    EngineCalls,
}

struct Bench {
    engine: Box<dyn Engine>,
    dir: DirRef,
    /// The directory as an `O_PATH` descriptor, for `Side2::EngineCalls`.
    dir_fd: i32,
    buf: Vec<u8>,
    names: Vec<[String; 2]>,
    c_names: Vec<[CString; 2]>,
    sizes: Vec<u32>,
    side2: Side2,
}

impl Bench {
    /// File `i` of `side` as bonnie++ makes it.
    fn bare(&mut self, side: usize, i: usize) {
        let (name, size) = (self.c_names[i][side].as_ptr(), self.sizes[i] as usize);
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
        // SAFETY: a C string, and `buf` holds at least `size` bytes.
        unsafe {
            let fd = libc::open(name, flags, 0o600);
            assert!(fd >= 0, "create");
            assert_eq!(
                libc::write(fd, self.buf.as_ptr().cast(), size),
                size as isize
            );
            libc::close(fd);
        }
    }

    /// File `i` of side 1 as storbench bonnie makes it.
    fn engine(&mut self, i: usize) {
        let meta = self
            .engine
            .meta()
            .expect("local engines have metadata calls");
        let (name, len) = (&self.names[i][1], u64::from(self.sizes[i]));
        let done = meta.create_written_in(&self.dir, name, &self.buf, len);
        assert!(
            done.unwrap(),
            "the local engine creates files with data in one call"
        );
    }

    /// File `i` of side 1 through `create_in` and the engine's IO.
    fn engine_general(&mut self, i: usize) {
        let open = OpenOptions {
            write: true,
            ..OpenOptions::default()
        };
        let meta = self
            .engine
            .meta()
            .expect("local engines have metadata calls");
        let file = meta.create_in(&self.dir, &self.names[i][1], &open).unwrap();
        let io = IoUnit {
            file,
            kind: IoKind::Write,
            offset: 0,
            len: self.sizes[i],
            buf: NonNull::new(self.buf.as_mut_ptr()).unwrap(),
            buf_index: 0,
            tag: 0,
            ioprio: 0,
        };
        match self.engine.queue(&io).unwrap() {
            Queued::Done(n) => assert_eq!(n, u64::from(self.sizes[i])),
            _ => panic!("psync completes in queue"),
        }
        self.engine.close(file).unwrap();
    }

    /// File `i` of side 1 by the system calls the engine makes, without the engine.
    fn engine_calls(&mut self, i: usize) {
        let (name, size) = (self.c_names[i][1].as_ptr(), self.sizes[i] as usize);
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC;
        // SAFETY: a directory descriptor, a C string, and `buf` holds `size` bytes.
        unsafe {
            let fd = libc::openat(self.dir_fd, name, flags, 0o644);
            assert!(fd >= 0, "create");
            let written = libc::pwrite(fd, self.buf.as_ptr().cast(), size, 0);
            assert_eq!(written, size as isize);
            libc::close(fd);
        }
    }

    fn side(&mut self, side: usize, i: usize) {
        match (side, self.side2) {
            (0, _) | (_, Side2::BonnieCalls) => self.bare(side, i),
            (_, Side2::Engine) => self.engine(i),
            (_, Side2::EngineGeneral) => self.engine_general(i),
            (_, Side2::EngineCalls) => self.engine_calls(i),
        }
    }
}

fn round(b: &mut Bench) -> [Duration; 2] {
    let times = take_turns(b.names.len(), |side, i| b.side(side, i));
    for n in b.names.iter().flatten() {
        std::fs::remove_file(n).expect("remove a bench file");
    }
    times
}

fn main() {
    let support::Args {
        base,
        dir,
        count,
        rounds,
    } = support::args("data_create", 100_000, 4);
    std::fs::create_dir(&dir).expect("make the bench directory");
    std::env::set_current_dir(&dir).expect("change to the bench directory");
    let mut job = JobSpec::new("data_create");
    job.ioengine = "psync".into();
    let mut engine = storbench_engines::create(&job).expect("psync engine");
    let mut buf = vec![7u8; 8192];
    engine
        .setup(&EngineSetup {
            iodepth: 1,
            arena: NonNull::new(buf.as_mut_ptr()).unwrap(),
            slot_len: buf.len(),
            slots: 1,
        })
        .expect("engine set-up");
    let engine_dir = engine
        .meta()
        .unwrap()
        .open_dir(MetaPath::whole(&Target::Path(dir.clone())))
        .expect("open the directory");
    let names: Vec<[String; 2]> = (0..count)
        .map(|i| [format!("{i:010x}abcdefA"), format!("{i:010x}abcdefB")])
        .collect();
    let c_names = names
        .iter()
        .map(|n| n.clone().map(|n| CString::new(n).unwrap()))
        .collect();
    // bonnie++'s sizes for `-n N:4096:1024`, from a fixed sequence.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let sizes = (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            1024 + (x % 3073) as u32
        })
        .collect();
    let (side2, label) = if std::env::var_os("AA").is_some() {
        (Side2::BonnieCalls, "bonnie++'s calls again")
    } else if std::env::var_os("GENERAL").is_some() {
        (Side2::EngineGeneral, "the engine's general path")
    } else if std::env::var_os("SYSCALLS").is_some() {
        (Side2::EngineCalls, "the engine's system calls, bare")
    } else {
        (Side2::Engine, "the engine")
    };
    let dot = CString::new(".").unwrap();
    // SAFETY: a C string; the descriptor lives until the process ends.
    let dir_fd = unsafe { libc::open(dot.as_ptr(), libc::O_PATH | libc::O_DIRECTORY) };
    assert!(dir_fd >= 0, "open the bench directory");
    let mut b = Bench {
        engine,
        dir: engine_dir,
        dir_fd,
        buf,
        names,
        c_names,
        sizes,
        side2,
    };
    println!("{count} files per round, batches of {BATCH}, in {dir}; side 2: {label}");
    for r in 1..=rounds {
        let [bare, side2] = round(&mut b);
        let per_file = |d: Duration| d.as_secs_f64() * 1e6 / count as f64;
        println!(
            "round {r}: µs per file: bonnie++'s calls {:.3}, side 2 {:.3}; rate side 2 / bonnie++'s {:.4}",
            per_file(bare),
            per_file(side2),
            bare.as_secs_f64() / side2.as_secs_f64()
        );
    }
    let dir_ref = b.dir.clone();
    b.engine.meta().unwrap().close_dir(dir_ref);
    std::env::set_current_dir(&base).expect("leave the bench directory");
    std::fs::remove_dir(&dir).expect("remove the bench directory");
}
