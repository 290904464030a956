//! `smb`: an SMB2/3 share from user space with storbench's own client (`storbench-smb`):
//! no mount, no root, no kernel client and no client cache (no oplocks or leases).
//!
//! Targets are `smb://[user[;domain]@]host[:port]/share/path?options` URLs (docs/smb.md);
//! the password comes from `STORBENCH_SMB_PASSWORD` (a password in the URL is accepted and
//! noted, never shown). One engine instance logs in once and connects one share; data IOs
//! are pipelined with the server's credits as the window (iodepth = requests in flight),
//! split to the server's MaxRead/MaxWrite. `fsync` is a FLUSH after every write in flight
//! has its reply; `sync=1` opens files write-through.

use storbench_core::{
    Attr, Caps, Completion, DirCursor, DirRef, Engine, EngineError, EngineInfo, ErrorKind, FileId,
    FileSpec, IoKind, IoUnit, MetaOps, NameList, OpenOptions, Queued, refuse_create_in_open,
};
use storbench_job::JobSpec;
use storbench_smb::url::PASSWORD_ENV;
use storbench_smb::{Client, ClientConfig, DirEntry, SmbError, SmbUrl, Submit};

/// The catalogue entry (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "smb";

pub fn create(_job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(SmbEngine::default()))
}

/// An SMB client error as an engine error: one line naming the server and the operation.
fn to_engine(e: SmbError) -> EngineError {
    let kind = match &e {
        SmbError::Url { .. } => ErrorKind::Unsupported,
        SmbError::Status { .. } => ErrorKind::Os,
        e if e.is_disconnect() => ErrorKind::Disconnected,
        SmbError::Resolve { .. } | SmbError::Connect { .. } => ErrorKind::Disconnected,
        _ => ErrorKind::Protocol,
    };
    EngineError {
        kind,
        errno: e.status().map(|s| s.errno()),
        message: format!("smb: {e}"),
    }
}

struct SmbFile {
    id: storbench_smb::FileId,
    /// Path inside the share.
    rel: String,
}

#[derive(Default)]
pub struct SmbEngine {
    url: Option<SmbUrl>,
    client: Option<Client>,
    files: Vec<Option<SmbFile>>,
    /// The directory being listed by `read_dir`, and its handle.
    listing: Option<(String, storbench_smb::FileId)>,
    entries: Vec<DirEntry>,
    /// The client's completions of one `reap` (reused).
    entries_done: Vec<storbench_smb::Completion>,
    /// IOs that could not be queued for want of credits.
    credit_waits: u64,
}

impl SmbEngine {
    /// Logs in on first use and returns the path inside the share that `path` names: an
    /// `smb://` URL on the same share, or a path relative to it.
    fn target(&mut self, path: &str) -> Result<String, EngineError> {
        if !path.starts_with("smb://") {
            if self.client.is_none() {
                return Err(EngineError::unsupported(format!(
                    "smb: {path} is not an smb:// URL"
                )));
            }
            return Ok(path.trim_matches('/').to_string());
        }
        let url = SmbUrl::parse(path).map_err(to_engine)?;
        match (&self.client, &self.url) {
            (Some(_), Some(have)) if same_share(have, &url) => Ok(url.path),
            (Some(_), Some(have)) => Err(EngineError::unsupported(format!(
                "smb: one job uses one share with one set of options; {} is not on {}",
                url.display(),
                have.display()
            ))),
            _ => {
                let pw = storbench_smb::url::password_from_env();
                let cfg = ClientConfig::from_url(&url, pw).map_err(to_engine)?;
                self.client = Some(Client::connect(&cfg).map_err(to_engine)?);
                let rel = url.path.clone();
                self.url = Some(url);
                Ok(rel)
            }
        }
    }

    fn client(&mut self) -> Result<&mut Client, EngineError> {
        self.client
            .as_mut()
            .ok_or_else(|| EngineError::unsupported("smb: no target opened yet"))
    }

    fn file(&self, id: FileId) -> Result<&SmbFile, EngineError> {
        match self.files.get(id as usize) {
            Some(Some(f)) => Ok(f),
            _ => Err(EngineError::new(
                ErrorKind::Os,
                format!("smb: file id {id} is not open"),
            )),
        }
    }

    fn add_file(&mut self, id: storbench_smb::FileId, rel: String) -> FileId {
        let f = SmbFile { id, rel };
        match self.files.iter().position(Option::is_none) {
            Some(i) => {
                self.files[i] = Some(f);
                i as FileId
            }
            None => {
                self.files.push(Some(f));
                (self.files.len() - 1) as FileId
            }
        }
    }

    fn open_rel(&mut self, rel: &str, shown: &str, o: &OpenOptions) -> Result<FileId, EngineError> {
        let client = self.client()?;
        let r = if o.sync {
            client.open_write_through(rel, o.create, o.exclusive)
        } else if o.write || o.create {
            client.open(rel, o.create, o.exclusive)
        } else {
            client.open_read(rel)
        };
        let (id, _) = r.map_err(|e| match e.status() {
            Some(s) if s == storbench_smb::NtStatus::OBJECT_NAME_COLLISION => EngineError {
                kind: ErrorKind::Refused,
                errno: Some(libc::EEXIST),
                message: format!("smb: {shown} already exists; storbench creates only new files"),
            },
            _ => to_engine(e),
        })?;
        if o.truncate {
            client.set_size(id, 0).map_err(to_engine)?;
        }
        Ok(self.add_file(id, rel.to_string()))
    }
}

fn same_share(a: &SmbUrl, b: &SmbUrl) -> bool {
    a.host == b.host
        && a.port == b.port
        && a.share == b.share
        && a.user == b.user
        && a.seal == b.seal
        && a.sign == b.sign
        && a.max_dialect == b.max_dialect
}

impl Engine for SmbEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn caps(&self) -> Caps {
        Caps {
            synchronous: false,
            has_slat: false,
            trim: false,
            meta: true,
            no_data: false,
        }
    }

    fn open(&mut self, spec: &FileSpec) -> Result<FileId, EngineError> {
        let rel = self.target(&spec.path)?;
        self.open_rel(&rel, &spec.path, &spec.open)
    }

    fn size(&mut self, file: FileId) -> Result<u64, EngineError> {
        let rel = self.file(file)?.rel.clone();
        Ok(self.client()?.stat(&rel).map_err(to_engine)?.size)
    }

    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        let id = self.file(io.file)?.id;
        let client = self.client()?;
        let user = u64::from(io.tag);
        // SAFETY: the IoUnit contract: `buf` holds `len` bytes that the worker leaves alone
        // until this tag completes.
        let r = unsafe {
            match io.kind {
                IoKind::Read => client.submit_read(id, io.offset, io.buf.as_ptr(), io.len, user),
                IoKind::Write => client.submit_write(id, io.offset, io.buf.as_ptr(), io.len, user),
                IoKind::Fsync | IoKind::Fdatasync => {
                    client.quiesce().map_err(to_engine)?;
                    client.flush(id).map_err(to_engine)?;
                    return Ok(Queued::Done(0));
                }
                IoKind::Trim => {
                    return Err(EngineError::unsupported(
                        "smb: trim is not supported (no FSCTL_SET_ZERO_DATA yet)",
                    ));
                }
            }
        };
        match r.map_err(to_engine)? {
            Submit::Queued => Ok(Queued::Pending),
            Submit::Busy => {
                self.credit_waits += 1;
                Ok(Queued::Busy)
            }
        }
    }

    fn commit(&mut self) -> Result<(), EngineError> {
        match self.client.as_mut() {
            Some(c) => c.commit().map_err(to_engine),
            None => Ok(()),
        }
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        let Some(c) = self.client.as_mut() else {
            return Ok(());
        };
        // The client's completions, moved into the worker's list without allocating: the
        // client's own list is kept in a reused vector.
        let mut got = std::mem::take(&mut self.entries_done);
        got.clear();
        let r = c.reap(min, &mut got).map_err(to_engine);
        for d in &got {
            out.push(Completion {
                tag: d.user as u32,
                result: match d.result {
                    Ok(n) => n as i64,
                    Err(s) => -i64::from(s.errno()),
                },
            });
        }
        self.entries_done = got;
        r
    }

    fn close(&mut self, file: FileId) -> Result<(), EngineError> {
        let id = self.file(file)?.id;
        self.files[file as usize] = None;
        self.client()?.close(id).map_err(to_engine)
    }

    fn meta(&mut self) -> Option<&mut dyn MetaOps> {
        Some(self)
    }

    fn server_addr(&self) -> Option<std::net::SocketAddr> {
        self.client.as_ref()?.conn().peer()
    }

    fn client_addr(&self) -> Option<std::net::SocketAddr> {
        self.client.as_ref()?.conn().local()
    }

    fn info(&mut self) -> EngineInfo {
        let Some(c) = self.client.as_ref() else {
            return EngineInfo::default();
        };
        let i = c.info();
        let details = vec![
            ("protocol".to_string(), "SMB".to_string()),
            ("dialect".to_string(), i.dialect_name().to_string()),
            ("server".to_string(), c.server().to_string()),
            ("share".to_string(), c.share().to_string()),
            (
                "signing".to_string(),
                i.signing.unwrap_or("off").to_string(),
            ),
            (
                "encryption".to_string(),
                i.cipher.unwrap_or("off").to_string(),
            ),
            ("max_read".to_string(), i.max_read.to_string()),
            ("max_write".to_string(), i.max_write.to_string()),
            (
                "credits_granted".to_string(),
                c.credits_granted().to_string(),
            ),
            (
                "login".to_string(),
                if i.guest { "guest" } else { "user" }.to_string(),
            ),
        ];
        let mut notes = Vec::new();
        if self.credit_waits > 0 {
            notes.push(format!(
                "credit starvation: {} IO(s) waited because the SMB server granted at most {} credits (fewer than the queue depth needs)",
                self.credit_waits,
                c.credits_granted()
            ));
        }
        if self.url.as_ref().is_some_and(SmbUrl::password_in_url) {
            notes.push(format!(
                "the SMB password was given in the URL (visible to other users in the process list); use {PASSWORD_ENV}"
            ));
        }
        let interface = c
            .conn()
            .local()
            .and_then(|a| storbench_core::nic::interface_of(a.ip()));
        EngineInfo {
            details,
            notes,
            interface,
        }
    }
}

impl MetaOps for SmbEngine {
    fn mkdir(&mut self, path: &str) -> Result<(), EngineError> {
        let rel = self.target(path)?;
        self.client()?.mkdir(&rel).map_err(to_engine)
    }

    fn rmdir(&mut self, path: &str) -> Result<(), EngineError> {
        let rel = self.target(path)?;
        self.client()?.rmdir(&rel).map_err(to_engine)
    }

    fn create(&mut self, path: &str, open: &OpenOptions) -> Result<FileId, EngineError> {
        let rel = self.target(path)?;
        let o = OpenOptions {
            create: true,
            exclusive: true,
            ..open.clone()
        };
        self.open_rel(&rel, path, &o)
    }

    fn stat(&mut self, path: &str) -> Result<Attr, EngineError> {
        let rel = self.target(path)?;
        let i = self.client()?.stat(&rel).map_err(to_engine)?;
        Ok(Attr {
            size: i.size,
            is_dir: i.is_dir(),
        })
    }

    fn unlink(&mut self, path: &str) -> Result<(), EngineError> {
        let rel = self.target(path)?;
        self.client()?.unlink(&rel).map_err(to_engine)
    }

    fn read_dir(
        &mut self,
        path: &str,
        cursor: &mut DirCursor,
        names: &mut NameList,
    ) -> Result<(), EngineError> {
        let rel = self.target(path)?;
        let first = cursor.offset == 0;
        if first {
            if let Some((_, old)) = self.listing.take() {
                let _ = self.client()?.close(old);
            }
            let id = self.client()?.open_dir(&rel).map_err(to_engine)?;
            self.listing = Some((rel.clone(), id));
        }
        let Some((_, id)) = self.listing.clone() else {
            return Err(EngineError::new(
                ErrorKind::Os,
                format!("smb: listing of {path} was not started"),
            ));
        };
        let mut entries = std::mem::take(&mut self.entries);
        entries.clear();
        let more = self.client()?.read_dir(id, first, &mut entries);
        for e in entries.iter().filter(|e| e.name != "." && e.name != "..") {
            names.push(&e.name);
        }
        self.entries = entries;
        cursor.offset += 1;
        match more {
            Ok(true) => Ok(()),
            Ok(false) | Err(_) => {
                cursor.done = true;
                self.listing = None;
                let c = self.client()?.close(id).map_err(to_engine);
                more.map_err(to_engine)?;
                c
            }
        }
    }

    fn set_size(&mut self, file: FileId, size: u64) -> Result<(), EngineError> {
        let id = self.file(file)?.id;
        self.client()?.set_size(id, size).map_err(to_engine)
    }

    fn sync_dir(&mut self, _path: &str) -> Result<(), EngineError> {
        Ok(())
    }

    fn open_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError> {
        refuse_create_in_open(open, dir, name)?;
        let path = dir.join(name);
        let rel = self.target(&path)?;
        self.open_rel(&rel, &path, open)
    }

    fn create_empty_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        let path = dir.join(name);
        let rel = self.target(&path)?;
        let o = OpenOptions {
            read: true,
            write: true,
            create: true,
            exclusive: true,
            ..OpenOptions::default()
        };
        let f = self.open_rel(&rel, &path, &o)?;
        self.close(f)
    }
}
