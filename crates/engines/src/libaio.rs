//! `libaio`: Linux native AIO through the raw syscalls (io_setup, io_submit, io_getevents,
//! io_destroy), so no libaio.so is needed. As with fio's engine, only O_DIRECT IO is truly
//! asynchronous: buffered IO completes inside `io_submit`.
//!
//! Option as fio's: `nowait` (RWF_NOWAIT).

use storbench_core::{Caps, Completion, Engine, EngineError, ErrorKind, IoKind, IoUnit, Queued};
use storbench_job::JobSpec;

use crate::local::{LocalFiles, delegate_local_files, last_errno};

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;
const IOCB_CMD_FSYNC: u16 = 2;
const IOCB_CMD_FDSYNC: u16 = 3;
/// `reqprio` holds the IO's priority.
const IOCB_FLAG_IOPRIO: u32 = 1 << 1;

/// The kernel's `struct iocb` (little-endian layout: `aio_key` before `aio_rw_flags`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Iocb {
    data: u64,
    key: u32,
    rw_flags: i32,
    opcode: u16,
    reqprio: i16,
    fildes: u32,
    buf: u64,
    nbytes: u64,
    offset: i64,
    reserved2: u64,
    flags: u32,
    resfd: u32,
}

/// The kernel's `struct io_event`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

const _: () = assert!(std::mem::size_of::<Iocb>() == 64);
const _: () = assert!(std::mem::size_of::<IoEvent>() == 32);
#[cfg(target_endian = "big")]
compile_error!("the libaio engine's iocb layout is written for little-endian targets");

pub struct Libaio {
    files: LocalFiles,
    /// `aio_context_t`; 0 until `io_setup` succeeded.
    ctx: libc::c_ulong,
    depth: usize,
    rw_flags: i32,
    /// One control block per tag; the kernel copies it during io_submit.
    iocbs: Vec<Iocb>,
    /// Tags queued and not yet accepted by io_submit, in order.
    queued: Vec<u32>,
    /// Scratch array of pointers for io_submit.
    ptrs: Vec<*mut Iocb>,
    events: Vec<IoEvent>,
    inflight: usize,
    /// IOs io_submit refused, reported as completions with -errno at the next reap.
    refused: Vec<Completion>,
}

// SAFETY: the raw pointers in `ptrs` are scratch, only valid during one `commit`, and point into
// `iocbs`, which this instance owns; the engine moves between threads only as a whole.
unsafe impl Send for Libaio {}

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "libaio";

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    let depth = job.iodepth.max(1) as usize;
    let mut ctx: libc::c_ulong = 0;
    // SAFETY: io_setup writes the new context into `ctx`.
    let rc = unsafe { libc::syscall(libc::SYS_io_setup, depth as libc::c_long, &mut ctx) };
    if rc < 0 {
        return Err(setup_error(last_errno(), depth));
    }
    let rw_flags = if job.engine_options.nowait {
        libc::RWF_NOWAIT
    } else {
        0
    };
    Ok(Box::new(Libaio {
        files: LocalFiles::default(),
        ctx,
        depth,
        rw_flags,
        iocbs: vec![Iocb::default(); depth],
        queued: Vec::with_capacity(depth),
        ptrs: Vec::with_capacity(depth),
        events: vec![IoEvent::default(); depth],
        inflight: 0,
        refused: Vec::with_capacity(depth),
    }))
}

fn setup_error(errno: i32, depth: usize) -> EngineError {
    let message = match errno {
        libc::EAGAIN => format!(
            "io_setup({depth}): the system-wide AIO limit is used up (EAGAIN); raise \
             /proc/sys/fs/aio-max-nr or lower iodepth"
        ),
        libc::ENOSYS | libc::EPERM => format!(
            "kernel AIO is not available here (io_setup: {}); use --ioengine=psync or io_uring",
            std::io::Error::from_raw_os_error(errno)
        ),
        _ => return EngineError::errno("io_setup", "(AIO context)", errno),
    };
    EngineError {
        kind: ErrorKind::Unsupported,
        errno: Some(errno),
        message,
    }
}

impl Libaio {
    /// Hands queued IOs to the kernel; io_submit may take fewer than offered, the rest wait.
    fn submit(&mut self) -> Result<(), EngineError> {
        while !self.queued.is_empty() {
            self.ptrs.clear();
            let base = self.iocbs.as_mut_ptr();
            // SAFETY: every queued tag indexes `iocbs` (checked in `queue`).
            self.ptrs
                .extend(self.queued.iter().map(|&t| unsafe { base.add(t as usize) }));
            // SAFETY: `ptrs` holds `len` pointers to initialized iocbs.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    self.ptrs.len() as libc::c_long,
                    self.ptrs.as_ptr(),
                )
            };
            if rc < 0 {
                match last_errno() {
                    libc::EINTR => continue,
                    libc::EAGAIN if self.inflight > 0 => return Ok(()),
                    libc::EAGAIN => return Err(self.submit_error(libc::EAGAIN)),
                    // The kernel refused the first iocb (bad fd, flags the file cannot do):
                    // that IO completes with the error, the rest are offered again.
                    errno => {
                        let tag = self.queued.remove(0);
                        self.refused.push(Completion {
                            tag,
                            result: -i64::from(errno),
                        });
                        continue;
                    }
                }
            }
            let accepted = rc as usize;
            self.inflight += accepted;
            self.queued.drain(..accepted);
            if accepted == 0 {
                return Ok(());
            }
        }
        Ok(())
    }

    /// io_submit failed on the first queued IO: name its file.
    #[cold]
    fn submit_error(&self, errno: i32) -> EngineError {
        let first = self.queued.first().map(|&t| self.iocbs[t as usize]);
        let path = first
            .and_then(|cb| {
                self.files
                    .iter()
                    .find(|(_, f)| f.raw() as u32 == cb.fildes)
                    .map(|(_, f)| f.path.clone())
            })
            .unwrap_or_else(|| "(unknown file)".into());
        EngineError::errno("io_submit", &path, errno)
    }
}

impl Engine for Libaio {
    fn name(&self) -> &'static str {
        NAME
    }

    fn caps(&self) -> Caps {
        Caps {
            synchronous: false,
            has_slat: true,
            trim: true,
            meta: true,
            no_data: false,
        }
    }

    delegate_local_files!();

    #[inline]
    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        let f = self.files.get(io.file)?;
        let opcode = match io.kind {
            IoKind::Read => IOCB_CMD_PREAD,
            IoKind::Write => IOCB_CMD_PWRITE,
            IoKind::Fsync => IOCB_CMD_FSYNC,
            IoKind::Fdatasync => IOCB_CMD_FDSYNC,
            IoKind::Trim => return f.other_io(io),
        };
        if self.queued.len() + self.inflight + self.refused.len() >= self.depth {
            return Ok(Queued::Busy);
        }
        if opcode <= IOCB_CMD_PWRITE {
            f.check_direct(io)?;
        }
        let fildes = f.raw() as u32;
        let tag = io.tag as usize;
        if tag >= self.iocbs.len() {
            self.iocbs.resize(tag + 1, Iocb::default());
        }
        self.iocbs[tag] = if opcode <= IOCB_CMD_PWRITE {
            Iocb {
                data: u64::from(io.tag),
                rw_flags: self.rw_flags,
                opcode,
                fildes,
                buf: io.buf.as_ptr() as u64,
                nbytes: u64::from(io.len),
                offset: io.offset as i64,
                reqprio: io.ioprio as i16,
                flags: if io.ioprio != 0 { IOCB_FLAG_IOPRIO } else { 0 },
                ..Iocb::default()
            }
        } else {
            // The kernel rejects a sync carrying a buffer, length, offset or flags.
            Iocb {
                data: u64::from(io.tag),
                opcode,
                fildes,
                ..Iocb::default()
            }
        };
        self.queued.push(io.tag);
        Ok(Queued::Pending)
    }

    #[inline]
    fn commit(&mut self) -> Result<(), EngineError> {
        self.submit()
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        self.submit()?;
        let refused = self.refused.len();
        out.append(&mut self.refused);
        if self.inflight == 0 {
            return Ok(());
        }
        let want = min.saturating_sub(refused).min(self.inflight);
        let got = loop {
            // SAFETY: `events` has room for `len` events; a null timeout waits for `want`.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    want as libc::c_long,
                    self.events.len() as libc::c_long,
                    self.events.as_mut_ptr(),
                    std::ptr::null::<libc::timespec>(),
                )
            };
            if rc >= 0 {
                break rc as usize;
            }
            match last_errno() {
                libc::EINTR => continue,
                errno => return Err(EngineError::errno("io_getevents", "(AIO context)", errno)),
            }
        };
        self.inflight -= got;
        out.extend(self.events[..got].iter().map(|ev| Completion {
            tag: ev.data as u32,
            result: ev.res,
        }));
        Ok(())
    }
}

impl Drop for Libaio {
    fn drop(&mut self) {
        if self.ctx != 0 {
            // SAFETY: destroys the context we created; waits for in-flight IO to finish.
            unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    /// The kernel's `struct iocb` and `struct io_event` layouts (include/uapi/linux/aio_abi.h,
    /// little-endian).
    #[test]
    fn iocb_matches_the_kernel_abi() {
        let fields = [
            (offset_of!(Iocb, data), 0),
            (offset_of!(Iocb, key), 8),
            (offset_of!(Iocb, rw_flags), 12),
            (offset_of!(Iocb, opcode), 16),
            (offset_of!(Iocb, reqprio), 18),
            (offset_of!(Iocb, fildes), 20),
            (offset_of!(Iocb, buf), 24),
            (offset_of!(Iocb, nbytes), 32),
            (offset_of!(Iocb, offset), 40),
            (offset_of!(Iocb, reserved2), 48),
            (offset_of!(Iocb, flags), 56),
            (offset_of!(Iocb, resfd), 60),
            (offset_of!(IoEvent, data), 0),
            (offset_of!(IoEvent, obj), 8),
            (offset_of!(IoEvent, res), 16),
            (offset_of!(IoEvent, res2), 24),
        ];
        for (i, (got, want)) in fields.into_iter().enumerate() {
            assert_eq!(got, want, "field {i}");
        }
    }

    #[test]
    fn setup_errors_say_what_to_do() {
        let e = setup_error(libc::EAGAIN, 64);
        assert_eq!(e.kind, ErrorKind::Unsupported);
        assert!(e.message.contains("aio-max-nr"), "{e}");
        let e = setup_error(libc::ENOSYS, 64);
        assert!(e.message.contains("psync or io_uring"), "{e}");
    }
}
