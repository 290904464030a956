//! What a listing whose names are removed as they come costs through the local engine's
//! `read_dir` + `unlink_in` (each batch's names copied into a `NameList`, each name again
//! into a C string) beyond the bare system calls bonnie++ makes. This is what showed that
//! bonnie's sequential delete needed `MetaOps::unlink_listed`, which removes the names
//! where the listing put them; `read_dir` + `unlink_in` remain its path with `-b`.
//! A directory of FILES empty files is emptied by two listings taking turns batch by
//! batch: one with `getdents64` + `unlinkat` straight from the listing buffer (bonnie++'s
//! readdir(3) + unlink(2)), one with `MetaOps::read_dir` + `unlink_in`. Taking turns in one
//! directory gives both sides the same directory state and this machine's drifts alike
//! (separate directories differ by ±15 % between rounds); the side that starts alternates.
//!
//! usage: list_cost DIR [FILES] [ROUNDS]     (DIR on tmpfs shows the most: its calls are
//!                                            the cheapest, so overhead weighs the most)
//!        AA=1 list_cost …                    both sides bare: how far the method itself
//!                                            is from 1.000 on this machine
//! prints per round the engine's rate relative to the bare calls: over the whole round,
//! and the median over pairs of consecutive batches (robust to the spikes of freeing work
//! that the kernel runs now and then in whichever batch is running)

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use storbench_core::{DirCursor, DirRef, MetaOps, MetaPath, NameList};
use storbench_engines::local::LocalFiles;
use storbench_job::target::Target;

/// glibc's readdir buffer.
const BUF: usize = 32 * 1024;

fn fill(dir: &str, count: usize) {
    for i in 0..count {
        std::fs::File::create(format!("{dir}/{i:010x}abcdefg")).expect("create a file");
    }
}

/// The bare side: its own descriptor and buffer, as bonnie++'s readdir(3).
struct Bare {
    fd: OwnedFd,
    buf: Vec<u8>,
    done: bool,
}

impl Bare {
    /// One batch, each name unlinked from the buffer; how many were removed.
    fn batch(&mut self) -> usize {
        // SAFETY: a directory descriptor and a buffer of the length given.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                self.fd.as_raw_fd(),
                self.buf.as_mut_ptr(),
                self.buf.len(),
            )
        };
        assert!(n >= 0, "getdents64 failed");
        self.done = n == 0;
        let (mut at, mut removed) = (0, 0);
        while at < n as usize {
            let buf = &self.buf;
            let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
            // As readdir(3)'s d_name: a pointer into the buffer, its length never looked at.
            let name = buf[at + 19..].as_ptr().cast::<libc::c_char>();
            if buf[at + 19] != b'.' {
                // SAFETY: a directory descriptor and the NUL-terminated name the kernel wrote.
                let r = unsafe { libc::unlinkat(self.fd.as_raw_fd(), name, 0) };
                assert_eq!(r, 0, "unlinkat at record {at}");
                removed += 1;
            }
            at += reclen;
        }
        removed
    }
}

/// One side of the comparison.
trait Side {
    /// Lists one batch and removes its names; how many were removed (0 at the end).
    fn batch(&mut self) -> usize;
    fn done(&self) -> bool;
}

impl Side for Bare {
    fn batch(&mut self) -> usize {
        Bare::batch(self)
    }
    fn done(&self) -> bool {
        self.done
    }
}

/// The engine side, as storbench bonnie's sequential delete.
struct Engine<'a> {
    files: &'a mut LocalFiles,
    dir: DirRef,
    cursor: DirCursor,
    batch: NameList,
}

impl Side for Engine<'_> {
    fn done(&self) -> bool {
        self.cursor.done
    }

    fn batch(&mut self) -> usize {
        self.batch.clear();
        let cursor = &mut self.cursor;
        self.files
            .read_dir(self.dir.path(), cursor, &mut self.batch)
            .expect("read_dir");
        for name in self.batch.iter() {
            self.files.unlink_in(&self.dir, name).expect("unlink_in");
        }
        self.batch.len()
    }
}

/// Empties `dir` with both sides taking turns, `first` starting. Returns each side's total
/// time and, per turn pair, the engine's rate relative to the bare calls (ns per name).
fn empty(files: &mut LocalFiles, dir: &str, first: usize) -> ([Duration; 2], Vec<f64>) {
    let bare_side = || Bare {
        fd: std::fs::File::open(dir).expect("open the directory").into(),
        buf: vec![0u8; BUF],
        done: false,
    };
    let mut bare = bare_side();
    let handle = files
        .open_dir(MetaPath::whole(&Target::Path(dir.to_owned())))
        .expect("open_dir");
    let mut engine = Engine {
        files,
        dir: handle,
        cursor: DirCursor::default(),
        batch: NameList::default(),
    };
    let mut other = bare_side();
    let aa = std::env::var_os("AA").is_some();
    let second: &mut dyn Side = if aa { &mut other } else { &mut engine };
    let (mut times, mut turn) = ([Duration::ZERO; 2], first);
    let (mut per_name, mut pairs) = ([0.0f64; 2], Vec::new());
    let mut taken = 0;
    while !(bare.done && second.done()) {
        let t = Instant::now();
        let removed = if turn == 0 {
            bare.batch()
        } else {
            second.batch()
        };
        let spent = t.elapsed();
        times[turn] += spent;
        if removed > 0 {
            per_name[turn] = spent.as_secs_f64() / removed as f64;
            taken += 1;
            if taken % 2 == 0 {
                pairs.push(per_name[0] / per_name[1]);
            }
        }
        turn = 1 - turn;
    }
    let Engine { files, dir, .. } = engine;
    files.close_dir(dir);
    (times, pairs)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(base) = args.first() else {
        eprintln!("usage: list_cost DIR [FILES] [ROUNDS]");
        std::process::exit(2);
    };
    let count: usize = args.get(1).map_or(100_000, |n| n.parse().expect("FILES"));
    let rounds: usize = args.get(2).map_or(6, |n| n.parse().expect("ROUNDS"));
    let root = format!("{base}/list_cost.{}", std::process::id());
    let dir = format!("{root}/d");
    std::fs::create_dir(&root).expect("make the bench directory");
    let mut files = LocalFiles::default();
    let mut total = [Duration::ZERO; 2];
    println!("{count} files per round, in {base}");
    let mut all_pairs = Vec::new();
    let second = if std::env::var_os("AA").is_some() {
        "second bare"
    } else {
        "engine"
    };
    for round in 1..=rounds {
        std::fs::create_dir(&dir).expect("make the directory");
        fill(&dir, count);
        let (times, mut pairs) = empty(&mut files, &dir, round % 2);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "all removed");
        files
            .rmdir(MetaPath::whole(&Target::Path(dir.clone())))
            .expect("remove the directory");
        println!(
            "round {round}: {second} rate vs bare: {:.3} over the round, {:.3} median of {} batch pairs",
            times[0].as_secs_f64() / times[1].as_secs_f64(),
            median(&mut pairs),
            pairs.len()
        );
        total[0] += times[0];
        total[1] += times[1];
        all_pairs.extend(pairs);
    }
    println!(
        "all rounds: {second} rate vs bare {:.3} over all, {:.3} median of {} batch pairs",
        total[0].as_secs_f64() / total[1].as_secs_f64(),
        median(&mut all_pairs),
        all_pairs.len()
    );
    std::fs::remove_dir(&root).expect("remove the bench directory");
}
