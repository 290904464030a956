//! The validated workload: what the runner executes. Produced from fio argv / job files by
//! `resolve`, or directly by presets (quick, bonnie lay-out). Every field is typed and
//! already checked; the runner never parses strings.

use std::time::Duration;

/// fio's data-direction patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwKind {
    Read,
    Write,
    Trim,
    RandRead,
    RandWrite,
    RandTrim,
    /// Sequential mixed reads and writes (`rw`, `readwrite`).
    ReadWrite,
    RandRw,
    /// Sequential trim then write of the same blocks.
    TrimWrite,
    RandTrimWrite,
}

impl RwKind {
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwKind::RandRead
                | RwKind::RandWrite
                | RwKind::RandTrim
                | RwKind::RandRw
                | RwKind::RandTrimWrite
        )
    }

    /// Whether the workload issues writes (and so needs the data-loss checks).
    pub fn writes(self) -> bool {
        !matches!(self, RwKind::Read | RwKind::RandRead)
    }

    /// Whether it trims (discards data: also destructive).
    pub fn trims(self) -> bool {
        matches!(
            self,
            RwKind::Trim | RwKind::RandTrim | RwKind::TrimWrite | RwKind::RandTrimWrite
        )
    }

    pub fn reads(self) -> bool {
        matches!(
            self,
            RwKind::Read | RwKind::RandRead | RwKind::ReadWrite | RwKind::RandRw
        )
    }

    /// fio's spelling.
    pub fn fio_name(self) -> &'static str {
        match self {
            RwKind::Read => "read",
            RwKind::Write => "write",
            RwKind::Trim => "trim",
            RwKind::RandRead => "randread",
            RwKind::RandWrite => "randwrite",
            RwKind::RandTrim => "randtrim",
            RwKind::ReadWrite => "rw",
            RwKind::RandRw => "randrw",
            RwKind::TrimWrite => "trimwrite",
            RwKind::RandTrimWrite => "randtrimwrite",
        }
    }
}

/// `rw=` with its optional `:N` suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rw {
    pub kind: RwKind,
    /// Random: a new random offset every `nr` IOs. Sequential: bytes of hole added after
    /// each IO (fio adds the suffix value as an offset increment).
    pub nr: u64,
    /// The suffix as given was a size (sequential hole) rather than a count.
    pub hole: u64,
    /// A negative size suffix (`rw=read:-8k`): fio's backward sequential IO, each IO
    /// starting this far before the end of the previous one (wrapping to the region's end).
    pub back: u64,
}

/// Block sizes for one data direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockSize {
    Fixed(u64),
    /// Uniform in [min, max], in multiples of min (fio's bsrange with `bs_unaligned=0`).
    Range {
        min: u64,
        max: u64,
    },
    /// Weighted sizes (fio's bssplit); weights are percentages summing to 100.
    Split(Vec<(u64, u32)>),
}

impl BlockSize {
    pub fn min(&self) -> u64 {
        match self {
            BlockSize::Fixed(b) => *b,
            BlockSize::Range { min, .. } => *min,
            BlockSize::Split(v) => v.iter().map(|(b, _)| *b).min().unwrap_or(0),
        }
    }

    pub fn max(&self) -> u64 {
        match self {
            BlockSize::Fixed(b) => *b,
            BlockSize::Range { max, .. } => *max,
            BlockSize::Split(v) => v.iter().map(|(b, _)| *b).max().unwrap_or(0),
        }
    }
}

/// A size given as bytes or as a percentage of the file or device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SizeSpec {
    Bytes(u64),
    Percent(f64),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RandomDistribution {
    Random,
    Zipf(f64),
    Pareto(f64),
    /// Gaussian with the given deviation as a percentage of the range.
    Normal(f64),
    /// fio's `zoned`: per direction, zones sized in percent of the region
    /// ([`JobSpec::zones`]).
    Zoned,
    /// fio's `zoned_abs`: per direction, zones sized in bytes from the region's start.
    ZonedAbs,
}

/// One zone of fio's `zoned`/`zoned_abs` distribution: `access` percent of a direction's
/// random offsets fall in it, uniformly. Zones follow one another from the region's start;
/// `size` is a percentage of the region (`zoned`) or bytes (`zoned_abs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    pub access: u8,
    pub size: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RandomGenerator {
    Tausworthe,
    Lfsr,
    Tausworthe64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileService {
    RoundRobin,
    Sequential,
    Random,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateProcess {
    Linear,
    Poisson,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallocate {
    None,
    Native,
    Posix,
    Keep,
    Truncate,
}

/// What a job tells the kernel about its access pattern (fio's `fadvise_hint`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FadviseHint {
    /// Say nothing: the kernel's readahead heuristics apply.
    None,
    /// Random for rand* workloads, sequential otherwise (fio's default).
    Pattern,
    Random,
    Sequential,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnifiedRw {
    None,
    Mixed,
    Both,
}

/// What goes into write buffers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferSpec {
    pub zero_buffers: bool,
    pub refill_buffers: bool,
    pub scramble_buffers: bool,
    /// 0 = incompressible random data.
    pub compress_percentage: u32,
    pub compress_chunk: u64,
    /// Fixed pattern used instead of zeros in the compressible part.
    pub pattern: Vec<u8>,
    pub dedupe_percentage: u32,
    /// Where a deduplicated write's data comes from.
    pub dedupe_mode: DedupeMode,
    /// fio's `dedupe_working_set_percentage`: share of `size` whose first unique buffers
    /// the working set holds.
    pub dedupe_working_set_percentage: u32,
    /// The working set's buffers, `size * percentage / 100 / bs` (set when the job is
    /// finished, for `working_set`).
    pub dedupe_working_set_pages: u64,
    /// `dedupe_global`: the working set spreads over every clone of the batch that has it.
    pub dedupe_global: bool,
}

/// fio's `zonemode`, `zonesize`, `zonerange` and `zoneskip`: with `Strided`, IO stays in a
/// zone of `range` bytes from the zone's start until `size` bytes were transferred, then
/// moves `range + skip` bytes on, back to the region's start past the file's end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Zoning {
    pub mode: ZoneMode,
    pub size: u64,
    pub range: u64,
    pub skip: u64,
}

/// fio's `zonemode` (`zbd`, zoned block devices, is refused where it is read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZoneMode {
    #[default]
    None,
    Strided,
}

/// fio's `dedupe_mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DedupeMode {
    /// A deduplicated write repeats the previous unique one.
    #[default]
    Repeat,
    /// A deduplicated write repeats one of the job's first unique writes, drawn uniformly.
    WorkingSet,
}

impl Default for BufferSpec {
    fn default() -> Self {
        BufferSpec {
            zero_buffers: false,
            refill_buffers: false,
            scramble_buffers: true,
            compress_percentage: 0,
            compress_chunk: 512,
            pattern: Vec::new(),
            dedupe_percentage: 0,
            dedupe_mode: DedupeMode::Repeat,
            dedupe_working_set_percentage: 5,
            dedupe_working_set_pages: 0,
            dedupe_global: false,
        }
    }
}

/// fio's `verify=` checksum types. The discriminants are fio 3.33's `verify_type` numbers,
/// which every block's header stores on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum VerifyKind {
    None = 0,
    /// `meta`: the header alone (and `verify_pattern` when given).
    Meta = 1,
    Md5 = 2,
    Crc64 = 3,
    Crc32 = 4,
    Crc32c = 5,
    Crc32cIntel = 6,
    Crc16 = 7,
    Crc7 = 8,
    Sha256 = 9,
    Sha512 = 10,
    Sha3_224 = 11,
    Sha3_256 = 12,
    Sha3_384 = 13,
    Sha3_512 = 14,
    Xxhash = 15,
    Sha1 = 16,
    /// A header, then `verify_pattern` (fio's choice when only `verify_pattern` is given).
    PatternHdr = 17,
    /// `pattern`: the pattern alone, no header.
    Pattern = 18,
    /// `null`: pretend.
    Null = 19,
}

impl VerifyKind {
    /// fio's `verify=` values, with what they choose.
    pub const NAMES: &[(&str, VerifyKind)] = &[
        ("0", VerifyKind::None),
        ("md5", VerifyKind::Md5),
        ("crc64", VerifyKind::Crc64),
        ("crc32", VerifyKind::Crc32),
        ("crc32c-intel", VerifyKind::Crc32cIntel),
        ("crc32c", VerifyKind::Crc32c),
        ("crc16", VerifyKind::Crc16),
        ("crc7", VerifyKind::Crc7),
        ("sha1", VerifyKind::Sha1),
        ("sha256", VerifyKind::Sha256),
        ("sha512", VerifyKind::Sha512),
        ("sha3-224", VerifyKind::Sha3_224),
        ("sha3-256", VerifyKind::Sha3_256),
        ("sha3-384", VerifyKind::Sha3_384),
        ("sha3-512", VerifyKind::Sha3_512),
        ("xxhash", VerifyKind::Xxhash),
        ("meta", VerifyKind::Meta),
        ("pattern", VerifyKind::Pattern),
        ("null", VerifyKind::Null),
    ];

    /// The kind fio stores as `id` in a header.
    pub fn from_id(id: u8) -> Option<VerifyKind> {
        Self::NAMES
            .iter()
            .map(|(_, k)| *k)
            .chain([VerifyKind::PatternHdr])
            .find(|k| *k as u8 == id)
    }

    /// Whether blocks carry fio's verify header.
    pub fn has_header(self) -> bool {
        !matches!(
            self,
            VerifyKind::None | VerifyKind::Pattern | VerifyKind::Null
        )
    }

    /// Bytes of the checksum area that follows the 40-byte header (fio's `vhdr_*` sizes).
    pub fn digest_len(self) -> usize {
        match self {
            VerifyKind::Md5 => 16,
            VerifyKind::Crc64 => 8,
            VerifyKind::Crc32 | VerifyKind::Crc32c | VerifyKind::Crc32cIntel => 4,
            VerifyKind::Crc16 => 2,
            VerifyKind::Crc7 => 1,
            VerifyKind::Sha256 => 64,
            VerifyKind::Sha512 => 128,
            VerifyKind::Sha3_224 => 28,
            VerifyKind::Sha3_256 => 32,
            VerifyKind::Sha3_384 => 48,
            VerifyKind::Sha3_512 => 64,
            VerifyKind::Xxhash => 4,
            VerifyKind::Sha1 => 20,
            _ => 0,
        }
    }

    /// Header plus checksum area: the bytes at the start of every verify interval.
    pub fn header_len(self) -> usize {
        if self.has_header() {
            40 + self.digest_len()
        } else {
            0
        }
    }
}

/// fio's data verification of a job (`verify` and its options), after fio's fix-ups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifySpec {
    pub kind: VerifyKind,
    /// `do_verify`: read written blocks back after the writes.
    pub do_verify: bool,
    /// Bytes covered by one header (`verify_interval`; the write block size by default).
    pub interval: u64,
    /// `verify_offset`: the header is swapped with the bytes this far into the interval.
    pub offset: u64,
    /// `verify_pattern` bytes; `%o` places are in `pattern_offsets`.
    pub pattern: Vec<u8>,
    /// Where `%o` puts the IO's offset (8 bytes, little-endian) into the pattern.
    pub pattern_offsets: Vec<usize>,
    /// `verify_fatal`.
    pub fatal: bool,
    /// `verify_dump`: a block that fails is written to files beside the run (fio's names).
    pub dump: bool,
    /// `verify_only`: a write job reads and checks instead of writing.
    pub only: bool,
    /// `verify_backlog`: verify written blocks during the writes, every this many (0: off).
    pub backlog: u64,
    /// `verify_backlog_batch`: blocks verified each time (0: `backlog`).
    pub backlog_batch: u32,
    /// `verify_state_save`: a verifying write job leaves fio's state file behind (on by
    /// default for fio jobs, as in fio; off for storbench's presets).
    pub state_save: bool,
    /// `verify_state_load`: the verify reads that state file and stops where the
    /// writes stopped.
    pub state_load: bool,
    /// fio's verify of trims: `trim_percentage` of the logged writes are trimmed once
    /// `trim_backlog` of them wait, `trim_backlog_batch` at a time, and their read back
    /// must be zeros when `trim_verify_zero` (else they are not checked).
    pub trim: TrimVerify,
    /// `experimental_verify`: storbench checks the same blocks from its log either way;
    /// kept to refuse what fio does differently with it.
    pub experimental: bool,
}

/// fio's `trim_percentage`, `trim_backlog`, `trim_backlog_batch` and `trim_verify_zero`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrimVerify {
    /// Percentage of the written blocks chosen to be trimmed (0: none).
    pub percentage: u32,
    /// Trim the chosen blocks each time this many written blocks wait (0: never).
    pub backlog: u64,
    /// Blocks trimmed each time (0: `backlog`).
    pub batch: u32,
    /// A trimmed block must read back as zeros (fio's `trim_verify_zero`, on by default).
    pub zero: bool,
}

impl Default for TrimVerify {
    fn default() -> Self {
        TrimVerify {
            percentage: 0,
            backlog: 0,
            batch: 0,
            zero: true,
        }
    }
}

impl Default for VerifySpec {
    fn default() -> Self {
        VerifySpec {
            kind: VerifyKind::None,
            do_verify: true,
            interval: 0,
            offset: 0,
            pattern: Vec::new(),
            pattern_offsets: Vec::new(),
            fatal: false,
            dump: false,
            only: false,
            backlog: 0,
            backlog_batch: 0,
            state_save: false,
            state_load: false,
            trim: TrimVerify::default(),
            experimental: false,
        }
    }
}

impl VerifySpec {
    /// Whether blocks are written with, or reads checked against, verify data.
    pub fn active(&self) -> bool {
        !matches!(self.kind, VerifyKind::None | VerifyKind::Null)
    }
}

pub use storbench_model::iolog::LogSpec;

/// One job section, validated. `numjobs` clones of it run as threads.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    pub name: String,
    pub description: Option<String>,
    /// Reporting group (counted from 0 across the whole run).
    pub group: u32,
    /// `cpus_allowed`/`cpumask`: the CPUs the clones may run on (None: any).
    pub cpus: Option<Vec<u32>>,
    /// `cpus_allowed_policy=split`: one CPU of `cpus` per clone, in turn.
    pub cpus_split: bool,
    /// fio's `nice`: added to each clone's nice value as it starts (-20 to 19; 0 leaves it).
    pub nice: i32,
    /// fio's `prioclass` (0 to 3: none, real-time, best-effort, idle) and `prio` (0 to 7):
    /// each clone's IO priority, set as it starts when either is given.
    pub prioclass: Option<u8>,
    pub prio: Option<u8>,
    /// fio's `numa_cpu_nodes` (empty: all nodes) and `numa_mem_policy`.
    pub numa_cpu_nodes: Option<Vec<u32>>,
    pub numa_mem: Option<NumaMem>,
    /// fio's flow, wait_for, exec_prerun/exec_postrun and io_submit_mode.
    pub coord: Coordination,
    /// Wait for all earlier jobs before starting.
    pub stonewall: bool,
    /// fio's `thread`: clones run as threads. Without it fio forks a process per clone;
    /// storbench does so only where a process of its own changes the figures (posixaio).
    pub thread: bool,
    /// fio's `exitall`: when this job ends, the jobs running with it are ended too.
    pub exitall: bool,
    /// fio's `exitall_on_error`: when this job fails, the jobs running with it are ended.
    pub exitall_on_error: bool,
    /// fio's `continue_on_error`, `ignore_error`, `error_dump` and `exit_what`.
    pub errors: crate::errors::ErrorPolicy,
    pub numjobs: u32,

    // --- files ---
    /// Explicit file names (fio's `filename`, split on unescaped `:`), parsed where they
    /// are read; empty: generated.
    pub filenames: Vec<crate::target::Target>,
    /// Directories for generated names (fio's `directory`, split on `:`), parsed where they
    /// are read; the nfs engine's `nfs_url` when the job names none.
    pub directories: Vec<crate::target::Target>,
    pub filename_format: String,
    pub nrfiles: u32,
    pub size: Option<SizeSpec>,
    pub filesize: Option<(u64, u64)>,
    pub file_service: FileService,
    pub offset: SizeSpec,
    /// fio's offset_increment: bytes, or a percentage of the file's size.
    pub offset_increment: SizeSpec,

    // --- workload ---
    pub rw: Rw,
    /// Percent of mixed IOs that are reads.
    pub rwmixread: u32,
    /// read, write, trim.
    pub bs: [BlockSize; 3],
    /// fio's `blockalign` per direction: random offsets are multiples of it (None: the
    /// direction's smallest block size).
    pub blockalign: [Option<u64>; 3],
    pub ioengine: String,
    /// Engine-specific options (`hipri`, `sqthread_poll`, `registerfiles`, `fixedbufs`,
    /// `nfs_url`, …), parsed by the option table; the catalogue says whose each is.
    pub engine_options: crate::EngineOptions,
    pub iodepth: u32,
    pub iodepth_batch_submit: u32,
    pub iodepth_batch_complete_min: u32,
    pub iodepth_batch_complete_max: u32,
    /// fio's `iodepth_low`: once the queue is full it drains to this depth before it is
    /// filled again (1 to iodepth; iodepth, or 0, keeps it full).
    pub iodepth_low: u32,
    pub direct: bool,
    /// O_SYNC writes (fio's `sync=1`).
    pub sync: bool,

    // --- how long ---
    pub runtime: Option<Duration>,
    pub time_based: bool,
    pub ramp_time: Duration,
    /// Start delay: a fixed value, or a range picked per clone.
    pub startdelay: (Duration, Duration),
    pub loops: u32,
    /// Rounds of the whole job set (`numruns`): the run is measured this many times and
    /// kept as one run with its rounds; the job set uses the largest value given.
    pub numruns: u32,
    pub number_ios: Option<u64>,
    /// fio's io_size: bytes to do per loop, over the `size` region (wrapping when larger).
    pub io_size: Option<u64>,
    /// fio's steady-state detection (`steadystate`, `ss_dur`, `ss_ramp`); off when its
    /// duration is 0.
    pub steadystate: SteadyState,
    /// fio's latency profiling: the queue depth is searched for the deepest that keeps
    /// `latency_percentile` percent of IOs under the target over each window.
    pub latency: LatencyTarget,
    /// fio's `max_latency` per direction, µs: an IO slower ends the job with ETIMEDOUT.
    pub max_latency_us: [Option<u64>; 3],
    /// fio's `thinktime` family: pauses between IOs, as an application that computes
    /// between its reads and writes.
    pub think: ThinkTime,

    // --- syncing ---
    pub fsync: u32,
    pub fdatasync: u32,
    pub end_fsync: bool,
    pub fsync_on_close: bool,

    // --- rate ---
    /// bytes/s per direction.
    pub rate: [Option<u64>; 3],
    pub rate_iops: [Option<u64>; 3],
    pub rate_process: RateProcess,
    /// fio's `rate_min` (bytes/s) and `rate_iops_min` per direction: a direction slower
    /// over a one-second cycle (after two seconds of settling) ends the job with EIO.
    pub rate_min: [Option<u64>; 3],
    pub rate_iops_min: [Option<u64>; 3],

    // --- randomness ---
    pub norandommap: bool,
    pub randrepeat: bool,
    pub randseed: u64,
    pub random_generator: RandomGenerator,
    pub random_distribution: RandomDistribution,
    /// The zones of a `zoned`/`zoned_abs` distribution, read, write, trim (empty: uniform).
    pub zones: [Vec<Zone>; 3],
    /// fio's `zonemode=strided` over ordinary files.
    pub zoning: Zoning,
    /// Percent of random offsets per direction (100 = fully random for rand* modes).
    pub percentage_random: [u32; 3],

    // --- files lifecycle ---
    pub invalidate: bool,
    pub create_on_open: bool,
    /// fio's `create_only`: lay the files out and end the job without IO.
    pub create_only: bool,
    /// fio's `fill_device`/`fill_fs`: write until the storage is full; ENOSPC or EDQUOT
    /// ends the job without an error.
    pub fill_device: bool,
    /// fio's `pre_read`: the files are read into the page cache before the job's IO.
    pub pre_read: bool,
    /// fio's `openfiles`: at most this many of a clone's files open at once (None: all).
    pub openfiles: Option<u32>,
    /// fio's `unique_filename`: a multi-host run's generated names carry the rank.
    pub unique_filename: bool,
    /// The `filename=` names are storbench's own choice (quick's test file), not the user's:
    /// they get the rules of generated names (links never followed, created exclusively).
    pub own_filenames: bool,
    pub overwrite: bool,
    pub unlink: bool,
    pub fallocate: Fallocate,
    pub fadvise_hint: FadviseHint,
    pub buffers: BufferSpec,
    /// fio's data verification (`verify=` and its options).
    pub verify: VerifySpec,

    // --- measurement and reporting ---
    pub group_reporting: bool,
    pub disable_lat: bool,
    pub disable_clat: bool,
    pub disable_slat: bool,
    pub disable_bw: bool,
    pub unified_rw: UnifiedRw,
    pub percentile_list: Vec<f64>,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    pub significant_figures: u32,
    pub kb_base: u32,
    pub unit_base: u32,
    pub bwavgtime_ms: u64,
    pub iopsavgtime_ms: u64,
    /// fio's averaged log files (write_bw_log, write_iops_log, write_lat_log).
    pub logs: LogSpec,

    /// The job's own options as given, in order (fio's JSON `job options`).
    pub options: Vec<(String, String)>,
    /// Write to block devices or LUNs even if they hold data (explicit user override).
    pub allow_destructive: bool,
}

impl JobSpec {
    /// Whether the job's file names are storbench's (fio's generated `jobname.N.M`, or a
    /// `filename=` storbench chose): a link found at one is never followed, and a new one is
    /// created exclusively.
    pub fn names_generated(&self) -> bool {
        self.filenames.is_empty() || self.own_filenames
    }

    /// What the job's log files depend on, for the writers of fio's logs.
    pub fn log_job(&self) -> storbench_model::iolog::LogJob<'_> {
        storbench_model::iolog::LogJob {
            logs: &self.logs,
            disable_lat: self.disable_lat,
            disable_slat: self.disable_slat,
            disable_clat: self.disable_clat,
            disable_bw: self.disable_bw,
        }
    }

    /// Files the job's engine writes besides the job's own: e4defrag's donor, under the
    /// first `directory=` as fio puts it. The runner creates each before the job (one that
    /// exists and was not made by this run is refused, as the engine rewrites it) and
    /// removes it after the run. With the option naming it, for messages.
    pub fn scratch_files(&self) -> Vec<(crate::target::Target, &'static str)> {
        let Some(name) = self.engine_options.donorname.as_deref() else {
            return Vec::new();
        };
        let donor = match self.directories.first() {
            Some(dir) if dir.protocol().is_none() => {
                crate::target::Target::local_join(dir.expose(), name)
            }
            _ => crate::target::Target::classify(name),
        };
        vec![(donor, "donorname")]
    }

    /// Whether the job's engine does no IO on any file (cpuio, exec): no file is planned,
    /// laid out or opened, and the worker runs its pseudo-IO loop instead of the IO loop.
    pub fn has_no_file(&self) -> bool {
        crate::catalogue::find(&self.ioengine).is_some_and(|e| e.has_no_file())
    }

    /// Whether fio keeps a random map of the job's files (its `file_randommap`): a random
    /// job with the map on, fio's default generator and a uniform (or zoned)
    /// distribution. fio then logs writes for verification in write order; otherwise in
    /// offset order, a block written again replacing the earlier write.
    pub fn random_map(&self) -> bool {
        self.rw.kind.is_random()
            && !self.norandommap
            && self.random_generator != RandomGenerator::Lfsr
            && matches!(
                self.random_distribution,
                RandomDistribution::Random
                    | RandomDistribution::Zoned
                    | RandomDistribution::ZonedAbs
            )
    }

    /// The CPUs of the clone that is the run's thread `thread` (from 0, over all jobs'
    /// clones in order) may run on (None: any): all of `cpus`, or with `split` the one its
    /// number picks in turn, as fio's `fio_cpus_split`.
    pub fn cpus_for_thread(&self, thread: u32) -> Option<Vec<u32>> {
        let cpus = self.cpus.as_ref()?;
        Some(match cpus.len() {
            n if self.cpus_split && n > 0 => vec![cpus[thread as usize % n]],
            _ => cpus.clone(),
        })
    }

    /// A job with fio's defaults for everything; presets and tests start from this.
    pub fn new(name: impl Into<String>) -> Self {
        JobSpec {
            name: name.into(),
            description: None,
            group: 0,
            cpus: None,
            cpus_split: false,
            nice: 0,
            prioclass: None,
            prio: None,
            numa_cpu_nodes: None,
            numa_mem: None,
            coord: Coordination::default(),
            stonewall: false,
            thread: false,
            exitall: false,
            exitall_on_error: false,
            errors: crate::errors::ErrorPolicy::default(),
            numjobs: 1,
            filenames: Vec::new(),
            directories: Vec::new(),
            filename_format: "$jobname.$jobnum.$filenum".into(),
            nrfiles: 1,
            size: None,
            filesize: None,
            file_service: FileService::RoundRobin,
            offset: SizeSpec::Bytes(0),
            offset_increment: SizeSpec::Bytes(0),
            rw: Rw {
                kind: RwKind::Read,
                nr: 1,
                hole: 0,
                back: 0,
            },
            rwmixread: 50,
            bs: [
                BlockSize::Fixed(4096),
                BlockSize::Fixed(4096),
                BlockSize::Fixed(4096),
            ],
            blockalign: [None; 3],
            ioengine: crate::catalogue::DEFAULT_ENGINE.into(),
            engine_options: Default::default(),
            iodepth: 1,
            iodepth_batch_submit: 1,
            iodepth_batch_complete_min: 1,
            iodepth_low: 0,
            iodepth_batch_complete_max: 0,
            direct: false,
            sync: false,
            runtime: None,
            steadystate: SteadyState::default(),
            latency: LatencyTarget::default(),
            max_latency_us: [None; 3],
            think: ThinkTime::default(),
            time_based: false,
            ramp_time: Duration::ZERO,
            startdelay: (Duration::ZERO, Duration::ZERO),
            loops: 1,
            numruns: 1,
            number_ios: None,
            io_size: None,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            fsync_on_close: false,
            rate: [None; 3],
            rate_iops: [None; 3],
            rate_process: RateProcess::Linear,
            rate_min: [None; 3],
            rate_iops_min: [None; 3],
            norandommap: false,
            randrepeat: true,
            randseed: 0x89,
            random_generator: RandomGenerator::Tausworthe,
            random_distribution: RandomDistribution::Random,
            zones: Default::default(),
            zoning: Zoning::default(),
            percentage_random: [100; 3],
            invalidate: true,
            create_on_open: false,
            create_only: false,
            fill_device: false,
            pre_read: false,
            openfiles: None,
            unique_filename: true,
            own_filenames: false,
            overwrite: false,
            unlink: false,
            fallocate: Fallocate::Native,
            fadvise_hint: FadviseHint::Pattern,
            buffers: BufferSpec::default(),
            verify: VerifySpec::default(),
            group_reporting: false,
            disable_lat: false,
            disable_clat: false,
            disable_slat: false,
            disable_bw: false,
            unified_rw: UnifiedRw::None,
            percentile_list: vec![
                1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5,
                99.9, 99.95, 99.99,
            ],
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            significant_figures: 4,
            kb_base: 1024,
            unit_base: 8,
            bwavgtime_ms: 500,
            iopsavgtime_ms: 500,
            logs: LogSpec::default(),
            options: Vec::new(),
            allow_destructive: false,
        }
    }
}

/// A whole parsed invocation: jobs in order, plus what the report needs globally.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub jobs: Vec<JobSpec>,
    /// fio's JSON `global options`, in order: the command-line options outside any job and
    /// the `[global]` sections of the last job file (fio starts each job file afresh).
    pub global_options: Vec<(String, String)>,
    /// Job files read, as (path, contents).
    pub job_files: Vec<(String, String)>,
}

/// fio's `numa_mem_policy` modes (Linux's MPOL_* in this order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumaMode {
    Default = 0,
    Prefer = 1,
    Bind = 2,
    Interleave = 3,
    Local = 4,
}

/// A memory policy and its nodes (None: all the host's nodes, or none needed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaMem {
    pub mode: NumaMode,
    pub nodes: Option<Vec<u32>>,
}

/// How a job goes along with other jobs and programs (fio's names).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Coordination {
    /// `flow`: the job's weight in its `flow_id`'s shared counter (0: no flow control).
    pub flow: u32,
    pub flow_id: u32,
    /// `flow_sleep`: microseconds to wait when the job is above its share.
    pub flow_sleep_us: u32,
    /// `wait_for`: the earlier job whose clones must all end before this one starts.
    pub wait_for: Option<String>,
    /// `exec_prerun`/`exec_postrun`: shell commands each clone runs around its IO.
    pub exec_prerun: Option<String>,
    pub exec_postrun: Option<String>,
    /// `io_submit_mode=offload`.
    pub offload: bool,
}

/// What fio's steady state watches: IOPS or bandwidth, by the largest deviation from
/// the window's mean or by the slope of a least-squares line through it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteadyState {
    pub metric: SteadyMetric,
    pub slope: bool,
    /// The limit: a percentage of the window's mean when `percent`, else IOPS or bytes/s
    /// (per second of slope).
    pub limit: f64,
    pub percent: bool,
    /// Seconds in the window (fio's `ss_dur`); 0: off.
    pub dur_s: u32,
    /// Time after the job's ramp before the first sample (fio's `ss_ramp`).
    pub ramp: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SteadyMetric {
    Iops,
    Bw,
}

impl Default for SteadyState {
    /// fio's default criterion, `iops_slope:0.01%`, without a window (off).
    fn default() -> Self {
        SteadyState {
            metric: SteadyMetric::Iops,
            slope: true,
            limit: 0.01,
            percent: true,
            dur_s: 0,
            ramp: Duration::ZERO,
        }
    }
}

impl SteadyState {
    pub fn enabled(&self) -> bool {
        self.dur_s > 0
    }

    /// fio's JSON `ss` string, e.g. `iops_slope:0.010000%`.
    pub fn fio_name(&self) -> String {
        format!(
            "{}{}:{:.6}{}",
            match self.metric {
                SteadyMetric::Iops => "iops",
                SteadyMetric::Bw => "bw",
            },
            if self.slope { "_slope" } else { "" },
            self.limit as f32,
            if self.percent { "%" } else { "" }
        )
    }
}

/// fio's `thinktime`, `thinktime_spin`, `thinktime_blocks`, `thinktime_blocks_type` and
/// `thinktime_iotime`: once `blocks` reads and writes are done since the last pause (or
/// issued, with `on_issue`), or once `iotime_us` has passed since it, the job waits for
/// its IOs in flight, busy-waits `spin_us`, then sleeps the rest of `think_us`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThinkTime {
    /// µs; 0: no pauses.
    pub think_us: u64,
    /// µs of the pause spent spinning on the CPU rather than sleeping.
    pub spin_us: u64,
    /// Reads and writes between pauses.
    pub blocks: u64,
    /// Whether `thinktime_blocks` was given: with `thinktime_iotime` alone, only the time
    /// counts (fio's rule, since the default of one block would pause after every IO).
    pub blocks_given: bool,
    /// `thinktime_blocks_type=issue`: count IOs issued rather than completed.
    pub on_issue: bool,
    /// µs of IO between pauses; 0: count blocks only.
    pub iotime_us: u64,
}

impl Default for ThinkTime {
    fn default() -> Self {
        ThinkTime {
            think_us: 0,
            spin_us: 0,
            blocks: 1,
            blocks_given: false,
            on_issue: false,
            iotime_us: 0,
        }
    }
}

/// fio's `latency_target`, `latency_window`, `latency_percentile` and `latency_run`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyTarget {
    /// µs; 0: no target.
    pub target_us: u64,
    /// µs.
    pub window_us: u64,
    pub percentile: f64,
    /// Keep adjusting the depth for the whole run instead of settling on one.
    pub run: bool,
}

impl Default for LatencyTarget {
    fn default() -> Self {
        LatencyTarget {
            target_us: 0,
            window_us: 0,
            percentile: 100.0,
            run: false,
        }
    }
}
