//! Directory handles kept by path, as the v3 client keeps them: a metadata call on
//! `dir/name` starts at `dir`'s handle (PUTFH, then the operation on `name`) instead of
//! walking from the URL's directory with a LOOKUP per component. A directory is walked
//! once, in one COMPOUND, when it is first named. A handle the server calls stale or bad
//! (the directory was removed and made again by another client, a server without
//! persistent handles restarted) empties the cache, and the call is made once more with
//! directories walked afresh.

use std::collections::HashMap;

use crate::error::{NfsError, Result};

use super::client::{Client4, split};
use super::decode::{V4Error, V4Result};
use super::stat::Nfs4Stat;
use super::types::Fh4;
use super::wire::{FILE_ATTRS, op};

/// Directory handles by path relative to the URL's directory (no leading or trailing `/`).
#[derive(Debug, Default)]
pub(crate) struct Dirs {
    by_path: HashMap<String, Fh4>,
}

impl Dirs {
    fn get(&self, rel: &str) -> Option<Fh4> {
        self.by_path.get(rel).copied()
    }

    pub(crate) fn insert(&mut self, rel: &str, fh: Fh4) {
        self.by_path.insert(rel.to_owned(), fh);
    }

    /// Forgets `rel` and every directory below it (it was removed or renamed).
    pub(crate) fn forget(&mut self, rel: &str) {
        self.by_path.retain(|k, _| !is_at_or_below(k, rel));
    }

    fn clear(&mut self) {
        self.by_path.clear();
    }

    fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }
}

/// `path` is `dir` or lies below it.
fn is_at_or_below(path: &str, dir: &str) -> bool {
    path.strip_prefix(dir)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

impl Client4 {
    /// The handle of the directory `dir` (relative to the URL's directory), from the cache
    /// or walked from the URL's directory in one COMPOUND; errors name `shown`.
    pub(crate) fn dir(&mut self, dir: &str, shown: &str) -> Result<Fh4> {
        let dir = dir.trim_matches('/');
        if dir.is_empty() {
            return Ok(*self.root());
        }
        if let Some(fh) = self.dirs.get(dir) {
            return Ok(fh);
        }
        let parts = dir.split('/').filter(|p| !p.is_empty());
        self.check_ops(parts.clone().count(), shown)?;
        let root = *self.root();
        let (fh, attrs) = self.run(
            "LOOKUP",
            shown,
            &mut |c, _f| {
                c.putfh(&root);
                parts.clone().for_each(|p| c.lookup(p));
                c.getfh();
                c.getattr(FILE_ATTRS);
            },
            &mut |r| {
                r.status_only(op::PUTFH, "PUTFH")?;
                for _ in parts.clone() {
                    r.status_only(op::LOOKUP, "LOOKUP")?;
                }
                Ok((r.getfh()?, r.getattr()?))
            },
        )?;
        if !attrs.is_dir() {
            let e = V4Error::Status {
                op: "LOOKUP",
                status: Nfs4Stat::NOTDIR,
            };
            return Err(self.error("LOOKUP", shown, e));
        }
        self.dirs.insert(dir, fh);
        Ok(fh)
    }

    /// The handle of the directory holding `rel`, and `rel`'s last component.
    pub(crate) fn parent<'r>(&mut self, rel: &'r str) -> Result<(Fh4, &'r str)> {
        let (dir, name) = split(rel);
        Ok((self.dir(dir, rel)?, name))
    }

    /// `call`, which takes its directory handles through [`dir`](Self::dir), and once more
    /// after the cache was emptied if the server answered that a handle is stale; failures
    /// become errors of `name` naming `rel`.
    pub(crate) fn fresh<T>(
        &mut self,
        name: &'static str,
        rel: &str,
        mut call: impl FnMut(&mut Self) -> Result<V4Result<T>>,
    ) -> Result<T> {
        let first = call(self);
        let mut got = self.naming(rel, first)?;
        if let Err(V4Error::Status { status, .. }) = &got
            && status.handle_gone()
            && !self.dirs.is_empty()
        {
            self.dirs.clear();
            let again = call(self);
            got = self.naming(rel, again)?;
        }
        got.map_err(|e| self.error(name, rel, e))
    }

    /// A DELAY or GRACE answered past its limit names `rel`, the file the call was for.
    pub(crate) fn naming<T>(&self, rel: &str, got: Result<T>) -> Result<T> {
        match got {
            Err(e @ NfsError::Busy4 { .. }) => Err(e.with_path(self.full(rel))),
            other => other,
        }
    }

    /// Operations sent so far in the COMPOUNDs made one at a time (metadata calls, OPEN,
    /// CLOSE, COMMIT; SEQUENCE included, the pipelined READs and WRITEs not): what a
    /// metadata call costs the server, for tests and diagnostics.
    pub fn ops_sent(&self) -> u64 {
        self.ops_sent
    }

    /// Directory handles kept.
    pub fn dirs_kept(&self) -> usize {
        self.dirs.by_path.len()
    }
}

#[cfg(test)]
mod tests {
    use super::is_at_or_below;

    #[test]
    fn a_directory_holds_itself_and_its_subtree_only() {
        assert!(is_at_or_below("a/b", "a/b"));
        assert!(is_at_or_below("a/b/c", "a/b"));
        assert!(!is_at_or_below("a/bc", "a/b"));
        assert!(!is_at_or_below("a", "a/b"));
    }
}
