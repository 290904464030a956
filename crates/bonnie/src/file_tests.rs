//! bonnie++'s small-file tests, all through the engine's metadata operations so they run
//! over NFS too: create, stat (+ read the data), delete, first in name order (sequential,
//! readdir order for stat and delete) and then with random names in random order. Create
//! and delete end with a file-system sync inside the timed part, as bonnie++'s `sync()`.

use std::ops::ControlFlow;
use std::time::Instant;

use storbench_core::{
    DirCursor, DirRef, IoKind, Listed, MetaPath, NameList, OpenOptions, RelPath, stop,
};

use crate::error::{BonnieError, Result};
use crate::io::short;
use crate::io_tests::fill_data;
use crate::names::{Names, shuffled, subdir};
use crate::phase::Phase;
use crate::timing::{MaxLatency, Span};
use crate::worker::{Tree, Worker, check_stop, join_into, sync_dir_of};

/// What the file tests share.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FileParams {
    /// Files per copy (bonnie++'s `-n` × 1024).
    pub count: usize,
    pub num_dirs: u32,
    /// Bytes; -1 hard links, -2 symlinks to the first file.
    pub max_size: i64,
    pub min_size: u64,
    pub chunk: u32,
    pub fsync_each: bool,
    pub compressible: bool,
}

/// Create the files, sequential (`random: false`) or random names.
pub(crate) struct Create {
    pub params: FileParams,
    pub random: bool,
}

impl Phase for Create {
    type Ready = ();

    fn prepare(&self, w: &mut Worker) -> Result<()> {
        let p = &self.params;
        let names = Names::new(p.count, p.num_dirs, self.random, &mut w.rng);
        w.tree = Some(Tree {
            names,
            dir: None,
            dir_made: false,
            subdirs_made: 0,
            files_may_exist: false,
        });
        let chunk = p.chunk as usize;
        fill_data(&mut w.buf.slot_mut(0)[..chunk], &mut w.rng, p.compressible);
        make_dirs(w, p.num_dirs)
    }

    fn run(&self, w: &mut Worker, _: (), lat: &mut MaxLatency) -> Result<Option<Span>> {
        let dir = w.at("", |m, p| m.open_dir(p))?;
        let tree = w.tree.as_mut().expect("prepared");
        tree.dir = Some(dir.clone());
        tree.files_may_exist = true;
        // A symlink's text is relative to the link's own directory.
        let symlink_text = if self.params.num_dirs > 1 {
            format!("../{}", tree.names.get(0))
        } else {
            tree.names.get(0).to_owned()
        };
        let mut t = Instant::now();
        for i in 0..self.params.count {
            check_stop("the file creation")?;
            self.create_one(w, &dir, i, &symlink_text)?;
            t = lat.lap(t);
        }
        w.at("", |m, p| m.sync_fs(p))?;
        Ok(None)
    }
}

/// The test directory (refusing one that exists) and its numbered subdirectories.
fn make_dirs(w: &mut Worker, num_dirs: u32) -> Result<()> {
    w.at("", |m, p| m.mkdir(p)).map_err(|e| {
        if e.errno == Some(libc::EEXIST) {
            BonnieError::Refused(format!(
                "{} already exists; storbench only works in a directory it creates",
                w.dir_path
            ))
        } else {
            e.into()
        }
    })?;
    w.tree.as_mut().expect("set before").dir_made = true;
    if num_dirs > 1 {
        for d in 0..num_dirs {
            w.at(&subdir(num_dirs, d), |m, p| m.mkdir(p))?;
            w.tree.as_mut().expect("set before").subdirs_made = d + 1;
        }
    }
    Ok(())
}

impl Create {
    /// Creates file `i`; with `-n N:-1` or `N:-2` every file after the first is a hard
    /// link to it or a symbolic link holding `symlink_text`.
    fn create_one(&self, w: &mut Worker, dir: &DirRef, i: usize, symlink_text: &str) -> Result<()> {
        let p = &self.params;
        let names = &w.tree.as_ref().expect("prepared").names;
        let name = names.get(i);
        if p.max_size < 0 && i > 0 {
            let meta = w.io.meta();
            if p.max_size == -1 {
                meta.link_in(dir, names.get(0), name)?;
            } else {
                meta.symlink_in(dir, symlink_text, name)?;
            }
            if p.fsync_each {
                sync_dir_of(&mut w.io, (&w.root, &w.name), &mut w.rel, name)?;
            }
            return Ok(());
        }
        let size = match p.max_size {
            max if max <= 0 => 0,
            max if max as u64 > p.min_size => p.min_size + w.rng.below(max as u64 - p.min_size + 1),
            max => max as u64,
        };
        if size == 0 && !p.fsync_each {
            return Ok(w.io.meta().create_empty_in(dir, name)?);
        }
        if !p.compressible {
            let file_no = i as u64 | u64::from(self.random) << 63;
            mark_file(&mut w.buf.slot_mut(0)[..p.chunk as usize], file_no);
        }
        let data = &w.buf.slot(0)[..p.chunk as usize];
        if !p.fsync_each && w.io.meta().create_written_in(dir, name, data, size)? {
            return Ok(());
        }
        let open = OpenOptions {
            write: true,
            ..OpenOptions::default()
        };
        let file = w.io.meta().create_in(dir, name, &open)?;
        join_into(&mut w.path, &w.dir_path, name);
        let mut offset = 0;
        while offset < size {
            let len = (size - offset).min(u64::from(p.chunk)) as u32;
            let n =
                w.io.transfer(file, IoKind::Write, offset, w.buf.base(), len, &w.path)?;
            if n != u64::from(len) {
                return Err(short(IoKind::Write, &w.path, offset, len, n).into());
            }
            offset += n;
        }
        if p.fsync_each {
            w.io.fsync(file, &w.path)?;
            sync_dir_of(&mut w.io, (&w.root, &w.name), &mut w.rel, name)?;
        }
        w.io.close(file)?;
        Ok(())
    }
}

/// Makes each file's data differ from every other's, as block writes do per chunk: a
/// word derived from the buffer's random second word and the file's number, so a
/// deduplicating file system cannot fold the files into one.
#[inline]
fn mark_file(data: &mut [u8], file_no: u64) {
    let base = u64::from_le_bytes(
        data[8..16]
            .try_into()
            .expect("chunks are at least 256 bytes"),
    );
    data[..8].copy_from_slice(&storbench_model::rng::mix64(base ^ file_no).to_le_bytes());
}

/// `stat` the file `name` in `dir` and read all its data, as bonnie++'s "Read" column does.
fn stat_and_read(w: &mut Worker, dir: &DirRef, name: &str, chunk: u32) -> Result<()> {
    let attr = w.io.meta().stat_in(dir, name)?;
    if attr.size == 0 {
        return Ok(());
    }
    label_into(&mut w.path, &w.dir_path, &w.name, dir, name);
    let open = OpenOptions {
        read: true,
        ..OpenOptions::default()
    };
    let file = w.io.meta().open_in(dir, name, &open)?;
    let mut offset = 0;
    while offset < attr.size {
        let len = (attr.size - offset).min(u64::from(chunk)) as u32;
        let n =
            w.io.transfer(file, IoKind::Read, offset, w.buf.base(), len, &w.path)?;
        if n != u64::from(len) {
            return Err(short(IoKind::Read, &w.path, offset, len, n).into());
        }
        offset += n;
    }
    w.io.close(file)?;
    Ok(())
}

/// `name` in `dir` as messages show it: the test directory as given, the subdirectory
/// `dir` is in it, and the name (written into `out`, reusing its memory).
fn label_into(out: &mut String, dir_path: &str, worker: &RelPath, dir: &DirRef, name: &str) {
    out.clear();
    out.push_str(dir_path);
    if let Some(sub) = dir
        .rel
        .as_deref()
        .and_then(|r| r.as_str().strip_prefix(worker.as_str()))
    {
        out.push_str(sub);
    }
    out.push('/');
    out.push_str(name);
}

/// The directories holding files: the test directory, or its numbered subdirectories.
fn file_dirs(num_dirs: u32) -> impl Iterator<Item = String> {
    (0..num_dirs).map(move |d| subdir(num_dirs, d))
}

/// Calls `each` with every name in `sub` of the test directory while listing it in batches, as bonnie++'s
/// readdir(3) loop does: an operation's latency includes the batch read it waited for,
/// except the listing's first, which bonnie++'s loop leaves outside every operation (it
/// restarts its clock at the `.` and `..` entries that open a listing). Returns how many
/// names there were.
fn for_each_listed(
    w: &mut Worker,
    sub: &str,
    test: &'static str,
    lat: &mut MaxLatency,
    each: impl FnMut(&mut Worker, &DirRef, &str) -> Result<()>,
) -> Result<usize> {
    let dir = w.at(sub, |m, p| m.open_dir(p))?;
    let listed = list_and_call(w, &dir, test, lat, each);
    w.io.meta().close_dir(dir);
    listed
}

/// The listing loop of [`for_each_listed`], in a directory it has opened.
fn list_and_call(
    w: &mut Worker,
    dir: &DirRef,
    test: &'static str,
    lat: &mut MaxLatency,
    mut each: impl FnMut(&mut Worker, &DirRef, &str) -> Result<()>,
) -> Result<usize> {
    let mut cursor = DirCursor::default();
    let mut batch = NameList::default();
    let (mut next, mut seen) = (0, 0);
    let mut t = Instant::now();
    loop {
        if next == batch.len() {
            if cursor.done {
                return Ok(seen);
            }
            let first = cursor == DirCursor::default();
            batch.clear();
            next = 0;
            w.io.meta().read_dir(dir.path(), &mut cursor, &mut batch)?;
            if first {
                t = Instant::now();
            }
            continue;
        }
        let name = batch.get(next);
        next += 1;
        // Our names never start with a dot; bonnie++ skips such entries too.
        if name.starts_with('.') {
            continue;
        }
        check_stop(test)?;
        each(w, dir, name)?;
        t = lat.lap(t);
        seen += 1;
    }
}

/// Stat (+read) in readdir order.
pub(crate) struct StatSeq(pub FileParams);

impl Phase for StatSeq {
    type Ready = ();

    fn prepare(&self, _: &mut Worker) -> Result<()> {
        Ok(())
    }

    fn run(&self, w: &mut Worker, _: (), lat: &mut MaxLatency) -> Result<Option<Span>> {
        let p = &self.0;
        let mut seen = 0;
        for sub in file_dirs(p.num_dirs) {
            let dir = sub.as_str();
            // Files without data (and links to one) need only the stat, which the
            // engine makes where its listing put the name.
            seen += if p.max_size <= 0 {
                engine_listed(w, dir, lat, "the sequential stat", ListedOp::Stat)?
            } else {
                for_each_listed(w, dir, "the sequential stat", lat, |w, dir, name| {
                    stat_and_read(w, dir, name, p.chunk)
                })?
            };
        }
        expect_files("stat", &w.dir_path, p.count, seen)?;
        Ok(None)
    }
}

/// The random names in a new random order, laid out in that order so the timed loop reads
/// them front to back (as bonnie++ shuffles its array of name pointers beforehand).
fn shuffled_names(w: &mut Worker, count: usize) -> NameList {
    let order = shuffled(count, &mut w.rng);
    let tree = w.tree.as_ref().expect("created");
    tree.names.list.reordered(&order)
}

/// Calls `each` with every name of `names` in order (relative to the test directory),
/// one timed operation each.
fn for_each_named(
    w: &mut Worker,
    names: &NameList,
    test: &'static str,
    lat: &mut MaxLatency,
    mut each: impl FnMut(&mut Worker, &DirRef, &str) -> Result<()>,
) -> Result<()> {
    let tree = w.tree.as_ref().expect("created");
    let dir = tree
        .dir
        .clone()
        .expect("opened when the files were created");
    let mut t = Instant::now();
    for name in names.iter() {
        check_stop(test)?;
        each(w, &dir, name)?;
        t = lat.lap(t);
    }
    Ok(())
}

/// Stat (+read) in a random order of the random names.
pub(crate) struct StatRandom(pub FileParams);

impl Phase for StatRandom {
    type Ready = NameList;

    fn prepare(&self, w: &mut Worker) -> Result<NameList> {
        Ok(shuffled_names(w, self.0.count))
    }

    fn run(&self, w: &mut Worker, order: NameList, lat: &mut MaxLatency) -> Result<Option<Span>> {
        for_each_named(w, &order, "the random stat", lat, |w, dir, name| {
            stat_and_read(w, dir, name, self.0.chunk)
        })?;
        w.retired.push(order);
        Ok(None)
    }
}

/// Delete in readdir order, then the directories, then sync.
pub(crate) struct DeleteSeq(pub FileParams);

impl Phase for DeleteSeq {
    type Ready = ();

    fn prepare(&self, _: &mut Worker) -> Result<()> {
        Ok(())
    }

    fn run(&self, w: &mut Worker, _: (), lat: &mut MaxLatency) -> Result<Option<Span>> {
        let p = &self.0;
        let mut removed = 0;
        for sub in file_dirs(p.num_dirs) {
            removed += if p.fsync_each {
                for_each_listed(w, &sub, "the sequential delete", lat, |w, dir, name| {
                    w.io.meta().unlink_in(dir, name)?;
                    w.io.meta().sync_dir(dir.path())?;
                    Ok(())
                })?
            } else {
                engine_listed(w, &sub, lat, "the sequential delete", ListedOp::Unlink)?
            };
        }
        expect_files("delete", &w.dir_path, p.count, removed)?;
        remove_dirs(w)?;
        Ok(None)
    }
}

/// Which of the engine's own listing loops [`engine_listed`] runs.
#[derive(Clone, Copy)]
enum ListedOp {
    Unlink,
    Stat,
}

/// Removes or stats the files of `sub` of the test directory as its listing comes, through the engine's own
/// loop (names used where the listing put them), timing each operation as
/// [`for_each_listed`] does. Returns how many files there were.
fn engine_listed(
    w: &mut Worker,
    sub: &str,
    lat: &mut MaxLatency,
    test: &'static str,
    op: ListedOp,
) -> Result<usize> {
    check_stop(test)?;
    let dir = w.at(sub, |m, p| m.open_dir(p))?;
    let (mut t, mut first) = (Instant::now(), true);
    let mut step = |done| {
        match done {
            // The first batch read stays outside every operation, as in bonnie++.
            Listed::Batch if first => {
                first = false;
                t = Instant::now();
            }
            Listed::Batch => {}
            Listed::Removed | Listed::Stat(_) => t = lat.lap(t),
        }
        if stop::requested() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let meta = w.io.meta();
    let done = match op {
        ListedOp::Unlink => meta.unlink_listed(&dir, &mut step),
        ListedOp::Stat => meta.stat_listed(&dir, &mut step),
    };
    w.io.meta().close_dir(dir);
    check_stop(test)?;
    Ok(done?)
}

/// Delete the random names in a random order, then the directories, then sync.
pub(crate) struct DeleteRandom(pub FileParams);

impl Phase for DeleteRandom {
    type Ready = NameList;

    fn prepare(&self, w: &mut Worker) -> Result<NameList> {
        Ok(shuffled_names(w, self.0.count))
    }

    fn run(&self, w: &mut Worker, order: NameList, lat: &mut MaxLatency) -> Result<Option<Span>> {
        for_each_named(w, &order, "the random delete", lat, |w, dir, name| {
            w.io.meta().unlink_in(dir, name)?;
            if self.0.fsync_each {
                sync_dir_of(&mut w.io, (&w.root, &w.name), &mut w.rel, name)?;
            }
            Ok(())
        })?;
        w.retired.push(order);
        remove_dirs(w)?;
        Ok(None)
    }
}

/// Removes the emptied subdirectories and test directory, then syncs the file system.
fn remove_dirs(w: &mut Worker) -> Result<()> {
    let tree = w.tree.as_mut().expect("created");
    tree.files_may_exist = false;
    if let Some(dir) = tree.dir.take() {
        w.io.meta().close_dir(dir);
    }
    loop {
        let tree = w.tree.as_mut().expect("created");
        let Some(d) = tree.subdirs_made.checked_sub(1) else {
            break;
        };
        let sub = subdir(tree.names.num_dirs, d);
        w.at(&sub, |m, p| m.rmdir(p))?;
        w.tree.as_mut().expect("created").subdirs_made = d;
    }
    w.at("", |m, p| m.rmdir(p))?;
    if let Some(tree) = w.tree.take() {
        w.retired.push(tree.names.list);
    }
    w.io.meta().sync_fs(MetaPath::whole(&w.root))?;
    Ok(())
}

fn expect_files(test: &str, dir: &str, want: usize, got: usize) -> Result<()> {
    if want != got {
        return Err(BonnieError::Check(format!(
            "{test} in {dir}: expected {want} files, found {got}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_file_gets_its_own_data() {
        let mut buf: Vec<u8> = (0..256u32).map(|b| (b * 7 + 3) as u8).collect();
        let rest = buf[8..].to_vec();
        let mut firsts = std::collections::HashSet::new();
        for file_no in (0..4096).chain((0..4096).map(|i| i | 1 << 63)) {
            mark_file(&mut buf, file_no);
            assert!(
                firsts.insert(buf[..8].to_vec()),
                "file {file_no} repeats an earlier one"
            );
            assert_eq!(buf[8..], rest[..], "only the first word changes");
        }
    }
}
