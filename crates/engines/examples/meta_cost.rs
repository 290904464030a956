//! What the local engine's metadata calls cost beyond the bare system calls bonnie++ makes:
//! creates (empty, created and closed), stats and unlinks through libc directly (exactly
//! bonnie++'s calls: bare names in the working directory), through
//! the name-relative `MetaOps::*_in` calls bonnie's timed loops use, and through the
//! path-based calls (a path joined per file, split again by the engine, and created files
//! entered into its file table), in alternating batches of 2,000 (each side first in turn)
//! so that this machine's drifts (±20 % over seconds) hit all three alike.
//!
//! usage: meta_cost DIR [FILES] [ROUNDS]      (DIR on tmpfs shows the most: its calls are
//!                                             the cheapest, so overhead weighs the most)
//! prints per round and operation: µs per call each way and the rate ratios to libc

mod support;

use std::ffi::CString;
use std::time::Duration;

use storbench_core::{DirRef, MetaOps, MetaPath, NameList, OpenOptions, RelPath};
use storbench_engines::local::LocalFiles;
use storbench_job::target::Target;

use support::{BATCH, take_turns};

struct Bench {
    files: LocalFiles,
    /// Where each side works, so none finds another's files.
    engine_dir: DirRef,
    /// The by-path side's directory, the root its names are joined to.
    by_path_dir: Target,
    names: NameList,
    c_names: Vec<CString>,
    op: Op,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Create,
    Stat,
    Unlink,
}

impl Bench {
    /// The operation on file `i` by a bare system call, exactly as bonnie++ 2.00a makes it
    /// (strace): a bare name relative to the working directory, created with mode 0600 and
    /// no O_CLOEXEC.
    fn libc(&mut self, i: usize) {
        let name = self.c_names[i].as_ptr();
        // SAFETY: a C string and (for stat) a stat buffer.
        let ok = unsafe {
            match self.op {
                Op::Create => {
                    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
                    let fd = libc::openat(libc::AT_FDCWD, name, flags, 0o600);
                    fd >= 0 && libc::close(fd) == 0
                }
                Op::Stat => {
                    let mut st: libc::stat = std::mem::zeroed();
                    libc::stat(name, &mut st) == 0
                }
                Op::Unlink => libc::unlink(name) == 0,
            }
        };
        assert!(ok, "{:?} {:?}", self.op, self.c_names[i]);
    }

    /// The operation on file `i` through the engine, as storbench bonnie makes it.
    fn engine(&mut self, i: usize) {
        let (dir, name) = (&self.engine_dir, self.names.get(i));
        match self.op {
            Op::Create => self.files.create_empty_in(dir, name).unwrap(),
            Op::Stat => drop(self.files.stat_in(dir, name).unwrap()),
            Op::Unlink => self.files.unlink_in(dir, name).unwrap(),
        }
    }

    /// The operation on file `i` through the engine's path-based calls.
    fn by_path(&mut self, i: usize) {
        let name = RelPath::new(self.names.get(i)).unwrap();
        let path = MetaPath::new(&self.by_path_dir, name);
        match self.op {
            Op::Create => {
                let open = OpenOptions {
                    write: true,
                    ..OpenOptions::default()
                };
                let file = self.files.create(path, &open).unwrap();
                drop(self.files.close(file).unwrap());
            }
            Op::Stat => drop(self.files.stat(path).unwrap()),
            Op::Unlink => self.files.unlink(path).unwrap(),
        }
    }
}

/// Times `count` calls each way (libc, by name, by path) in alternating batches.
fn compare(b: &mut Bench, count: usize) -> [Duration; 3] {
    let sides: [fn(&mut Bench, usize); 3] = [Bench::libc, Bench::engine, Bench::by_path];
    take_turns(count, |side, i| sides[side](b, i))
}

fn main() {
    let support::Args {
        base,
        dir: root,
        count,
        rounds,
    } = support::args("meta_cost", 200_000, 3);
    let engine_path = format!("{root}/engine");
    let libc_path = format!("{root}/libc");
    let by_path_dir = format!("{root}/by_path");
    for dir in [&root, &engine_path, &libc_path, &by_path_dir] {
        std::fs::create_dir(dir).expect("make the bench directories");
    }
    let mut files = LocalFiles::default();
    let mut names = NameList::with_capacity(count, count * 20);
    for i in 0..count {
        names.push(&format!("{i:010x}abcdefg"));
    }
    let c_names = names.iter().map(|n| CString::new(n).unwrap()).collect();
    // bonnie++ works in its directory by bare names.
    std::env::set_current_dir(&libc_path).expect("change to the libc side's directory");
    let engine_dir = files
        .open_dir(MetaPath::whole(&Target::Path(engine_path)))
        .unwrap();
    let mut b = Bench {
        files,
        engine_dir,
        by_path_dir: Target::Path(by_path_dir.clone()),
        names,
        c_names,
        op: Op::Create,
    };
    println!(
        "{count} files per round, batches of {BATCH}, in {}",
        base.display()
    );
    for round in 1..=rounds {
        for op in [Op::Create, Op::Stat, Op::Unlink] {
            b.op = op;
            let [libc, by_name, by_path] = compare(&mut b, count);
            let per_call = |d: Duration| d.as_secs_f64() * 1e6 / count as f64;
            let rate = |d: Duration| libc.as_secs_f64() / d.as_secs_f64();
            println!(
                "round {round} {op:<6?}: µs per call: libc {:.3}, by name {:.3}, by path {:.3}; rate vs libc: by name {:.3}, by path {:.3}",
                per_call(libc),
                per_call(by_name),
                per_call(by_path),
                rate(by_name),
                rate(by_path)
            );
        }
    }
    let Bench {
        files: mut f,
        engine_dir,
        ..
    } = b;
    f.close_dir(engine_dir);
    std::fs::remove_dir_all(&root).expect("remove the bench directories");
}
