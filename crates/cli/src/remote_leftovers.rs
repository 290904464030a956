//! What killed quick and bonnie runs leave in a directory on an NFS export or SMB share.
//!
//! A PID alone cannot tell whether a run over the network is alive: the run may be on
//! another machine. So a run there first creates an empty mark whose name carries who made
//! it: `.storbench-KIND.PID.START.MACHINE.BOOT.HOST` (KIND `quick` or `bonnie`; START the
//! process's start time in clock ticks since boot; MACHINE the first 12 hex digits of
//! /etc/machine-id; BOOT the first 8 of the kernel's boot id; HOST the host name). The mark
//! stays until the run has removed its files, so after SIGKILL it names them: quick's
//! `storbench-quick.PID.tmp`, bonnie's `Bonnie.PID` file and tree (and `.N` copies). They
//! are stale when the mark names this machine and either another boot or no process of
//! that PID and start time; a mark of another machine cannot say, and its files are only
//! listed, removed on request. Nothing of another name is touched, a link is never
//! followed (NFS LOOKUP without following; SMB opens with OPEN_REPARSE_POINT).
//!
//! [`RemoteDir`] is also how diagnose asks whether such a directory takes a new file and
//! which files it holds (`crate::read_only`).

use storbench_core::{Engine, EngineError, EntryKind, MetaPath, NameList, OpenOptions};
use storbench_job::relpath::RelPathBuf;
use storbench_job::target::Target as Typed;

/// The run kinds that leave marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Quick,
    Bonnie,
}

impl Kind {
    fn prefix(self) -> &'static str {
        match self {
            Kind::Quick => ".storbench-quick.",
            Kind::Bonnie => ".storbench-bonnie.",
        }
    }
}

/// The machine and boot a process runs on, as marks name them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub machine: String,
    pub boot: String,
    pub name: String,
}

/// The first `n` hex digits of a file's text (dashes left out), if it has them.
fn hex_prefix(path: &str, n: usize) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let hex: String = text
        .chars()
        .filter(|c| *c != '-')
        .take_while(|c| c.is_ascii_hexdigit())
        .take(n)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    (hex.len() == n).then_some(hex)
}

/// This host: its machine id (the boot id stands in where /etc/machine-id is missing),
/// boot id and name.
pub fn this_host() -> Host {
    let boot = hex_prefix("/proc/sys/kernel/random/boot_id", 8).unwrap_or_else(|| "0".repeat(8));
    let machine = hex_prefix("/etc/machine-id", 12)
        .or_else(|| hex_prefix("/proc/sys/kernel/random/boot_id", 12))
        .unwrap_or_else(|| "0".repeat(12));
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    Host {
        machine,
        boot,
        name: host_name(raw.trim()),
    }
}

/// A host name as a mark carries it: letters, digits, `-` and `.`, at most 63 characters.
fn host_name(raw: &str) -> String {
    let name: String = raw
        .chars()
        .take(63)
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                true => c,
                false => '-',
            },
        )
        .collect();
    if name.is_empty() {
        "unknown".into()
    } else {
        name
    }
}

/// A run's mark, from its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    pub kind: Kind,
    pub pid: u32,
    pub start: u64,
    pub host: Host,
}

/// Whether a mark's run is alive, as far as this host can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Alive,
    Gone,
    OtherHost,
}

impl Mark {
    /// The mark of this process.
    pub fn of_this_process(kind: Kind) -> Option<Mark> {
        let pid = std::process::id();
        Some(Mark {
            kind,
            pid,
            start: crate::bonnie_marker::start_time(pid)?,
            host: this_host(),
        })
    }

    pub fn name(&self) -> String {
        let h = &self.host;
        format!(
            "{}{}.{}.{}.{}.{}",
            self.kind.prefix(),
            self.pid,
            self.start,
            h.machine,
            h.boot,
            h.name
        )
    }

    /// The mark a file name is, if it is one.
    pub fn parse(name: &str) -> Option<Mark> {
        let (kind, rest) = [Kind::Quick, Kind::Bonnie]
            .into_iter()
            .find_map(|k| Some((k, name.strip_prefix(k.prefix())?)))?;
        let mut f = rest.splitn(5, '.');
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let hex = |s: &str, n| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
        let (pid, start) = (f.next()?, f.next()?);
        let (machine, boot, host) = (f.next()?, f.next()?, f.next()?);
        if !digits(pid) || !digits(start) || !hex(machine, 12) || !hex(boot, 8) {
            return None;
        }
        if host_name(host) != host {
            return None;
        }
        Some(Mark {
            kind,
            pid: pid.parse().ok()?,
            start: start.parse().ok()?,
            host: Host {
                machine: machine.into(),
                boot: boot.into(),
                name: host.into(),
            },
        })
    }

    /// Whether `name` is one the mark's run makes.
    pub fn owns(&self, name: &str) -> bool {
        match self.kind {
            Kind::Quick => name == format!("storbench-quick.{}.tmp", self.pid),
            Kind::Bonnie => crate::bonnie_marker::is_bonnie_entry(name, self.pid),
        }
    }

    pub fn state(&self, me: &Host) -> State {
        if self.host.machine != me.machine {
            State::OtherHost
        } else if self.host.boot != me.boot {
            State::Gone
        } else if crate::bonnie_marker::alive(self.pid, self.start) {
            State::Alive
        } else {
            State::Gone
        }
    }
}

/// A directory on a server, reached through its engine's metadata operations.
pub struct RemoteDir {
    engine: Box<dyn Engine>,
    root: Typed,
}

/// One name a killed (or unknown) run left.
#[derive(Clone, Debug)]
pub struct Leftover {
    pub name: String,
    /// A directory, removed with what it holds.
    pub tree: bool,
    /// Bytes of a file (a tree's are not counted).
    pub bytes: u64,
    pub mark: Mark,
    pub state: State,
}

fn rel(name: &str) -> Result<RelPathBuf, EngineError> {
    RelPathBuf::new(name).map_err(|e| EngineError::new(storbench_core::ErrorKind::Refused, e))
}

impl RemoteDir {
    /// Connects to the directory `dir` (an NFS or SMB URL) with the engine of its protocol.
    pub fn open(dir: &Typed) -> Result<RemoteDir, EngineError> {
        let target = storbench_bonnie::target::Target::Remote(Box::new(dir.clone()));
        let engine = storbench_engines::create(&target.job(false))?;
        Ok(RemoteDir {
            engine,
            root: dir.clone(),
        })
    }

    fn meta(&mut self) -> Result<&mut dyn storbench_core::MetaOps, EngineError> {
        let name = self.engine.name();
        self.engine.meta().ok_or_else(|| {
            EngineError::unsupported(format!("the {name} engine has no metadata operations"))
        })
    }

    pub(crate) fn names(&mut self) -> Result<Vec<String>, EngineError> {
        let root = self.root.clone();
        let mut list = NameList::default();
        self.meta()?
            .read_dir_all(MetaPath::whole(&root), &mut list)?;
        let mut names: Vec<String> = list.iter().map(str::to_owned).collect();
        names.sort();
        Ok(names)
    }

    pub(crate) fn kind(&mut self, name: &str) -> Result<EntryKind, EngineError> {
        let (root, rel) = (self.root.clone(), rel(name)?);
        self.meta()?.kind_nofollow(MetaPath::new(&root, &rel))
    }

    /// Every mark in the directory that is not of a live run of this host, with the files
    /// and trees it names (a link or other object at such a name is left alone), each
    /// mark after what it stands for.
    pub fn leftovers(&mut self, me: &Host) -> Result<Vec<Leftover>, EngineError> {
        let names = self.names()?;
        let mut out = Vec::new();
        for mark in names.iter().filter_map(|n| Mark::parse(n)) {
            let state = mark.state(me);
            if state == State::Alive {
                continue;
            }
            for name in names.iter().filter(|n| mark.owns(n)) {
                let tree = match self.kind(name) {
                    Ok(EntryKind::File) => false,
                    Ok(EntryKind::Dir) => true,
                    _ => continue,
                };
                let bytes = match tree {
                    true => 0,
                    false => self.size(name).unwrap_or(0),
                };
                out.push(Leftover {
                    name: name.clone(),
                    tree,
                    bytes,
                    mark: mark.clone(),
                    state,
                });
            }
            out.push(Leftover {
                name: mark.name(),
                tree: false,
                bytes: 0,
                mark,
                state,
            });
        }
        Ok(out)
    }

    pub(crate) fn size(&mut self, name: &str) -> Result<u64, EngineError> {
        let (root, rel) = (self.root.clone(), rel(name)?);
        Ok(self.meta()?.stat(MetaPath::new(&root, &rel))?.size)
    }

    /// Removes a leftover: a file, or a tree with what it holds (links inside removed,
    /// never followed).
    pub fn remove(&mut self, l: &Leftover) -> Result<(), EngineError> {
        match l.tree {
            true => self.remove_tree(&l.name, 0),
            false => {
                let (root, rel) = (self.root.clone(), rel(&l.name)?);
                self.meta()?.unlink(MetaPath::new(&root, &rel))
            }
        }
    }

    /// Removes a bonnie file-test tree: only what bonnie makes there (its `NNNNN`
    /// directories at the top, its small files) and links shown as links, so that a directory link the server
    /// hides (Samba follows links and reports the directory it leads to) leads to no more
    /// than files named as bonnie names them. Anything else stays, and the tree with it.
    fn remove_tree(&mut self, dir: &str, depth: usize) -> Result<(), EngineError> {
        let (root, at) = (self.root.clone(), rel(dir)?);
        let mut list = NameList::default();
        self.meta()?
            .read_dir_all(MetaPath::new(&root, &at), &mut list)?;
        let mut kept = Vec::new();
        let mut refused = None;
        for name in list.iter() {
            let child = format!("{dir}/{name}");
            match self.kind(&child)? {
                EntryKind::Dir if depth == 0 && is_bonnie_dir(name) => {
                    // What a directory holds that bonnie does not make stays, and the rest
                    // of the tree is still removed.
                    if let Err(e) = self.remove_tree(&child, depth + 1) {
                        if e.kind != storbench_core::ErrorKind::Refused {
                            return Err(e);
                        }
                        refused.get_or_insert(e);
                        kept.push(child);
                    }
                }
                // bonnie's file, or a link the server shows as one, removed as the link
                // it is.
                EntryKind::Other => {
                    let c = rel(&child)?;
                    self.meta()?.unlink(MetaPath::new(&root, &c))?
                }
                EntryKind::File if is_bonnie_file(name) => {
                    let c = rel(&child)?;
                    self.meta()?.unlink(MetaPath::new(&root, &c))?
                }
                _ => kept.push(child),
            }
        }
        if let Some(e) = refused {
            return Err(e);
        }
        if let Some(first) = kept.first() {
            return Err(EngineError::new(
                storbench_core::ErrorKind::Refused,
                format!(
                    "{dir} holds {} entr{} bonnie does not make, such as {first}: left in place",
                    kept.len(),
                    if kept.len() == 1 { "y" } else { "ies" }
                ),
            ));
        }
        self.meta()?.rmdir(MetaPath::new(&root, &at))
    }

    /// Creates `mark` (empty, exclusively: an existing name is an error).
    pub fn create_mark(&mut self, mark: &Mark) -> Result<(), EngineError> {
        self.create_empty(&mark.name())
    }

    /// Creates an empty file `name` (exclusively: an existing name is an error).
    pub(crate) fn create_empty(&mut self, name: &str) -> Result<(), EngineError> {
        let (root, rel) = (self.root.clone(), rel(name)?);
        let open = OpenOptions {
            write: true,
            create: true,
            exclusive: true,
            nofollow: true,
            ..Default::default()
        };
        let id = self.meta()?.create(MetaPath::new(&root, &rel), &open)?;
        self.engine.close(id)
    }

    /// Removes `mark` when nothing it names is left.
    pub fn remove_mark(&mut self, mark: &Mark) -> Result<(), EngineError> {
        if self.names()?.iter().any(|n| mark.owns(n)) {
            return Ok(());
        }
        self.unlink(&mark.name())
    }

    /// Removes the file `name`.
    pub(crate) fn unlink(&mut self, name: &str) -> Result<(), EngineError> {
        let (root, rel) = (self.root.clone(), rel(name)?);
        self.meta()?.unlink(MetaPath::new(&root, &rel))
    }
}

/// A directory bonnie makes in its tree with several directories: five digits.
fn is_bonnie_dir(name: &str) -> bool {
    name.len() == 5 && name.bytes().all(|b| b.is_ascii_digit())
}

/// A small file's name as bonnie makes it: ten hex digits and at most twelve letters or
/// digits before or after them.
fn is_bonnie_file(name: &str) -> bool {
    (10..=22).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric())
        && (0..=name.len() - 10).any(|i| {
            (i == 0 || i + 10 == name.len())
                && name[i..i + 10].bytes().all(|b| b.is_ascii_hexdigit())
        })
}

/// The directory as shown (a password masked).
pub fn shown(dir: &Typed) -> String {
    storbench_report::terminal::escape(&dir.to_string()).into_owned()
}

/// One warning line when the directory holds leftovers of killed runs of this host, or of
/// runs of other hosts (before a new run there). Errors say nothing: the run that follows
/// says why it cannot reach the directory.
pub fn warn_stale(remote: &mut RemoteDir) {
    let Ok(found) = remote.leftovers(&this_host()) else {
        return;
    };
    let dir = shown(&remote.root);
    let gone: Vec<&Leftover> = found.iter().filter(|l| l.state == State::Gone).collect();
    if let Some(first) = gone.iter().find(|l| l.tree).or(gone.first()) {
        let bytes: u64 = gone.iter().map(|l| l.bytes).sum();
        eprintln!(
            "storbench: warning: {dir} holds {} file(s) ({}) left by storbench runs that were \
             killed, such as {}; `storbench clean {dir}` removes them",
            gone.len(),
            crate::ui::human_bytes(bytes),
            first.name
        );
    } else if let Some(other) = found.iter().find(|l| l.state == State::OtherHost) {
        eprintln!(
            "storbench: warning: {dir} holds file(s) of storbench runs made on host {}, such as \
             {}; this host cannot tell whether those runs are alive (`storbench clean {dir}` \
             lists them)",
            other.mark.host.name, other.name
        );
    }
}

/// The mark of this run in a directory on a server: made before the run creates anything
/// there, removed after the run once its files are gone (kept otherwise, naming them).
pub struct RunMark {
    dir: Typed,
    mark: Mark,
}

impl RunMark {
    /// Warns of leftovers in `dir` (rank 0 only: `warn`), then marks it for this run.
    pub fn begin(dir: &Typed, kind: Kind, warn: bool) -> anyhow::Result<RunMark> {
        let mark = Mark::of_this_process(kind)
            .ok_or_else(|| anyhow::anyhow!("cannot read this process's start time"))?;
        let mut remote = RemoteDir::open(dir)?;
        if warn {
            warn_stale(&mut remote);
        }
        remote.create_mark(&mark)?;
        Ok(RunMark {
            dir: dir.clone(),
            mark,
        })
    }
}

impl Drop for RunMark {
    /// Over a connection of its own: the run's may be gone with the server.
    fn drop(&mut self) {
        if let Ok(mut remote) = RemoteDir::open(&self.dir) {
            let _ = remote.remove_mark(&self.mark);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        Host {
            machine: "0123456789ab".into(),
            boot: "cdef0123".into(),
            name: "node-1.lab".into(),
        }
    }

    #[test]
    fn a_mark_names_its_run_and_reads_back() {
        let m = Mark {
            kind: Kind::Bonnie,
            pid: 42,
            start: 9000,
            host: host(),
        };
        assert_eq!(
            m.name(),
            ".storbench-bonnie.42.9000.0123456789ab.cdef0123.node-1.lab"
        );
        assert_eq!(Mark::parse(&m.name()), Some(m.clone()));
        assert!(m.owns("Bonnie.42") && m.owns("Bonnie.42.1") && !m.owns("Bonnie.421"));
        let q = Mark {
            kind: Kind::Quick,
            ..m
        };
        assert!(q.owns("storbench-quick.42.tmp") && !q.owns("storbench-quick.4.tmp"));
        for bad in [
            ".storbench-bonnie.42",
            ".storbench-bonnie.42.9000.0123456789ab.cdef0123.",
            ".storbench-bonnie.x.9000.0123456789ab.cdef0123.h",
            ".storbench-quick.1.2.0123456789a.cdef0123.h",
            ".storbench-quick.1.2.0123456789ab.cdef0123.a/b",
            "storbench-quick.1.tmp",
        ] {
            assert_eq!(Mark::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_tree_holds_only_bonnies_names() {
        assert!(is_bonnie_file("000000002aabc") && is_bonnie_file("xyZ00000000ff"));
        assert!(is_bonnie_file("0000000001"));
        for other in ["notes.txt", "0000000001-x", "000000001", "passwd"] {
            assert!(!is_bonnie_file(other), "{other}");
        }
        assert!(is_bonnie_dir("00003") && !is_bonnie_dir("0003") && !is_bonnie_dir("etc"));
    }

    #[test]
    fn liveness_needs_this_machine_and_boot() {
        let mut me = Mark::of_this_process(Kind::Quick).unwrap();
        let here = this_host();
        assert_eq!(me.state(&here), State::Alive);
        me.start += 1;
        assert_eq!(me.state(&here), State::Gone);
        me.start -= 1;
        me.host.boot = "ffffffff".into();
        if here.boot != me.host.boot {
            assert_eq!(me.state(&here), State::Gone);
        }
        me.host.machine = "ffffffffffff".into();
        if here.machine != me.host.machine {
            assert_eq!(me.state(&here), State::OtherHost);
        }
        assert_eq!(host_name("a b/c"), "a-b-c");
        assert_eq!(host_name(""), "unknown");
    }
}
