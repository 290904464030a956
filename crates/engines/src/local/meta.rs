//! The local engines' metadata operations ([`MetaOps`] for [`LocalFiles`]): by path, each
//! resolved against its kept-open parent directory, or by name in a directory opened with
//! `open_dir`, as bonnie++ works by bare names in its test directory.

use std::ffi::CStr;
use std::fs;
use std::io;
use std::ops::ControlFlow;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use storbench_core::{
    Attr, DirCursor, DirRef, EngineError, ErrorKind, FileId, Listed, MetaOps, MetaPath, NameList,
    OpenOptions, checked_name, refuse_create_in_open,
};

use crate::listing::records;

use super::{
    LocalFile, LocalFiles, last_errno, open_at, open_error, open_flags, openat_retry, retry_eintr,
};

impl LocalFiles {
    /// The `*_listed` calls: `op` on each name of `dir` not starting with `.`, in the
    /// listing's buffer; `what` names the operation in errors.
    fn each_listed(
        &mut self,
        dir: &DirRef,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
        what: &str,
        op: impl Fn(RawFd, &CStr) -> Result<Listed, i32>,
    ) -> Result<usize, EngineError> {
        let mut path = std::mem::take(&mut self.joined);
        dir.path().write_local(&mut path);
        let done = self.each_listed_at(dir, &path, step, what, op);
        self.joined = path;
        done
    }

    /// [`each_listed`](Self::each_listed) with the directory's local path.
    fn each_listed_at(
        &mut self,
        dir: &DirRef,
        path: &str,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
        what: &str,
        op: impl Fn(RawFd, &CStr) -> Result<Listed, i32>,
    ) -> Result<usize, EngineError> {
        let fd = self.slots.fd(dir.slot, path)?;
        let (mut cursor, mut done) = (DirCursor::default(), 0);
        while !cursor.done {
            let batch = self.lister.read_batch(path, &mut cursor)?;
            if step(Listed::Batch).is_break() {
                break;
            }
            for name in records(batch).filter(|n| n.to_bytes().first() != Some(&b'.')) {
                let event = op(fd, name).map_err(|errno| listed_error(what, dir, name, errno))?;
                done += 1;
                if step(event).is_break() {
                    return Ok(done);
                }
            }
        }
        Ok(done)
    }

    /// Enters a file just created or opened by name into the table, its path written by
    /// `path` into the last closed file's buffer (so this does not allocate per file).
    fn insert_opened(
        &mut self,
        fd: OwnedFd,
        open: &OpenOptions,
        path: impl FnOnce(&mut String),
    ) -> FileId {
        let mut owned = std::mem::take(&mut self.spare_path);
        owned.clear();
        path(&mut owned);
        self.insert(LocalFile::from_fd(fd, owned, false, open))
    }

    /// `name` in `dir` made new (O_CREAT|O_EXCL) and open for writing, outside the file
    /// table: bonnie's files created and closed in one call.
    fn create_new_in(&mut self, dir: &DirRef, name: &str) -> Result<OwnedFd, EngineError> {
        let (fd, c_name) = self.slots.resolve(dir, name)?;
        let new_file = OpenOptions {
            write: true,
            create: true,
            exclusive: true,
            ..OpenOptions::default()
        };
        openat_retry(fd, c_name, open_flags(&new_file))
            .map_err(|errno| EngineError::errno("create", &dir.join(name), errno))
    }

    /// [`insert_opened`](Self::insert_opened) of `name` in `dir`.
    fn insert_in(&mut self, fd: OwnedFd, open: &OpenOptions, dir: &DirRef, name: &str) -> FileId {
        self.insert_opened(fd, open, |p| {
            dir.path().write_local(p);
            storbench_job::relpath::push_below(p, name);
        })
    }

    /// `call` on the local path `path` names, root and name joined into a reused buffer.
    /// A URL root is not this engine's to reach.
    fn with_local<T>(
        &mut self,
        path: MetaPath<'_>,
        call: impl FnOnce(&mut Self, &str) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        if path.root.protocol().is_some() {
            return Err(not_local(path));
        }
        let mut joined = std::mem::take(&mut self.joined);
        path.write_local(&mut joined);
        let r = call(self, &joined);
        self.joined = joined;
        r
    }
}

impl LocalFiles {
    /// The directory descriptor and last component of a local `path`, for an `*at(2)`
    /// call: a name right below the directory of the last call is not joined as text
    /// ([`ParentDirs::split_below`](crate::dirfds::ParentDirs::split_below)).
    fn at(&mut self, path: MetaPath<'_>) -> Result<(RawFd, &CStr), EngineError> {
        if path.root.protocol().is_some() {
            return Err(not_local(path));
        }
        self.dirs.split_below(path, &mut self.joined)
    }
}

/// A failed `*at(2)` call on `path`, named as the joined local path (cold: errors only).
#[cold]
fn at_error(op: &str, path: MetaPath<'_>, errno: i32) -> EngineError {
    let mut text = String::new();
    path.write_local(&mut text);
    EngineError::errno(op, &text, errno)
}

#[cold]
fn not_local(path: MetaPath<'_>) -> EngineError {
    EngineError::unsupported(format!("{path}: a local engine reaches local paths only"))
}

/// fstatat(2) of `name` under `dir`; the errno on failure.
fn stat_at(dir: RawFd, name: &CStr) -> Result<Attr, i32> {
    // SAFETY: `stat` is plain data.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid directory descriptor, C string and out pointer.
    if unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, 0) } < 0 {
        return Err(last_errno());
    }
    Ok(Attr {
        size: st.st_size as u64,
        is_dir: st.st_mode & libc::S_IFMT == libc::S_IFDIR,
    })
}

/// A write that moved nothing before the file had its bytes (the disk is full).
#[cold]
fn short_write(dir: &DirRef, name: &str, written: u64, len: u64) -> EngineError {
    EngineError::new(
        ErrorKind::Os,
        format!(
            "write {}: {written} of {len} bytes written (disk full?)",
            dir.join(name)
        ),
    )
}

#[cold]
fn listed_error(what: &str, dir: &DirRef, name: &CStr, errno: i32) -> EngineError {
    EngineError::errno(what, &dir.join(&name.to_string_lossy()), errno)
}

/// unlinkat(2) of `name` under `dir`; the errno on failure.
fn unlink_at(dir: RawFd, name: &CStr) -> Result<(), i32> {
    // SAFETY: valid directory descriptor and C string.
    if unsafe { libc::unlinkat(dir, name.as_ptr(), 0) } < 0 {
        return Err(last_errno());
    }
    Ok(())
}

fn meta_err(op: &str, path: &str) -> impl FnOnce(io::Error) -> EngineError {
    move |e| EngineError::os(op, path, e)
}

impl MetaOps for LocalFiles {
    fn mkdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.with_local(path, |_, path| {
            fs::create_dir(path).map_err(meta_err("mkdir", path))
        })
    }

    /// link(2): bonnie++'s `-n N:-1` file tests make every file but the first a hard link.
    fn link(&mut self, existing: MetaPath<'_>, link: MetaPath<'_>) -> Result<(), EngineError> {
        if existing.root.protocol().is_some() {
            return Err(not_local(existing));
        }
        let mut from = String::new();
        existing.write_local(&mut from);
        self.with_local(link, |_, link| {
            fs::hard_link(&from, link).map_err(meta_err("link", link))
        })
    }

    /// symlink(2): `-n N:-2`, every file but the first a symbolic link to it.
    fn symlink(&mut self, target: &str, link: MetaPath<'_>) -> Result<(), EngineError> {
        self.with_local(link, |_, link| {
            std::os::unix::fs::symlink(target, link).map_err(meta_err("symlink", link))
        })
    }

    /// linkat(2), both names relative to the directory's descriptor.
    fn link_in(&mut self, dir: &DirRef, existing: &str, name: &str) -> Result<(), EngineError> {
        checked_name(dir, existing)?;
        let (fd, c_name, c_existing) = self.slots.resolve_two(dir, name, existing)?;
        // SAFETY: a valid directory descriptor and two C strings.
        if unsafe { libc::linkat(fd, c_existing.as_ptr(), fd, c_name.as_ptr(), 0) } < 0 {
            return Err(EngineError::errno("link", &dir.join(name), last_errno()));
        }
        Ok(())
    }

    /// symlinkat(2) relative to the directory's descriptor.
    fn symlink_in(&mut self, dir: &DirRef, target: &str, name: &str) -> Result<(), EngineError> {
        let (fd, c_name, c_target) = self.slots.resolve_two(dir, name, target)?;
        // SAFETY: a valid directory descriptor and two C strings.
        if unsafe { libc::symlinkat(c_target.as_ptr(), fd, c_name.as_ptr()) } < 0 {
            return Err(EngineError::errno("symlink", &dir.join(name), last_errno()));
        }
        Ok(())
    }

    fn rmdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.with_local(path, |e, path| {
            e.dirs.forget(path);
            e.slots.forget(path);
            e.lister.forget(path);
            fs::remove_dir(path).map_err(meta_err("rmdir", path))
        })
    }

    /// O_CREAT|O_EXCL relative to the parent: a regular file by construction, so no fstat.
    fn create(&mut self, path: MetaPath<'_>, open: &OpenOptions) -> Result<FileId, EngineError> {
        let open = OpenOptions {
            create: true,
            exclusive: true,
            ..open.clone()
        };
        self.with_local(path, |e, path| {
            let (dir, name) = e.dirs.split(path)?;
            let fd = open_at(dir, name, path, &open, "create")?;
            Ok(e.insert_opened(fd, &open, |p| p.push_str(path)))
        })
    }

    fn stat(&mut self, path: MetaPath<'_>) -> Result<Attr, EngineError> {
        let (dir, name) = self.at(path)?;
        stat_at(dir, name).map_err(|errno| at_error("stat", path, errno))
    }

    fn unlink(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        let (dir, name) = self.at(path)?;
        unlink_at(dir, name).map_err(|errno| at_error("unlink", path, errno))
    }

    fn open_dir(&mut self, path: MetaPath<'_>) -> Result<DirRef, EngineError> {
        let slot = self.with_local(path, |e, local| e.slots.open(local))?;
        Ok(DirRef::of(slot, path))
    }

    fn close_dir(&mut self, dir: DirRef) {
        self.slots.close(dir.slot);
    }

    fn create_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError> {
        let open = OpenOptions {
            create: true,
            exclusive: true,
            ..open.clone()
        };
        let (fd, c_name) = self.slots.resolve(dir, name)?;
        let file = openat_retry(fd, c_name, open_flags(&open))
            .map_err(|errno| open_error(&open, "create", &dir.join(name), errno))?;
        Ok(self.insert_in(file, &open, dir, name))
    }

    /// openat(2) by name. Meant for the regular files the metadata tests make: a device
    /// node opened this way is treated as a file (no fstat per open, as bonnie++ makes
    /// none).
    fn open_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError> {
        refuse_create_in_open(open, dir, name)?;
        let (fd, c_name) = self.slots.resolve(dir, name)?;
        let file = openat_retry(fd, c_name, open_flags(open))
            .map_err(|errno| open_error(open, "open", &dir.join(name), errno))?;
        Ok(self.insert_in(file, open, dir, name))
    }

    /// openat(O_CREAT|O_EXCL) and close: no file table entry, no path kept.
    fn create_empty_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        self.create_new_in(dir, name).map(drop)
    }

    /// openat(O_CREAT|O_EXCL), write(2) until `len` bytes are written, close: bonnie++'s
    /// create_a_file, call for call.
    fn create_written_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        data: &[u8],
        len: u64,
    ) -> Result<bool, EngineError> {
        if data.is_empty() && len > 0 {
            return Err(EngineError::unsupported(format!(
                "create {}: {len} bytes to write from an empty buffer",
                dir.join(name)
            )));
        }
        let file = self.create_new_in(dir, name)?;
        let mut written = 0;
        while written < len {
            let want = (len - written).min(data.len() as u64) as usize;
            // SAFETY: our descriptor, and `data` holds `want` readable bytes.
            match retry_eintr(|| unsafe {
                libc::write(file.as_raw_fd(), data.as_ptr().cast(), want)
            }) {
                Ok(0) => return Err(short_write(dir, name, written, len)),
                Ok(n) => written += n,
                Err(errno) => return Err(EngineError::errno("write", &dir.join(name), errno)),
            }
        }
        Ok(true)
    }

    fn stat_in(&mut self, dir: &DirRef, name: &str) -> Result<Attr, EngineError> {
        let (fd, c_name) = self.slots.resolve(dir, name)?;
        stat_at(fd, c_name).map_err(|errno| EngineError::errno("stat", &dir.join(name), errno))
    }

    fn unlink_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        let (fd, c_name) = self.slots.resolve(dir, name)?;
        unlink_at(fd, c_name).map_err(|errno| EngineError::errno("unlink", &dir.join(name), errno))
    }

    fn read_dir(
        &mut self,
        path: MetaPath<'_>,
        cursor: &mut DirCursor,
        names: &mut NameList,
    ) -> Result<(), EngineError> {
        self.with_local(path, |e, path| e.lister.read(path, cursor, names))
    }

    /// Each name is unlinked straight from the `getdents64` buffer, as bonnie++ unlinks
    /// readdir(3)'s `d_name`: nothing is copied.
    fn unlink_listed(
        &mut self,
        dir: &DirRef,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
    ) -> Result<usize, EngineError> {
        self.each_listed(dir, step, "unlink", |fd, name| {
            unlink_at(fd, name).map(|()| Listed::Removed)
        })
    }

    /// Each name is stat-ed straight from the `getdents64` buffer, as `unlink_listed`.
    fn stat_listed(
        &mut self,
        dir: &DirRef,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
    ) -> Result<usize, EngineError> {
        self.each_listed(dir, step, "stat", |fd, name| {
            stat_at(fd, name).map(Listed::Stat)
        })
    }

    fn set_size(&mut self, file: FileId, size: u64) -> Result<(), EngineError> {
        self.get(file)?.set_size(size)
    }

    fn sync_dir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.with_local(path, |_, path| {
            let dir = fs::File::open(path).map_err(meta_err("open directory", path))?;
            dir.sync_all().map_err(meta_err("fsync directory", path))
        })
    }

    /// sync(2), as bonnie++ calls it: every file system, so the create and delete figures
    /// include the same flushing as bonnie++'s. (After syncfs(2) of the target alone, the
    /// next test's first directory read on ext4 took 2-5 times as long as after sync().)
    fn sync_fs(&mut self, _path: MetaPath<'_>) -> Result<(), EngineError> {
        // SAFETY: no arguments; cannot fail.
        unsafe { libc::sync() };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storbench_core::RelPath;
    use storbench_job::target::Target;

    fn at(path: &str) -> Target {
        Target::Path(path.to_owned())
    }

    fn tmp_dir(root: &tempfile::TempDir, name: &str) -> String {
        let path = format!("{}/{name}", root.path().display());
        fs::create_dir(&path).unwrap();
        path
    }

    #[test]
    fn names_in_an_opened_directory_reach_its_files() {
        let root = tempfile::tempdir().unwrap();
        let path = tmp_dir(&root, "d");
        fs::create_dir(format!("{path}/sub")).unwrap();
        let mut files = LocalFiles::default();
        let dir = files.open_dir(MetaPath::whole(&at(&path))).unwrap();

        files.create_empty_in(&dir, "empty").unwrap();
        files.create_empty_in(&dir, "sub/nested").unwrap();
        let open = OpenOptions {
            write: true,
            ..OpenOptions::default()
        };
        let id = files.create_in(&dir, "kept", &open).unwrap();
        assert_eq!(files.get(id).unwrap().path, format!("{path}/kept"));
        files.close(id).unwrap();

        for name in ["empty", "sub/nested", "kept"] {
            assert_eq!(fs::metadata(format!("{path}/{name}")).unwrap().len(), 0);
            assert_eq!(files.stat_in(&dir, name).unwrap().size, 0);
        }
        let exists = files.create_empty_in(&dir, "empty").unwrap_err();
        assert_eq!(exists.errno, Some(libc::EEXIST));
        assert!(
            exists.message.contains(&format!("{path}/empty")),
            "{exists}"
        );

        for name in ["empty", "sub/nested", "kept"] {
            files.unlink_in(&dir, name).unwrap();
        }
        let gone = files.stat_in(&dir, "kept").unwrap_err();
        assert_eq!(gone.errno, Some(libc::ENOENT));
        assert!(gone.message.contains(&format!("{path}/kept")), "{gone}");
        files.close_dir(dir);
    }

    #[test]
    fn a_removed_or_closed_directory_is_never_reached_again() {
        let root = tempfile::tempdir().unwrap();
        let path = tmp_dir(&root, "d");
        let mut files = LocalFiles::default();
        let dir = files.open_dir(MetaPath::whole(&at(&path))).unwrap();
        files.rmdir(MetaPath::whole(&at(&path))).unwrap();
        fs::create_dir(&path).unwrap();
        // The same name again, and a second directory that may get the freed descriptor.
        let other = tmp_dir(&root, "other");
        let other_ref = files.open_dir(MetaPath::whole(&at(&other))).unwrap();
        assert_ne!(other_ref.slot, dir.slot, "slots are not reused");
        assert!(files.create_empty_in(&dir, "f").is_err());
        assert!(fs::read_dir(&path).unwrap().next().is_none());
        assert!(fs::read_dir(&other).unwrap().next().is_none());

        let again = other_ref.clone();
        files.close_dir(other_ref);
        let err = files.create_empty_in(&again, "f").unwrap_err();
        assert!(err.message.contains("not open"), "{err}");
        assert!(fs::read_dir(&other).unwrap().next().is_none());
    }

    #[test]
    fn path_calls_join_a_name_below_its_root() {
        let root = tempfile::tempdir().unwrap();
        let top = at(root.path().to_str().unwrap());
        let (sub, file) = (RelPath::new("a").unwrap(), RelPath::new("a/f").unwrap());
        let mut files = LocalFiles::default();
        files.mkdir(MetaPath::new(&top, sub)).unwrap();
        let id = files
            .create(MetaPath::new(&top, file), &OpenOptions::default())
            .unwrap();
        files.close(id).unwrap();
        assert!(root.path().join("a/f").is_file());
        assert!(files.stat(MetaPath::new(&top, sub)).unwrap().is_dir);
        let mut names = NameList::default();
        files
            .read_dir_all(MetaPath::new(&top, sub), &mut names)
            .unwrap();
        assert_eq!(names.iter().collect::<Vec<_>>(), ["f"]);
        files.unlink(MetaPath::new(&top, file)).unwrap();
        let gone = files.stat(MetaPath::new(&top, file)).unwrap_err();
        assert_eq!(gone.errno, Some(libc::ENOENT));
        assert!(gone.message.contains("/a/f"), "{gone}");
        files.rmdir(MetaPath::new(&top, sub)).unwrap();
        assert!(!root.path().join("a").exists());
    }

    #[test]
    fn a_url_root_is_refused_without_showing_its_secret() {
        let mut files = LocalFiles::default();
        let share = Target::parse("smb://u:hunter2@127.0.0.1/share/d").unwrap();
        let err = files.stat(MetaPath::whole(&share)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Unsupported);
        assert!(
            err.message.contains("local paths only") && !err.message.contains("hunter2"),
            "{err}"
        );
        assert!(files.mkdir(MetaPath::whole(&share)).is_err());
    }
}
