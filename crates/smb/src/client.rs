//! A logged-in connection to one share: NEGOTIATE, SESSION_SETUP (NTLMv2, guest or
//! anonymous), TREE_CONNECT, then the file commands. Set-up and metadata calls are
//! synchronous; data IO is pipelined through [`Conn`].

use crate::conn::{Completion, Conn, ConnConfig, Submit};
use crate::crypto::{self, Preauth, SMB202, SMB210, SMB300, SMB302, SMB311, SignAlg, Signer};
use crate::error::{NtStatus, Result, SmbError};
use crate::header::{self, Command, FLAG_SIGNED, HEADER_LEN};
use crate::lease::{self, Durable};
use crate::ntlm::{self, Credentials};
use crate::proto::{self, DirEntry, FileId, FileInfo, access, disposition, options};
use crate::seal::{self, Sealer};
use crate::spnego;
use crate::url::SmbUrl;

/// Largest single READ or WRITE the client sends, whatever the server allows.
pub const MAX_IO: u32 = 8 << 20;

/// How to log in and what to ask for.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub conn: ConnConfig,
    pub host: String,
    pub share: String,
    pub creds: Credentials,
    /// Highest dialect offered (all lower ones are offered too).
    pub max_dialect: u16,
    /// Sign even if the server does not require it.
    pub sign: bool,
    /// Encrypt even if the server does not require it.
    pub seal: bool,
    /// Ask for durable handles on data files ([`crate::lease`]).
    pub durable: bool,
    /// The ClientGuid of every NEGOTIATE: the same on a new connection, as a server finds
    /// the durable opens of a client by it.
    pub client_guid: [u8; 16],
}

impl ClientConfig {
    /// From a URL, with the password from `env_password` unless the URL has one.
    pub fn from_url(url: &SmbUrl, env_password: Option<String>) -> Result<ClientConfig> {
        let server = url.server();
        let addrs =
            storbench_resolve::resolve(&url.host, url.port).map_err(|e| SmbError::Resolve {
                host: url.host.clone(),
                source: e,
            })?;
        Ok(ClientConfig {
            conn: ConnConfig {
                server,
                addrs,
                timeout: url.timeout,
                credits: url.credits,
                abort: crate::conn::never,
            },
            host: url.host.clone(),
            share: url.share.clone(),
            creds: url.credentials(env_password),
            max_dialect: url.max_dialect,
            sign: url.sign,
            seal: url.seal,
            durable: url.durable,
            client_guid: crate::wire::random(),
        })
    }
}

/// What was negotiated, for results and comparisons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    pub dialect: u16,
    /// The signing algorithm when requests are signed.
    pub signing: Option<&'static str>,
    /// The cipher when messages are encrypted.
    pub cipher: Option<&'static str>,
    pub max_read: u32,
    pub max_write: u32,
    pub max_transact: u32,
    pub guest: bool,
    pub server_guid: [u8; 16],
}

impl SessionInfo {
    pub fn dialect_name(&self) -> &'static str {
        dialect_name(self.dialect)
    }
}

pub fn dialect_name(d: u16) -> &'static str {
    match d {
        SMB202 => "2.0.2",
        SMB210 => "2.1",
        SMB300 => "3.0",
        SMB302 => "3.0.2",
        SMB311 => "3.1.1",
        _ => "unknown",
    }
}

/// One logged-in tree.
pub struct Client {
    conn: Conn,
    info: SessionInfo,
    share: String,
    /// Leases and durable handles are asked for (2.1 or later, the server leases, the
    /// configuration wants them); V2 forms on 3.x.
    durable: Option<bool>,
    /// The durable opens of this connection.
    durables: Vec<Durable>,
    /// Whether opens of data files ask for durability now ([`Client::set_durable_opens`]).
    durable_opens: bool,
}

impl Client {
    pub fn connect(cfg: &ClientConfig) -> Result<Client> {
        let mut conn = Conn::connect(cfg.conn.clone())?;
        let (neg, preauth) = negotiate(&mut conn, cfg)?;
        let mut info = SessionInfo {
            dialect: neg.dialect,
            signing: None,
            cipher: None,
            max_read: neg.max_read.min(MAX_IO),
            max_write: neg.max_write.min(MAX_IO),
            max_transact: neg.max_transact,
            guest: false,
            server_guid: neg.server_guid,
        };
        if !conn.large_mtu {
            info.max_read = info.max_read.min(65536);
            info.max_write = info.max_write.min(65536);
        }
        let spare = session_setup(&mut conn, cfg, &neg, preauth, &mut info)?;
        let unc = format!("\\\\{}\\{}", cfg.host, cfg.share);
        let h = conn.call(
            Command::TreeConnect,
            &proto::tree_connect_body(&unc),
            neg.dialect == SMB311,
        )?;
        if h.status != 0 {
            return Err(tree_connect_err(&conn, cfg, neg.dialect, h.status));
        }
        let (_, share_flags, _, _) =
            proto::parse_tree_connect(conn.reply()).map_err(|e| conn.garbage("TREE_CONNECT", e))?;
        conn.tree_id = h.tree_id;
        if share_flags & proto::SHAREFLAG_ENCRYPT_DATA != 0 && conn.sealer.is_none() {
            seal_for_share(&mut conn, cfg, &mut info, spare)?;
        }
        let leasing = neg.dialect >= SMB210 && neg.capabilities & proto::CAP_LEASING != 0;
        Ok(Client {
            conn,
            info,
            share: cfg.share.clone(),
            durable: (cfg.durable && leasing).then_some(neg.dialect >= SMB300),
            durables: Vec::new(),
            durable_opens: true,
        })
    }

    pub fn info(&self) -> &SessionInfo {
        &self.info
    }

    pub fn server(&self) -> &str {
        self.conn.server()
    }

    pub fn share(&self) -> &str {
        &self.share
    }

    pub fn conn(&self) -> &Conn {
        &self.conn
    }

    /// Most credits held at once so far.
    pub fn credits_granted(&self) -> u32 {
        self.conn.max_granted
    }

    /// IOs that could not be queued for want of credits so far.
    pub fn credit_waits(&self) -> u64 {
        self.conn.credit_waits
    }

    // ---- metadata ----

    /// CREATE with the given access, disposition and options; `path` is `/`-separated and
    /// relative to the share. Symbolic links are opened, never followed.
    pub fn create(
        &mut self,
        path: &str,
        desired: u32,
        disp: u32,
        opts: u32,
    ) -> Result<(FileId, FileInfo)> {
        let name = wire_path(path);
        let body = proto::create_body(&name, desired, disp, opts | options::OPEN_REPARSE_POINT);
        let h = self.conn.call(Command::Create, &body, false)?;
        if h.status != 0 {
            return Err(self.conn.status_err("CREATE", &quote(path), h.status));
        }
        proto::parse_create(self.conn.reply()).map_err(|e| self.conn.garbage("CREATE", e))
    }

    /// CREATE, then `middle` on the handle it opened, then CLOSE, compounded into one
    /// round trip (the related requests name the new handle as all ones). Returns the
    /// CREATE's attributes; the first failure is the error.
    fn create_close(
        &mut self,
        path: &str,
        desired: u32,
        disp: u32,
        opts: u32,
        middle: Option<(Command, &[u8], &'static str)>,
    ) -> Result<FileInfo> {
        let name = wire_path(path);
        let create = proto::create_body(&name, desired, disp, opts | options::OPEN_REPARSE_POINT);
        let close = proto::close_body(RELATED_FILE);
        let mut reqs: Vec<(Command, &[u8])> = vec![(Command::Create, &create)];
        if let Some((cmd, body, _)) = middle {
            reqs.push((cmd, body));
        }
        reqs.push((Command::Close, &close));
        let replies = self.conn.call_chain(&reqs)?;
        let status = |r: &[u8]| header::Header::decode(r).map(|h| h.status);
        let created = status(&replies[0]).map_err(|e| self.conn.garbage("CREATE", e))?;
        if created != 0 {
            return Err(self.conn.status_err("CREATE", &quote(path), created));
        }
        let (_, info) =
            proto::parse_create(&replies[0]).map_err(|e| self.conn.garbage("CREATE", e))?;
        if let Some((_, _, what)) = middle {
            let st = status(&replies[1]).map_err(|e| self.conn.garbage("SET_INFO", e))?;
            self.check(st, "SET_INFO", what)?;
        }
        let closed =
            status(&replies[replies.len() - 1]).map_err(|e| self.conn.garbage("CLOSE", e))?;
        self.check(closed, "CLOSE", "file")?;
        Ok(info)
    }

    /// Opens a regular file for reading and writing (creating it with `create`, which fails
    /// if it exists when `exclusive`).
    pub fn open(
        &mut self,
        path: &str,
        create: bool,
        exclusive: bool,
    ) -> Result<(FileId, FileInfo)> {
        self.open_file(path, create, exclusive, 0)
    }

    /// As [`Client::open`], with every write of this handle written through to stable
    /// storage before it is acknowledged (`sync=1`).
    pub fn open_write_through(
        &mut self,
        path: &str,
        create: bool,
        exclusive: bool,
    ) -> Result<(FileId, FileInfo)> {
        self.open_file(path, create, exclusive, options::WRITE_THROUGH)
    }

    fn open_file(
        &mut self,
        path: &str,
        create: bool,
        exclusive: bool,
        extra_options: u32,
    ) -> Result<(FileId, FileInfo)> {
        let disp = match (create, exclusive) {
            (true, true) => disposition::CREATE,
            (true, false) => disposition::OPEN_IF,
            _ => disposition::OPEN,
        };
        self.create_durable(
            path,
            access::GENERIC_READ | access::GENERIC_WRITE | access::DELETE | access::SYNCHRONIZE,
            disp,
            options::NON_DIRECTORY_FILE | extra_options,
        )
    }

    /// CREATE of a data file, with a lease and a durable handle asked for where this
    /// connection can have them; a durable grant is kept for [`Client::durable`].
    fn create_durable(
        &mut self,
        path: &str,
        desired: u32,
        disp: u32,
        opts: u32,
    ) -> Result<(FileId, FileInfo)> {
        let Some(v2) = self.durable.filter(|_| self.durable_opens) else {
            return self.create(path, desired, disp, opts);
        };
        let key = crate::wire::random();
        let guid = crate::wire::random();
        let ctx = lease::request_contexts(&key, &guid, v2);
        let (id, info, g) = self.create_ctx(path, desired, disp, opts, &ctx)?;
        if g.durable && g.lease.is_some_and(|(_, st)| st & lease::HANDLE != 0) {
            self.check_lease(&g, &key)?;
            self.durables.push(Durable {
                file: id,
                lease_key: key,
                create_guid: guid,
                v2,
            });
        }
        Ok((id, info))
    }

    fn create_ctx(
        &mut self,
        path: &str,
        desired: u32,
        disp: u32,
        opts: u32,
        ctx: &[u8],
    ) -> Result<(FileId, FileInfo, lease::Granted)> {
        let name = wire_path(path);
        let opts = opts | options::OPEN_REPARSE_POINT;
        let body =
            proto::create_body_ctx(&name, desired, disp, opts, lease::OPLOCK_LEVEL_LEASE, ctx);
        let h = self.conn.call(Command::Create, &body, false)?;
        if h.status != 0 {
            return Err(self.conn.status_err("CREATE", &quote(path), h.status));
        }
        let (id, info) =
            proto::parse_create(self.conn.reply()).map_err(|e| self.conn.garbage("CREATE", e))?;
        let g =
            lease::parse_granted(self.conn.reply()).map_err(|e| self.conn.garbage("CREATE", e))?;
        Ok((id, info, g))
    }

    fn check_lease(&self, g: &lease::Granted, key: &[u8; 16]) -> Result<()> {
        match g.lease {
            Some((k, _)) if &k != key => Err(self.conn.garbage(
                "CREATE",
                crate::error::DecodeError::Invalid("lease granted for another lease key"),
            )),
            _ => Ok(()),
        }
    }

    /// Whether the next [`Client::open`]s ask for a durable handle (on by default, where
    /// the connection can have one): worth it for files a job keeps open, not for the
    /// files a metadata test creates and closes at once, whose cost it would change.
    pub fn set_durable_opens(&mut self, on: bool) {
        self.durable_opens = on;
    }

    /// The durable handle of open file `id`, while it holds one: granted, and its lease
    /// not broken below handle caching.
    pub fn durable(&self, id: FileId) -> Option<Durable> {
        self.durables
            .iter()
            .find(|d| d.file == id)
            .filter(|d| self.conn.handle_lease_kept(&d.lease_key))
            .copied()
    }

    /// Reclaims a durable open of a lost connection (DHnC / DH2C with its lease) under
    /// `path`, its name; the open goes on with the data and state it had. A status error
    /// means the server no longer has it (the caller then opens the file by name).
    pub fn reclaim(&mut self, path: &str, d: &Durable) -> Result<FileId> {
        let ctx = lease::reclaim_contexts(d);
        let (id, _, g) = self.create_ctx(
            path,
            access::GENERIC_READ | access::GENERIC_WRITE | access::SYNCHRONIZE,
            disposition::OPEN,
            options::NON_DIRECTORY_FILE,
            &ctx,
        )?;
        self.check_lease(&g, &d.lease_key)?;
        self.durables.push(Durable { file: id, ..*d });
        Ok(id)
    }

    /// Waits for every IO in flight (their completions stay queued for `reap`).
    pub fn quiesce(&mut self) -> Result<()> {
        self.conn.quiesce()
    }

    /// Opens a file read-only (shares whose user may not write).
    pub fn open_read(&mut self, path: &str) -> Result<(FileId, FileInfo)> {
        self.create_durable(
            path,
            access::GENERIC_READ | access::SYNCHRONIZE,
            disposition::OPEN,
            options::NON_DIRECTORY_FILE,
        )
    }

    pub fn close(&mut self, id: FileId) -> Result<()> {
        self.durables.retain(|d| d.file != id);
        let h = self
            .conn
            .call(Command::Close, &proto::close_body(id), false)?;
        self.check(h.status, "CLOSE", "file")
    }

    /// An ECHO: the protocol's no-op, which the server answers without touching a file
    /// (what the round trip is timed by).
    pub fn echo(&mut self) -> Result<()> {
        let h = self.conn.call(Command::Echo, &proto::echo_body(), false)?;
        self.check(h.status, "ECHO", "server")
    }

    pub fn flush(&mut self, id: FileId) -> Result<()> {
        let h = self
            .conn
            .call(Command::Flush, &proto::flush_body(id), false)?;
        self.check(h.status, "FLUSH", "file")
    }

    /// Sets the end of file (truncates or extends).
    pub fn set_size(&mut self, id: FileId, size: u64) -> Result<()> {
        let body =
            proto::set_info_body(id, proto::FILE_END_OF_FILE_INFORMATION, &size.to_le_bytes());
        let h = self.conn.call(Command::SetInfo, &body, false)?;
        self.check(h.status, "SET_INFO", "end of file")
    }

    /// Marks an open file for deletion when it is closed.
    pub fn set_delete(&mut self, id: FileId) -> Result<()> {
        let body = proto::set_info_body(id, proto::FILE_DISPOSITION_INFORMATION, &[1]);
        let h = self.conn.call(Command::SetInfo, &body, false)?;
        self.check(h.status, "SET_INFO", "delete")
    }

    /// Attributes and size of a file or directory (its link, for a symbolic link).
    pub fn stat(&mut self, path: &str) -> Result<FileInfo> {
        self.create_close(
            path,
            access::FILE_READ_ATTRIBUTES | access::SYNCHRONIZE,
            disposition::OPEN,
            0,
            None,
        )
    }

    /// Removes a file (not a directory).
    pub fn unlink(&mut self, path: &str) -> Result<()> {
        self.create_close(
            path,
            access::DELETE | access::SYNCHRONIZE,
            disposition::OPEN,
            options::NON_DIRECTORY_FILE | options::DELETE_ON_CLOSE,
            None,
        )
        .map(drop)
    }

    /// Creates an empty regular file (fails if it exists), in one round trip.
    pub fn create_empty(&mut self, path: &str) -> Result<()> {
        self.create_close(
            path,
            access::GENERIC_READ | access::GENERIC_WRITE | access::SYNCHRONIZE,
            disposition::CREATE,
            options::NON_DIRECTORY_FILE,
            None,
        )
        .map(drop)
    }

    /// Creates a directory (fails if it exists).
    pub fn mkdir(&mut self, path: &str) -> Result<()> {
        self.create_close(
            path,
            access::FILE_READ_ATTRIBUTES | access::SYNCHRONIZE,
            disposition::CREATE,
            options::DIRECTORY_FILE,
            None,
        )
        .map(drop)
    }

    /// Removes an empty directory. Delete-on-close would silently keep a directory that is
    /// not empty; the disposition set on the open handle is refused with a status instead.
    pub fn rmdir(&mut self, path: &str) -> Result<()> {
        let body = proto::set_info_body(RELATED_FILE, proto::FILE_DISPOSITION_INFORMATION, &[1]);
        self.create_close(
            path,
            access::DELETE | access::SYNCHRONIZE,
            disposition::OPEN,
            options::DIRECTORY_FILE,
            Some((Command::SetInfo, &body, "delete")),
        )
        .map(drop)
    }

    /// The capacity of the share's file system (FileFsFullSizeInformation on its root).
    pub fn fs_size(&mut self) -> Result<proto::FsSize> {
        let (id, _) = self.create(
            "",
            access::FILE_READ_ATTRIBUTES | access::SYNCHRONIZE,
            disposition::OPEN,
            options::DIRECTORY_FILE,
        )?;
        let body = proto::query_info_body(
            id,
            proto::INFO_FILESYSTEM,
            proto::FILE_FS_FULL_SIZE_INFORMATION,
            proto::FS_FULL_SIZE_LEN,
        );
        let asked = self
            .conn
            .call(Command::QueryInfo, &body, false)
            .and_then(|h| {
                self.check(h.status, "QUERY_INFO", "file system")?;
                proto::parse_fs_full_size(self.conn.reply())
                    .map_err(|e| self.conn.garbage("QUERY_INFO", e))
            });
        let closed = self.close(id);
        let size = asked?;
        closed?;
        Ok(size)
    }

    /// Opens a directory for listing.
    pub fn open_dir(&mut self, path: &str) -> Result<FileId> {
        let (id, _) = self.create(
            path,
            access::GENERIC_READ | access::SYNCHRONIZE,
            disposition::OPEN,
            options::DIRECTORY_FILE,
        )?;
        Ok(id)
    }

    /// One QUERY_DIRECTORY batch into `out`; false when the listing has ended.
    pub fn read_dir(
        &mut self,
        dir: FileId,
        restart: bool,
        out: &mut Vec<DirEntry>,
    ) -> Result<bool> {
        let want = self.info.max_transact.min(65536);
        let body = proto::query_directory_body(dir, restart, want);
        let h = self.conn.call(Command::QueryDirectory, &body, false)?;
        if h.status == NtStatus::NO_MORE_FILES.0 {
            return Ok(false);
        }
        self.check(h.status, "QUERY_DIRECTORY", "directory")?;
        proto::parse_query_directory(self.conn.reply(), out)
            .map_err(|e| self.conn.garbage("QUERY_DIRECTORY", e))?;
        Ok(true)
    }

    /// Every name in a directory except `.` and `..`.
    pub fn list(&mut self, path: &str) -> Result<Vec<DirEntry>> {
        let dir = self.open_dir(path)?;
        let mut all = Vec::new();
        let mut first = true;
        let r = loop {
            match self.read_dir(dir, first, &mut all) {
                Ok(true) => first = false,
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        let c = self.close(dir);
        r.and(c)?;
        all.retain(|e| e.name != "." && e.name != "..");
        Ok(all)
    }

    fn check(&self, status: u32, op: &'static str, what: &str) -> Result<()> {
        if status == 0 {
            Ok(())
        } else {
            Err(self.conn.status_err(op, what, status))
        }
    }

    // ---- data ----

    /// Queues a read of `len` bytes at `offset` into `buf`, completing as `user`.
    ///
    /// # Safety
    /// `buf` must stay valid and unaliased for `len` bytes until the IO is reaped.
    pub unsafe fn submit_read(
        &mut self,
        id: FileId,
        offset: u64,
        buf: *mut u8,
        len: u32,
        user: u64,
    ) -> Result<Submit> {
        let max = self.info.max_read;
        // SAFETY: passed on from the caller.
        unsafe { self.conn.submit_read(id, offset, buf, len, max, user) }
    }

    /// Queues a write of `len` bytes from `buf` at `offset`, completing as `user`.
    ///
    /// # Safety
    /// `buf` must stay valid for `len` bytes until the IO is reaped.
    pub unsafe fn submit_write(
        &mut self,
        id: FileId,
        offset: u64,
        buf: *const u8,
        len: u32,
        user: u64,
    ) -> Result<Submit> {
        let max = self.info.max_write;
        // SAFETY: passed on from the caller.
        unsafe { self.conn.submit_write(id, offset, buf, len, max, user) }
    }

    /// Sends what was queued.
    pub fn commit(&mut self) -> Result<()> {
        self.conn.commit()
    }

    /// Collects at least `min` completions.
    pub fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<()> {
        self.conn.reap(min, out)
    }

    /// Completions received and not yet reaped, moved into `out` (before a lost
    /// connection is replaced).
    pub fn take_done(&mut self, out: &mut Vec<Completion>) {
        self.conn.take_done(out)
    }

    pub fn outstanding(&self) -> usize {
        self.conn.ops_outstanding()
    }

    /// Reads `buf.len()` bytes at `offset` (one IO, waited for): for tests and tools.
    pub fn read_at(&mut self, id: FileId, offset: u64, buf: &mut [u8]) -> Result<u64> {
        // SAFETY: `buf` outlives the wait below.
        let s = unsafe { self.submit_read(id, offset, buf.as_mut_ptr(), buf.len() as u32, 0)? };
        self.wait_one(s, "READ")
    }

    /// Writes `buf` at `offset` (one IO, waited for).
    pub fn write_at(&mut self, id: FileId, offset: u64, buf: &[u8]) -> Result<u64> {
        // SAFETY: `buf` outlives the wait below.
        let s = unsafe { self.submit_write(id, offset, buf.as_ptr(), buf.len() as u32, 0)? };
        self.wait_one(s, "WRITE")
    }

    fn wait_one(&mut self, s: Submit, op: &'static str) -> Result<u64> {
        if s == Submit::Busy || self.outstanding() != 1 {
            return Err(self
                .conn
                .protocol(op, "a single IO with others outstanding"));
        }
        let mut out = Vec::with_capacity(1);
        self.reap(1, &mut out)?;
        match out[0].result {
            Ok(n) => Ok(n),
            Err(st) => Err(self.conn.status_err(op, "file", st.0)),
        }
    }

    /// The server's shares (srvsvc NetrShareEnum over `IPC$`'s named pipe); `cfg.share` is
    /// ignored.
    pub fn list_shares(cfg: &ClientConfig) -> Result<Vec<crate::rpc::Share>> {
        let mut cfg = cfg.clone();
        cfg.share = "IPC$".into();
        let mut c = Client::connect(&cfg)?;
        let (pipe, _) = c.create(
            "srvsvc",
            access::GENERIC_READ | access::GENERIC_WRITE | access::SYNCHRONIZE,
            disposition::OPEN,
            0,
        )?;
        let r = c.share_enum(pipe, &cfg.host);
        let closed = c.close(pipe);
        let shares = r?;
        closed?;
        c.logoff()?;
        Ok(shares)
    }

    fn share_enum(&mut self, pipe: FileId, host: &str) -> Result<Vec<crate::rpc::Share>> {
        let mut buf = vec![0u8; 65536];
        self.write_at(pipe, 0, &crate::rpc::bind(1))?;
        let n = self.read_at(pipe, 0, &mut buf)? as usize;
        crate::rpc::parse_bind_ack(&buf[..n]).map_err(|e| self.conn.garbage("srvsvc BIND", e))?;
        self.write_at(pipe, 0, &crate::rpc::share_enum(2, host))?;
        let mut stub = Vec::new();
        loop {
            let n = self.read_at(pipe, 0, &mut buf)? as usize;
            let last = crate::rpc::response_fragment(&buf[..n], &mut stub)
                .map_err(|e| self.conn.garbage("srvsvc NetrShareEnum", e))?;
            if last {
                break;
            }
        }
        crate::rpc::parse_share_enum(&stub)
            .map_err(|e| self.conn.garbage("srvsvc NetrShareEnum", e))
    }

    /// TREE_DISCONNECT and LOGOFF (best effort: the connection closes anyway).
    pub fn logoff(mut self) -> Result<()> {
        let h = self
            .conn
            .call(Command::TreeDisconnect, &[4, 0, 0, 0], false)?;
        self.check(h.status, "TREE_DISCONNECT", "share")?;
        let h = self.conn.call(Command::Logoff, &[4, 0, 0, 0], false)?;
        self.check(h.status, "LOGOFF", "session")
    }
}

/// The FileId of a related compounded request: the handle the chain's CREATE opened.
const RELATED_FILE: FileId = FileId([0xff; 16]);

fn quote(path: &str) -> String {
    format!("{path:?}")
}

/// `/a/b` → `a\b`, as CREATE wants names.
fn wire_path(path: &str) -> String {
    path.split('/')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\\")
}

fn dialects_up_to(max: u16) -> Vec<u16> {
    [SMB202, SMB210, SMB300, SMB302, SMB311]
        .into_iter()
        .filter(|&d| d <= max)
        .collect()
}

fn negotiate(conn: &mut Conn, cfg: &ClientConfig) -> Result<(proto::NegotiateResp, Preauth)> {
    let dialects = dialects_up_to(cfg.max_dialect);
    let ciphers = [
        proto::CIPHER_AES128_GCM,
        proto::CIPHER_AES128_CCM,
        proto::CIPHER_AES256_GCM,
        proto::CIPHER_AES256_CCM,
    ];
    let req = proto::NegotiateReq {
        dialects: &dialects,
        signing_required: cfg.sign,
        client_guid: cfg.client_guid,
        salt: crate::wire::random(),
        ciphers: &ciphers,
        sign_algs: &proto::SIGN_ALGS,
    };
    let h = conn.call(Command::Negotiate, &proto::negotiate_body(&req), false)?;
    if h.status != 0 {
        return Err(conn.status_err("NEGOTIATE", "dialects", h.status));
    }
    let neg = proto::parse_negotiate(conn.reply()).map_err(|e| conn.garbage("NEGOTIATE", e))?;
    if !dialects.contains(&neg.dialect) {
        return Err(conn.protocol(
            "NEGOTIATE",
            &format!(
                "server chose dialect 0x{:04x}, which was not offered",
                neg.dialect
            ),
        ));
    }
    let mut pre = Preauth::default();
    if neg.dialect == SMB311 {
        if !neg.preauth_ok {
            return Err(conn.protocol("NEGOTIATE", "no SHA-512 pre-authentication integrity"));
        }
        pre.update(&conn.last_request);
        pre.update(conn.reply());
    }
    conn.large_mtu = neg.dialect >= SMB210 && neg.capabilities & proto::CAP_LARGE_MTU != 0;
    Ok((neg, pre))
}

/// Sealing the session could switch on later: the sealer with the session's keys, and its
/// cipher.
type Spare = Option<(Sealer, u16)>;

/// Logs in. Encryption starts here when the URL or the server asks for it; otherwise, where
/// the dialect has a cipher, the sealer is handed back for a share that requires it.
fn session_setup(
    conn: &mut Conn,
    cfg: &ClientConfig,
    neg: &proto::NegotiateResp,
    mut pre: Preauth,
    info: &mut SessionInfo,
) -> Result<Spare> {
    let server_requires = neg.security_mode & proto::SECURITY_SIGNING_REQUIRED != 0;
    let signing_required = server_requires || cfg.sign;
    let anonymous = cfg.creds.anonymous();
    let t1 = ntlm::negotiate_message(ntlm::client_flags(anonymous));
    let body = proto::session_setup_body(signing_required, &spnego::init(&t1));
    let h = conn.call(Command::SessionSetup, &body, false)?;
    if h.status != NtStatus::MORE_PROCESSING_REQUIRED.0 {
        return Err(login_err(conn, cfg, h.status));
    }
    if neg.dialect == SMB311 {
        pre.update(&conn.last_request);
        pre.update(conn.reply());
    }
    conn.session_id = h.session_id;
    let (_, blob) =
        proto::parse_session_setup(conn.reply()).map_err(|e| conn.garbage("SESSION_SETUP", e))?;
    let ch = ntlm::parse_challenge(&blob).map_err(|e| conn.garbage("SESSION_SETUP", e))?;
    let auth = ntlm::authenticate(
        &cfg.creds,
        &ch,
        ntlm::filetime_now(),
        crate::wire::random(),
        crate::wire::random(),
    );
    let body = proto::session_setup_body(signing_required, &spnego::response(&auth.message));
    let h = conn.call(Command::SessionSetup, &body, false)?;
    if h.status != 0 {
        return Err(login_err(conn, cfg, h.status));
    }
    if neg.dialect == SMB311 {
        pre.update(&conn.last_request);
    }
    let (flags, _) =
        proto::parse_session_setup(conn.reply()).map_err(|e| conn.garbage("SESSION_SETUP", e))?;
    info.guest =
        anonymous || flags & (proto::SESSION_FLAG_IS_GUEST | proto::SESSION_FLAG_IS_NULL) != 0;
    if info.guest {
        // Guest and anonymous sessions have no key to sign or seal with.
        if cfg.seal || flags & proto::SESSION_FLAG_ENCRYPT_DATA != 0 {
            return Err(conn.protocol("SESSION_SETUP", "a guest session cannot be encrypted"));
        }
        return Ok(None);
    }
    let cipher = match neg.dialect {
        SMB311 => neg.cipher,
        SMB300 | SMB302 if neg.capabilities & proto::CAP_ENCRYPTION != 0 => {
            proto::CIPHER_AES128_CCM
        }
        _ => 0,
    };
    let bits = if matches!(cipher, proto::CIPHER_AES256_CCM | proto::CIPHER_AES256_GCM) {
        256
    } else {
        128
    };
    let keys = crypto::derive_keys(neg.dialect, &auth.session_key, &pre, bits);
    let alg = match (neg.dialect, neg.sign_alg) {
        (SMB202 | SMB210, _) => SignAlg::HmacSha256,
        (SMB311, Some(crypto::SIGN_AES_GMAC)) => SignAlg::AesGmac,
        (SMB311, Some(crypto::SIGN_HMAC_SHA256)) => SignAlg::HmacSha256,
        _ => SignAlg::AesCmac,
    };
    let signer = Signer::new(alg, keys.signing);
    // The final SESSION_SETUP reply is signed with the new key: checking it proves the
    // whole key derivation before any data moves.
    let reply = conn.reply().to_vec();
    if let Ok(rh) = header::Header::decode(&reply)
        && rh.flags & FLAG_SIGNED != 0
    {
        let mut z = reply.clone();
        header::zero_signature(&mut z[..HEADER_LEN]);
        if signer.sign(rh.message_id, true, &z) != rh.signature {
            return Err(conn.protocol(
                "SESSION_SETUP",
                "the server's signature does not match the derived key",
            ));
        }
    }
    conn.signer = Some(signer);
    conn.sign_all = signing_required;
    if signing_required {
        info.signing = Some(alg.name());
    }
    if cfg.seal || flags & proto::SESSION_FLAG_ENCRYPT_DATA != 0 {
        if cipher == 0 {
            return Err(conn.protocol(
                "SESSION_SETUP",
                &format!(
                    "encryption asked for, but dialect {} with this server offers none",
                    dialect_name(neg.dialect)
                ),
            ));
        }
        let sealer = Sealer::new(cipher, &keys.encrypt, &keys.decrypt)
            .ok_or_else(|| conn.protocol("SESSION_SETUP", "unsupported cipher"))?;
        conn.sealer = Some(sealer);
        info.cipher = Some(seal::cipher_name(cipher));
        info.signing = None;
        return Ok(None);
    }
    if cipher == 0 {
        return Ok(None);
    }
    Ok(Sealer::new(cipher, &keys.encrypt, &keys.decrypt).map(|s| (s, cipher)))
}

/// A share whose TREE_CONNECT reply flags it for encryption: every later message of the
/// session is sealed ([MS-SMB2] 3.2.5.5), where the session can be.
fn seal_for_share(
    conn: &mut Conn,
    cfg: &ClientConfig,
    info: &mut SessionInfo,
    spare: Spare,
) -> Result<()> {
    let Some((sealer, cipher)) = spare else {
        let why = if info.guest {
            "a guest session cannot be encrypted (log in as a user)".to_string()
        } else {
            format!(
                "dialect {} with this server offers none (encryption needs SMB 3.0 or later; \
                 ?seal=1 asks for it from the login on)",
                info.dialect_name()
            )
        };
        return Err(conn.protocol(
            "TREE_CONNECT",
            &format!("share {:?} requires encryption: {why}", cfg.share),
        ));
    };
    conn.sealer = Some(sealer);
    info.cipher = Some(seal::cipher_name(cipher));
    info.signing = None;
    Ok(())
}

/// A refused TREE_CONNECT. Samba refuses a share that requires encryption with
/// STATUS_ACCESS_DENIED to a session whose dialect cannot encrypt: that case is named.
fn tree_connect_err(conn: &Conn, cfg: &ClientConfig, dialect: u16, status: u32) -> SmbError {
    let mut what = format!("share {:?}", cfg.share);
    if dialect < SMB300 && status == NtStatus::ACCESS_DENIED.0 {
        what += &format!(
            " (if it requires encryption: dialect {} has none; SMB 3.0 or later is needed, \
             with ?seal=1 where the server does not ask for it)",
            dialect_name(dialect)
        );
    }
    conn.status_err("TREE_CONNECT", &what, status)
}

fn login_err(conn: &Conn, cfg: &ClientConfig, status: u32) -> SmbError {
    let who = if cfg.creds.anonymous() {
        "as guest".to_string()
    } else {
        format!("as user {:?}", cfg.creds.user)
    };
    conn.status_err("SESSION_SETUP", &format!("login {who}"), status)
}
