//! The MPI side of a multi-host run (docs/multihost.md), on rsmpi over the system's MPI.
//!
//! Every collective is non-blocking and polled against a deadline
//! (`STORBENCH_MPI_TIMEOUT`, seconds): a rank that hangs or never arrives ends the run on
//! the others with one line instead of a wait without end. A rank that dies is also seen
//! by the launcher itself, which ends the job (`mpirun` sends the others SIGTERM, which
//! they take as a stop: a wait inside the run gives up at once, they remove what they
//! created, then hand on their results with a short grace and exit). After a failed
//! collective the ranks no longer agree on which collective comes next, so this process
//! issues no more of them and ends without `MPI_Finalize` (which could wait forever).
//!
//! Collectives run on 'static buffers, which are leaked: a few bytes per stonewall group
//! and the results once per run, in a process that ends soon after; MPI may still write
//! into those of a collective that timed out, so they could not be freed anyway.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use mpi::Threading;
use mpi::collective::{CommunicatorCollectives, Root};
use mpi::datatype::PartitionMut;
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};
use storbench_core::coord::{Coordinator, Point};
use storbench_model::hosts::{RankRun, merge};
use storbench_model::result::{Note, NoteLevel, RunResult};

use super::Combined;

/// Without `STORBENCH_MPI_TIMEOUT`: long enough for the slowest rank's lay-out and for
/// ranks whose groups end at different times, short enough that a hang ends.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// How long rank 0, asked to stop, still waits for the others' results after it removed its
/// files: after Ctrl-C (which mpirun forwards to every rank) they arrive together and rank 0
/// prints what finished.
const STOPPING_GRACE: Duration = Duration::from_millis(500);

/// How long a rank other than 0 whose run stopped or failed stays after it began handing on
/// its result (its files are removed by then). When a rank dies, Open MPI's mpirun sends the
/// others SIGCONT, SIGTERM a second later, and SIGKILL one more second later or as soon as
/// any of them exits, whichever is first: a rank that left at once would kill a slower one
/// amid its cleanup. Longer than [`STOPPING_GRACE`], so rank 0 prints first.
const STOPPED_LINGER: Duration = Duration::from_millis(800);

/// What a wait does once a stop was requested.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnStop {
    /// Gives up at once: the rank's files are still to be removed (a wait at the start or
    /// at an agreement inside the run), and no wait may come before their removal.
    GiveUp,
    /// Waits up to [`STOPPING_GRACE`] more: the results, gathered after the cleanup.
    Grace,
}

/// Polls of a collective that yield the CPU between them before the wait turns to sleeps.
const SPIN_POLLS: u32 = 100;
/// The sleep between later polls: a few of them per collective stay far below a
/// millisecond, and a rank waiting for a slower one costs no CPU.
const POLL_SLEEP: Duration = Duration::from_micros(200);

/// A collective failed: no further ones, no `MPI_Finalize`.
static BROKEN: AtomicBool = AtomicBool::new(false);

/// The facts of this process's rank, for the combining step.
static CURRENT: OnceLock<RankFacts> = OnceLock::new();

pub(super) struct RankFacts {
    rank: u32,
    size: u32,
    host: String,
    timeout: Duration,
    /// Every rank's clock minus rank 0's, ms, measured on joining.
    offsets_ms: Vec<f64>,
}

/// This process as a rank: MPI is finalized when it is dropped (unless a collective
/// failed).
pub struct Rank {
    universe: Option<mpi::environment::Universe>,
}

impl Drop for Rank {
    fn drop(&mut self) {
        if let Some(u) = self.universe.take()
            && BROKEN.load(Ordering::SeqCst)
        {
            // Finalizing after an unmatched collective could wait forever.
            std::mem::forget(u);
        }
    }
}

pub(super) fn current() -> Option<&'static RankFacts> {
    CURRENT.get()
}

/// The collective timeout from `STORBENCH_MPI_TIMEOUT` (seconds), or the default.
fn timeout_from_env() -> anyhow::Result<Duration> {
    match std::env::var("STORBENCH_MPI_TIMEOUT") {
        Err(_) => Ok(DEFAULT_TIMEOUT),
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(s) if s > 0.0 && s <= 86_400.0 => Ok(Duration::from_secs_f64(s)),
            _ => anyhow::bail!(
                "STORBENCH_MPI_TIMEOUT={v}: give the seconds a collective may wait, above 0 and at most 86400"
            ),
        },
    }
}

impl Rank {
    /// Initialises MPI, measures the clock offsets, and installs the coordinator the
    /// runner agrees through.
    pub fn join() -> anyhow::Result<Rank> {
        let timeout = timeout_from_env()?;
        prefer_plain_transport();
        let (universe, threading) = mpi::initialize_with_threading(Threading::Multiple)
            .context("MPI could not be initialised")?;
        // The runner agrees from a worker thread while the main thread waits: calls never
        // overlap, which Serialized allows.
        if threading < Threading::Serialized {
            anyhow::bail!(
                "this MPI library offers only {threading:?} threading; storbench needs at least Serialized"
            );
        }
        let world = universe.world();
        let rank = world.rank() as u32;
        let size = world.size() as u32;
        let host = mpi::environment::processor_name().unwrap_or_else(|_| "?".into());
        let offsets_ms =
            clock_offsets(&world, size, Instant::now() + timeout).map_err(anyhow::Error::msg)?;
        let facts = RankFacts {
            rank,
            size,
            host,
            timeout,
            offsets_ms,
        };
        let _ = CURRENT.set(facts);
        storbench_core::coord::install(Box::new(MpiCoordinator { rank, timeout }));
        if rank != 0 {
            silence_stdout();
        }
        Ok(Rank {
            universe: Some(universe),
        })
    }
}

/// MPI carries only storbench's coordination: a barrier and a few bytes per stonewall group,
/// the results once per run; the data goes through storbench's own clients. Open MPI's
/// fabric layers (UCX, and libfabric/PSM behind `pml cm`) spend 150–250 ms probing at
/// `MPI_Init` on every rank (docs/BENCHMARKS.md, "Multi-host coordination") and bring
/// nothing to such messages, so unless the user chose a PML (`mpirun --mca pml …` reaches
/// the ranks as `OMPI_MCA_pml`), storbench asks for ob1, which runs over TCP and shared
/// memory on every network. Other MPI libraries ignore the variable.
fn prefer_plain_transport() {
    if std::env::var_os(PML_VARIABLE).is_none() {
        // SAFETY: called from the main thread before MPI starts its threads and before
        // storbench starts any of its own, so nothing reads the environment concurrently.
        unsafe { std::env::set_var(PML_VARIABLE, "ob1") };
    }
}

/// Open MPI's environment form of its `pml` parameter.
const PML_VARIABLE: &str = "OMPI_MCA_pml";

/// Ranks other than 0 print nothing but errors (stderr).
fn silence_stdout() {
    // SAFETY: open and dup2 on a path and descriptors this process owns.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, 1);
            libc::close(null);
        }
    }
}

/// Waits for `req` until `deadline`, driving MPI's progress; on a timeout the request is
/// left to MPI (its buffers are 'static) and no collective follows.
fn wait<D: ?Sized>(
    mut req: Request<'static, D>,
    deadline: Instant,
    what: &str,
    on_stop: OnStop,
) -> Result<(), String> {
    if BROKEN.load(Ordering::SeqCst) {
        std::mem::forget(req);
        return Err(format!("{what}: an earlier collective failed"));
    }
    let mut polls = 0u32;
    let mut deadline = deadline;
    let mut stopping = false;
    loop {
        match req.test() {
            Ok(_) => return Ok(()),
            Err(r) => req = r,
        }
        // Stopped by a signal (Ctrl-C forwarded by mpirun, or the SIGTERM with which it ends
        // a job whose rank died): the others are stopping too, or gone.
        if !stopping && storbench_core::stop::requested() {
            stopping = true;
            deadline = match on_stop {
                OnStop::GiveUp => Instant::now(),
                OnStop::Grace => deadline.min(Instant::now() + STOPPING_GRACE),
            };
        }
        if Instant::now() >= deadline {
            std::mem::forget(req);
            BROKEN.store(true, Ordering::SeqCst);
            return Err(if stopping {
                format!("{what}: stopped by a signal while waiting for the other ranks")
            } else {
                format!(
                    "{what}: another rank did not answer within the timeout (STORBENCH_MPI_TIMEOUT); the run ends on this rank"
                )
            });
        }
        // Spin briefly (a barrier everyone reaches together ends in microseconds), then
        // poll every POLL_SLEEP: MPI's non-blocking collectives advance only inside
        // `test`, so each poll also moves the others' messages on. Spinning longer took
        // CPU from the ranks still working when there are more ranks than CPUs.
        polls += 1;
        if polls < SPIN_POLLS {
            std::thread::yield_now();
        } else {
            std::thread::sleep(POLL_SLEEP);
        }
    }
}

fn leak<T>(v: T) -> &'static mut T {
    Box::leak(Box::new(v))
}

fn unix_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// Every rank reads its clock on leaving one barrier; the differences to rank 0's are
/// the offsets (accurate to how far apart the ranks leave it: microseconds on a LAN).
fn clock_offsets(
    world: &SimpleCommunicator,
    size: u32,
    deadline: Instant,
) -> Result<Vec<f64>, String> {
    wait(
        world.immediate_barrier(),
        deadline,
        "the clock check at start",
        OnStop::GiveUp,
    )?;
    let now: &'static i64 = leak(unix_ns());
    let all: &'static mut Vec<i64> = leak(vec![0i64; size as usize]);
    let all_ptr: *const Vec<i64> = all;
    let req = world.immediate_all_gather_into(StaticScope, now, &mut all[..]);
    wait(req, deadline, "the clock check at start", OnStop::GiveUp)?;
    // SAFETY: the gather completed; MPI no longer touches the buffer.
    let all = unsafe { &*all_ptr };
    Ok(all.iter().map(|t| (t - all[0]) as f64 / 1e6).collect())
}

struct MpiCoordinator {
    rank: u32,
    timeout: Duration,
}

impl Coordinator for MpiCoordinator {
    fn agree(&self, at: Point, ready: bool) -> Result<(), String> {
        let world = SimpleCommunicator::world();
        let size = world.size() as usize;
        let mine: &'static i32 = leak(i32::from(ready));
        let all: &'static mut Vec<i32> = leak(vec![0i32; size]);
        let all_ptr: *const Vec<i32> = all;
        let req = world.immediate_all_gather_into(StaticScope, mine, &mut all[..]);
        wait(
            req,
            Instant::now() + self.timeout,
            at.name(),
            OnStop::GiveUp,
        )?;
        // SAFETY: the gather completed; MPI no longer touches the buffer.
        let all = unsafe { &*all_ptr };
        let not_ready: Vec<String> = (0..size)
            .filter(|&r| all[r] == 0)
            .map(|r| r.to_string())
            .collect();
        if not_ready.is_empty() {
            return Ok(());
        }
        Err(format!(
            "rank {} could not go on at {}; the run ends on every rank",
            not_ready.join(", "),
            at.name()
        ))
    }

    fn rank(&self) -> u32 {
        self.rank
    }
}

impl RankFacts {
    /// Sends this rank's run (or its error) to rank 0; rank 0 gets every rank's and
    /// merges them.
    pub(super) fn combine(&self, measured: anyhow::Result<RunResult>) -> anyhow::Result<Combined> {
        let own = RankRun {
            rank: self.rank,
            host: self.host.clone(),
            clock_offset_ms: self
                .offsets_ms
                .get(self.rank as usize)
                .copied()
                .unwrap_or(0.0),
            result: measured
                .as_ref()
                .map(Clone::clone)
                .map_err(|e| storbench_model::redact::text(&format!("{e:#}")).into_owned()),
        };
        let bytes = serde_json::to_vec(&own).context("the rank's result could not be encoded")?;
        let handing_on = Instant::now();
        let gathered = gather(&bytes, self.size, handing_on + self.timeout);
        let ended_early = measured.is_err() || storbench_core::stop::requested();
        if self.rank != 0 {
            // Sending completes here whether or not the others are done: stay a while.
            if ended_early {
                linger_until(handing_on + STOPPED_LINGER);
            }
            return match (measured, gathered) {
                (Err(e), _) => Err(e),
                (Ok(_), Err(e)) => anyhow::bail!("{e}"),
                (Ok(run), Ok(_)) => Ok(Combined::Sent(crate::running::exit_code(&run))),
            };
        }
        let ranks = match gathered {
            Ok(all) => all,
            // The others' results are lost: this rank's own run is still reported.
            Err(e) => {
                // Every rank that sent had removed its files; one that did not may still
                // be at it: stay a while, as the others do (but shorter, to print first).
                if ended_early {
                    linger_until(handing_on + STOPPING_GRACE);
                }
                let mut run = measured?;
                run.notes.push(Note {
                    level: NoteLevel::Warning,
                    code: "warn.ranks".into(),
                    message: format!("only rank 0's result: {e}"),
                });
                return Ok(Combined::Here(Box::new(run)));
            }
        };
        let mut runs = Vec::with_capacity(ranks.len());
        for (r, b) in ranks.iter().enumerate() {
            let mut one: RankRun = serde_json::from_slice(b)
                .with_context(|| format!("rank {r} sent a result this storbench cannot read (the same version must run on every host)"))?;
            one.clock_offset_ms = self.offsets_ms.get(r).copied().unwrap_or(0.0);
            runs.push(one);
        }
        merge("mpi", runs)
            .map(|run| Combined::Here(Box::new(run)))
            .map_err(anyhow::Error::msg)
    }
}

/// Sleeps until `until` (no MPI call: the collectives may have failed). A rank whose run
/// ended early stays until then so that its exit cannot make mpirun kill a slower rank
/// before that one has removed its files (see [`STOPPED_LINGER`]).
fn linger_until(until: Instant) {
    std::thread::sleep(until.saturating_duration_since(Instant::now()));
}

/// Every rank's bytes on rank 0 (None elsewhere), with the deadline on both steps.
fn gather(bytes: &[u8], size: u32, deadline: Instant) -> Result<Vec<Vec<u8>>, String> {
    let world = SimpleCommunicator::world();
    let root = world.process_at_rank(0);
    let what = "gathering the results";
    let len: &'static i32 = leak(i32::try_from(bytes.len()).map_err(|_| "a result over 2 GiB")?);
    let data: &'static [u8] = Box::leak(bytes.to_vec().into_boxed_slice());
    if world.rank() != 0 {
        let len_sent = root.immediate_gather_into(StaticScope, len);
        wait(len_sent, deadline, what, OnStop::Grace)?;
        wait(
            root.immediate_gather_varcount_into(StaticScope, data),
            deadline,
            what,
            OnStop::Grace,
        )?;
        return Ok(Vec::new());
    }
    let lens: &'static mut Vec<i32> = leak(vec![0i32; size as usize]);
    let lens_ptr: *const Vec<i32> = lens;
    wait(
        root.immediate_gather_into_root(StaticScope, len, &mut lens[..]),
        deadline,
        what,
        OnStop::Grace,
    )?;
    // SAFETY: the gather completed; MPI no longer touches the buffer.
    let lens: Vec<i32> = unsafe { (*lens_ptr).clone() };
    let displs: Vec<i32> = lens
        .iter()
        .scan(0i32, |at, &l| {
            let d = *at;
            *at += l;
            Some(d)
        })
        .collect();
    let total: usize = lens.iter().map(|&l| l as usize).sum();
    let buf: &'static mut Vec<u8> = leak(vec![0u8; total]);
    let buf_ptr: *const Vec<u8> = buf;
    let part = leak(PartitionMut::new(
        &mut buf[..],
        lens.clone(),
        displs.clone(),
    ));
    wait(
        root.immediate_gather_varcount_into_root(StaticScope, data, part),
        deadline,
        what,
        OnStop::Grace,
    )?;
    // SAFETY: the gather completed; MPI no longer touches the buffer.
    let buf = unsafe { &*buf_ptr };
    Ok(lens
        .iter()
        .zip(&displs)
        .map(|(&l, &d)| buf[d as usize..(d + l) as usize].to_vec())
        .collect())
}
