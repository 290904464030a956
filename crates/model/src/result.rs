//! The one result model. Measurement fills it; reporters, the store, `compare` and the HTML
//! report only read it. Everything is plain serde data so a stored run can be rendered again
//! by any reporter without re-running. Units are in the field names: `_ns`, `_ms`, `_bytes`.

use serde::{Deserialize, Serialize};

use crate::histogram::Histogram;

/// Bumped when the serialized shape changes incompatibly; the store migrates older rows.
pub const RESULT_SCHEMA: u32 = 1;

/// Data directions, in fio's order.
pub const DDIR_NAMES: [&str; 3] = ["read", "write", "trim"];

/// Which front end produced a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunMode {
    Fio,
    Quick,
    Bonnie,
    Diagnose,
}

/// One whole invocation: one or more reporting groups (fio), the eight quick tests, or a
/// bonnie suite.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema: u32,
    pub mode: RunMode,
    /// storbench's version, or the producing tool's (`fio-3.33`, `bonnie++ 2.00a`) on import.
    pub tool_version: String,
    pub started_unix_ms: u64,
    pub finished_unix_ms: u64,
    /// The exact command line.
    pub command_line: Vec<String>,
    /// Texts of the job files read, in order, as (path, contents).
    pub job_files: Vec<(String, String)>,
    /// Options given before the first job (fio's JSON `global options`), in order.
    pub global_options: Vec<(String, String)>,
    pub groups: Vec<GroupResult>,
    /// Block devices under the targets, with their counters over the run.
    pub disks: Vec<DiskUtil>,
    /// Network interfaces used by network targets, with their counters over the run.
    pub nics: Vec<NicUsage>,
    /// Whole-machine CPU over the run, from /proc/stat.
    pub system_cpu: Option<SystemCpu>,
    /// What limits the figures and what makes them untrustworthy.
    pub notes: Vec<Note>,
    pub environment: Option<Environment>,
    pub bonnie: Option<BonnieResult>,
    /// Every round of a repeated run (`--repeat N`, `numruns`); the fields above are the
    /// last round's. None for a run of one round and in results stored before repeats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<crate::repeats::Repeats>,
    /// The run was stopped by a signal or an error; the figures cover what ran.
    pub interrupted: bool,
    /// How far each reported entry (a job, a group_reporting group, a quick test) can be
    /// trusted, with the measured reasons (docs/verdicts.md). Empty in results stored
    /// before verdicts existed and in imported ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<Verdict>,
    /// A multi-host run's ranks and IOR's aggregate figures (docs/multihost.md); the groups
    /// above then hold every rank's jobs. None for a run on one host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Box<crate::hosts::MultiHost>>,
    /// The server's own counters read during the run (`--server-stats snmp://…`);
    /// None when not asked for and in results stored before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_stats: Option<ServerStats>,
    /// `storbench diagnose`'s ladder and limit; None for other runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<Box<crate::diagnose::Diagnosis>>,
}

impl RunResult {
    /// A run of `mode` by `tool_version` with nothing measured yet: no groups, devices,
    /// notes or environment. Every result starts here; callers set what they measured.
    pub fn new(
        mode: RunMode,
        tool_version: String,
        started_unix_ms: u64,
        finished_unix_ms: u64,
    ) -> RunResult {
        RunResult {
            schema: RESULT_SCHEMA,
            mode,
            tool_version,
            started_unix_ms,
            finished_unix_ms,
            command_line: Vec::new(),
            job_files: Vec::new(),
            global_options: Vec::new(),
            groups: Vec::new(),
            disks: Vec::new(),
            nics: Vec::new(),
            system_cpu: None,
            notes: Vec::new(),
            environment: None,
            bonnie: None,
            repeats: None,
            interrupted: false,
            verdicts: Vec::new(),
            hosts: None,
            server_stats: None,
            diagnosis: None,
        }
    }
}

/// A server's CPU, NICs and disks over a run, read from its SNMP agent about once a
/// second by a thread of its own (docs/verdicts.md, `server` check).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerStats {
    /// The agent as `snmp://host:port`, never with its community or credentials.
    pub source: String,
    /// Why the counters are missing or incomplete (no answer, a MIB the agent lacks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Time from the first reading to the last.
    pub duration_ms: u64,
    /// The share of all the server's CPUs that was busy over the run (UCD-SNMP-MIB
    /// ssCpuRaw* ticks), and how many CPUs those ticks came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_busy_percent: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ncpus: Option<u32>,
    /// Set when the CPU figure covers more than the run: net-snmp refreshes its ticks
    /// every 5 s, so for a short run the figure runs from the agent's last refresh before
    /// the run to its first after it; this is that span, from the ticks counted (all CPUs'
    /// ticks / CPUs / 100 Hz).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_span_ms: Option<u64>,
    /// Each CPU's load over the agent's last minute (HOST-RESOURCES-MIB hrProcessorLoad)
    /// at the run's end; empty where the agent had none yet (net-snmp needs a minute).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_loads: Vec<u32>,
    /// Interfaces that moved data during the run (IF-MIB 64-bit counters).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nics: Vec<ServerNic>,
    /// Disks that moved data during the run (UCD-DISKIO-MIB).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disks: Vec<ServerDisk>,
    /// One point per reading after the first: the rates since the one before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<ServerSample>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerNic {
    pub name: String,
    /// ifHighSpeed, Mbit/s; 0 when the agent does not know it.
    pub speed_mbps: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerDisk {
    pub name: String,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Busy time (diskIOBusyTime), µs; None where the agent lacks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_us: Option<u64>,
}

/// The server over one interval between readings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSample {
    /// End of the interval, ms since the first reading.
    pub t_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_busy_percent: Option<f64>,
    /// All interfaces' bytes per second, received and sent.
    pub rx_bytes_per_s: f64,
    pub tx_bytes_per_s: f64,
    /// All disks' bytes per second, read and written.
    pub disk_read_bytes_per_s: f64,
    pub disk_write_bytes_per_s: f64,
    /// The busiest disk's busy share of the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_busy_percent: Option<f64>,
}

impl RunResult {
    /// The worst verdict over all entries, if any was given.
    pub fn validity(&self) -> Option<Validity> {
        self.verdicts.iter().map(|v| v.validity).max()
    }
}

/// How far a figure can be trusted, from best to worst.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Validity {
    #[default]
    Valid,
    Suspect,
    Invalid,
}

impl Validity {
    pub fn name(self) -> &'static str {
        match self {
            Validity::Valid => "valid",
            Validity::Suspect => "suspect",
            Validity::Invalid => "invalid",
        }
    }
}

/// The verdict on one reported entry: the worst of its reasons (valid without any).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The entry's name as the reports show it (a job, a merged group, a quick test).
    pub job: String,
    pub validity: Validity,
    pub reasons: Vec<Reason>,
}

/// One measured finding about an entry's validity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reason {
    /// Which check (`cache`, `zeros`, `compressible`, `steady`, `host`, `latency`).
    pub check: String,
    /// What this finding makes the entry; `valid` for a figure stated for information (an
    /// unknown that does not make the result doubtful, a latency-bound run).
    pub validity: Validity,
    /// The finding, with the measured figure behind it.
    pub message: String,
}

/// What a job measured about its own validity, beyond its figures (docs/verdicts.md).
/// Absent in older and imported results.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Bytes of the region the job's files span (the working set its reads can cover).
    #[serde(default)]
    pub region_bytes: u64,
    /// Completed reads checked for never-written data, one in [`ZERO_SAMPLE_EVERY`].
    #[serde(default)]
    pub sampled_reads: u64,
    /// Of those, the reads whose checked bytes were all zero.
    #[serde(default)]
    pub zero_reads: u64,
    /// Why the data written compresses or dedupes (`zero_buffers=1`), if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compressible: Option<String>,
    /// The target's compression: `off`, or the algorithm (`zstd`, `lz4`, `on`); absent when
    /// it cannot be known from here (a network target, no zfs tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_compression: Option<String>,
    /// Why the target's compression is unknown, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression_unknown: Option<String>,
    /// The host over the batch the job ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostFigures>,
    /// For a network target whose server runs on this host: every disk of this machine
    /// over the batch (`disk::machine_disks`), since the server's backing device cannot be
    /// known from the client; what the cache verdict weighs the reported bytes against.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_disks: Vec<DiskUtil>,
    /// The IO and verify errors the job went past (fio's `continue_on_error`), when it
    /// may go past any: its figures then include IOs that moved nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<ErrorCount>,
    /// Bytes of the job's file regions that are holes, asked after the job (local regular
    /// files: SEEK_DATA/SEEK_HOLE; NFSv4.2 files: SEEK): reads there return zeros without
    /// a disk moving them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hole_bytes: Option<u64>,
    /// Bytes the job caused to be read from block devices (/proc/thread-self/io
    /// `read_bytes` of its worker threads, plus its share of what the process's helper
    /// threads read): what reached a disk for this job, apart from its neighbours'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_read_bytes: Option<u64>,
}

/// fio's error count of a job that continues past errors: `total_err`, `first_error`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCount {
    /// Errors gone past.
    pub total: u64,
    /// The errno of the first, 0 when none.
    pub first: i32,
    /// Its message, kept when the job logs its errors (`error_dump`), as fio keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_text: Option<String>,
    /// An error it could not go past stopped the job.
    #[serde(default)]
    pub stopped: bool,
}

impl ErrorCount {
    /// Counts one error gone past; the first one's message is asked for only once.
    pub fn count(&mut self, errno: i32, text: impl FnOnce() -> Option<String>) {
        self.total += 1;
        if self.total == 1 {
            self.first = errno;
            self.first_text = text();
        }
    }

    pub fn merge(&mut self, o: &ErrorCount) {
        if self.total == 0 {
            self.first = o.first;
            self.first_text = o.first_text.clone();
        }
        self.total += o.total;
        self.stopped |= o.stopped;
    }
}

/// The host over one batch of jobs (`host.rs`): what the `host` verdict judges.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFigures {
    /// The CPUs' frequency governors, each once (`performance`, `powersave`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub governor: Option<String>,
    /// The CPUs' mean clock over the batch (samples about once a second), MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mhz: Option<f64>,
    /// Their highest clock, when the kernel states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_mhz: Option<f64>,
    /// Whole-machine CPU over the batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_cpu: Option<SystemCpu>,
    /// This process's CPU over the batch, percent of one CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_cpu_percent: Option<f64>,
    /// Bytes this process caused to be read from and written to storage over the batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_read_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_write_bytes: Option<u64>,
}

impl Measured {
    pub fn is_empty(&self) -> bool {
        *self == Measured::default()
    }

    pub fn merge(&mut self, o: &Measured) {
        self.region_bytes = self.region_bytes.max(o.region_bytes);
        self.sampled_reads += o.sampled_reads;
        self.zero_reads += o.zero_reads;
        if self.compressible.is_none() {
            self.compressible = o.compressible.clone();
        }
        if self.target_compression.is_none() {
            self.target_compression = o.target_compression.clone();
        }
        if self.compression_unknown.is_none() {
            self.compression_unknown = o.compression_unknown.clone();
        }
        if self.host.is_none() {
            self.host = o.host.clone();
        }
        match (&mut self.errors, &o.errors) {
            (Some(e), Some(o)) => e.merge(o),
            (mine @ None, Some(o)) => *mine = Some(o.clone()),
            _ => {}
        }
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        // Clones usually share one region, as for region_bytes.
        self.hole_bytes = self.hole_bytes.max(o.hole_bytes);
        self.own_read_bytes = add(self.own_read_bytes, o.own_read_bytes);
    }
}

/// One completed read in this many is checked for never-written (all-zero) data.
pub const ZERO_SAMPLE_EVERY: u32 = 64;

/// A fio reporting group: jobs that ran together (between stonewalls / new_group).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupResult {
    pub id: u32,
    /// Report the jobs merged into one block (fio's group_reporting).
    pub group_reporting: bool,
    pub jobs: Vec<JobResult>,
}

/// Output settings of a job that change how its figures are printed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportSettings {
    /// 1024 or 1000: which unit family is primary.
    pub kb_base: u32,
    /// 8 = bytes, 1 = bits.
    pub unit_base: u32,
    pub significant_figures: u32,
    pub percentile_list: Vec<f64>,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    pub unified_rw: UnifiedRw,
    /// Which latencies were measured at all (gtod_reduce / disable_* turn them off).
    pub slat_measured: bool,
    pub clat_measured: bool,
    pub lat_measured: bool,
    pub bw_measured: bool,
}

impl Default for ReportSettings {
    fn default() -> Self {
        ReportSettings {
            kb_base: 1024,
            unit_base: 8,
            significant_figures: 4,
            percentile_list: DEFAULT_PERCENTILES.to_vec(),
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            unified_rw: UnifiedRw::None,
            slat_measured: true,
            clat_measured: true,
            lat_measured: true,
            bw_measured: true,
        }
    }
}

/// fio's default percentile_list.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// fio's unified_rw_reporting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnifiedRw {
    #[default]
    None,
    Mixed,
    Both,
}

/// What a job was asked to do, for the start-of-run header line and `show`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobHeader {
    /// fio's rw value as given (`randrw`, `read:8`).
    pub rw: String,
    /// (min, max) block size per direction, bytes.
    pub bs: [(u64, u64); 3],
    /// The engine that actually ran (after any substitution).
    pub ioengine: String,
    /// The engine the user asked for, if different (e.g. posixaio run by another engine).
    pub requested_ioengine: Option<String>,
    pub iodepth: u32,
    pub numjobs: u32,
    pub direct: bool,
}

/// One job clone (or, after merging, a whole group).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobResult {
    pub name: String,
    pub groupid: u32,
    /// Clone index within its job section (fio's `$jobnum`).
    pub jobnum: u32,
    /// How many job clones this entry covers (1 unless merged).
    pub jobs: u32,
    pub pid: u32,
    /// Last error number (0 = none) and its message.
    pub error: i32,
    pub error_text: Option<String>,
    pub description: Option<String>,
    /// The job's own options as given (fio's JSON `job options`), in order.
    pub options: Vec<(String, String)>,
    pub header: JobHeader,
    pub settings: ReportSettings,
    /// Files or URLs this job did IO to.
    pub targets: Vec<String>,
    /// Wall time from job start to end, including lay-out and ramp (fio's `elapsed`, s).
    pub elapsed_ms: u64,
    /// Time IO was measured (after ramp), fio's `job_runtime`.
    pub runtime_ms: u64,
    pub end_unix_ms: u64,
    /// read, write, trim.
    pub dirs: [DirResult; 3],
    pub sync: SyncResult,
    pub cpu: CpuUsage,
    pub depth: DepthStats,
    /// clat distribution over all directions, in fio's `lat (nsec/usec/msec)` buckets.
    pub lat_buckets: LatBuckets,
    /// Per-second timeline for charts and outage detection.
    pub timeline: Vec<TimelinePoint>,
    /// Engine facts (protocol version, transfer sizes, server, ...), in order.
    pub engine_details: Vec<(String, String)>,
    /// The block devices under the job's files, over the batch the job ran in: what "the
    /// device is the limit" is judged on, since quick's tests run one after another and
    /// the run-wide figures average a busy test with the idle gaps and lighter tests
    /// around it. Empty for network targets, imported and older results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disks: Vec<DiskUtil>,
    /// The servers on this host that the job's connections reached (an NFS or iSCSI
    /// target on 127.0.0.1), with the CPU they used over the batch the job ran in: they
    /// share the client's CPUs. Empty for local and remote targets, imported and older
    /// results, and where the server process cannot be seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_cpu: Vec<ServerCpu>,
    /// Inputs of the validity verdicts that the figures above do not hold.
    #[serde(default, skip_serializing_if = "Measured::is_empty")]
    pub measured: Measured,
    /// fio's steady-state detection, when the job asked for it (`ss_dur`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steadystate: Option<SteadyResult>,
    /// fio's latency profiling, when the job had a `latency_target`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<LatencyTargetResult>,
}

impl JobResult {
    /// Whether an error stopped the job: its `error` is set and is not only the first
    /// of the errors it went past (fio then exits 0).
    pub fn stopped_by_error(&self) -> bool {
        self.error != 0
            && !self
                .measured
                .errors
                .as_ref()
                .is_some_and(|e| e.total > 0 && !e.stopped)
    }
}

/// A `latency_target` job's settings and the queue depth its search ended at (fio's
/// `latency_target`, `latency_window`, `latency_percentile`, `latency_depth`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyTargetResult {
    pub target_ns: u64,
    pub window_us: u64,
    pub percentile: f64,
    pub depth: u32,
}

/// Where a job's steady-state window ended (fio's JSON `steadystate`): the criterion as
/// fio names it, whether it was met (the job then ended there), the last value computed
/// and the window's samples, oldest first (zeros where the window never filled).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SteadyResult {
    /// fio's `ss` string, e.g. `iops_slope:0.010000%`.
    pub ss: String,
    pub duration_s: u32,
    pub attained: bool,
    /// The criterion's last value, in the limit's unit.
    pub criterion: f64,
    pub percent: bool,
    /// IOPS criterion (else bandwidth) and slope (else mean deviation), for the normal
    /// output's wording.
    pub iops: bool,
    pub slope_based: bool,
    pub max_deviation: f64,
    pub slope: f64,
    /// Per-second bandwidth (bytes/s) and IOPS of the window.
    pub bw_data: Vec<u64>,
    pub iops_data: Vec<u64>,
}

impl SteadyResult {
    /// fio's `steadystate_bw_mean`/`_iops_mean`: integer means over the whole window.
    pub fn bw_mean(&self) -> u64 {
        mean_of(&self.bw_data)
    }

    pub fn iops_mean(&self) -> u64 {
        mean_of(&self.iops_data)
    }
}

fn mean_of(v: &[u64]) -> u64 {
    if v.is_empty() {
        0
    } else {
        v.iter().sum::<u64>() / v.len() as u64
    }
}

/// CPU used by a server process on the benchmark's own host during a batch, measured from
/// /proc/<pid>/stat (all its threads) from when the first job connected to it began
/// measuring to when the last one stopped (before closing its files).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerCpu {
    /// Command name of the process (`tgtd`, `ganesha.nfsd`).
    pub process: String,
    pub pid: u32,
    /// The address the connection reached (`127.0.0.1:3260`).
    pub addr: String,
    /// The server runs on the host that ran the benchmark (always so today: servers
    /// elsewhere are not measured).
    pub same_host: bool,
    pub usr_ns: u64,
    pub sys_ns: u64,
    /// The time the CPU was measured over.
    pub duration_ms: u64,
    /// CPU of its busiest thread over the same time: one thread cannot use more than one
    /// CPU, so this, not the process's total, says whether the server's event loop is
    /// the limit. Absent in results stored before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busiest_thread_ns: Option<u64>,
    /// The CPU its control group may use (a cgroup CPU quota), in hundredths of a percent
    /// of one CPU; absent when it has no quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_basis_points: Option<u64>,
    /// Its control group's CFS periods over the same time, and how many of them the quota
    /// throttled it in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_periods: Option<[u64; 2]>,
}

impl ServerCpu {
    /// Its cgroup quota in percent of one CPU, if it has one.
    pub fn quota_percent(&self) -> Option<f64> {
        self.quota_basis_points.map(|b| b as f64 / 100.0)
    }

    /// The share of its control group's CFS periods the quota throttled, in percent.
    pub fn throttled_percent(&self) -> Option<f64> {
        let [periods, throttled] = self.throttled_periods?;
        (periods > 0).then(|| throttled as f64 / periods as f64 * 100.0)
    }

    pub fn cpu_ns(&self) -> u64 {
        self.usr_ns + self.sys_ns
    }

    /// Its CPU in percent of one CPU (so up to 100 × CPUs for a multi-threaded server).
    pub fn percent(&self) -> f64 {
        match self.duration_ms {
            0 => 0.0,
            ms => self.cpu_ns() as f64 / (ms as f64 * 1e6) * 100.0,
        }
    }

    /// Its busiest thread's CPU in percent of one CPU, if measured.
    pub fn busiest_thread_percent(&self) -> Option<f64> {
        let ns = self.busiest_thread_ns?;
        (self.duration_ms > 0).then(|| ns as f64 / (self.duration_ms as f64 * 1e6) * 100.0)
    }
}

/// Figures for one data direction of a job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DirResult {
    pub io_bytes: u64,
    pub total_ios: u64,
    pub short_ios: u64,
    pub drop_ios: u64,
    /// Time this direction was active, ms (0 if it did no IO).
    pub runtime_ms: u64,
    pub slat: LatStats,
    pub clat: LatStats,
    pub lat: LatStats,
    /// Bandwidth samples over `bwavgtime` windows, bytes/s.
    pub bw_samples: SampleStats,
    /// IOPS samples over `iopsavgtime` windows.
    pub iops_samples: SampleStats,
    /// Completion latency per IO priority, when the job gives IOs priorities of their own
    /// (fio's `cmdprio*`): the job's own priority first (total latency with
    /// `lat_percentiles`, as fio's `clat_prio`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prios: Vec<PrioLat>,
}

/// The latency of the IOs of one priority.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PrioLat {
    /// The kernel's value: class << 13 | level.
    pub ioprio: u16,
    pub lat: LatStats,
}

impl DirResult {
    /// Mean bandwidth over the direction's runtime, bytes/s.
    pub fn bw_bytes(&self) -> f64 {
        if self.runtime_ms == 0 {
            0.0
        } else {
            self.io_bytes as f64 * 1000.0 / self.runtime_ms as f64
        }
    }

    pub fn iops(&self) -> f64 {
        if self.runtime_ms == 0 {
            0.0
        } else {
            self.total_ios as f64 * 1000.0 / self.runtime_ms as f64
        }
    }
}

/// Exact summary statistics plus the histogram of one latency kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatStats {
    pub samples: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// Exact sums, so merges stay exact. A single IO of 4.3 s already takes the sum of
    /// squares past 2^64 ns², which JSON numbers (and `serde_json::Value`) cannot hold as
    /// integers, so both are written as integers while they fit in a u64 and as floats beyond.
    #[serde(with = "wide")]
    pub sum_ns: u128,
    #[serde(with = "wide")]
    pub sum_sq_ns: u128,
    pub hist: Histogram,
    /// Percentiles given by an imported report when no histogram was available, (p, ns).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub given_percentiles: Vec<(f64, u64)>,
}

impl LatStats {
    #[inline]
    pub fn record(&mut self, ns: u64) {
        if self.samples == 0 || ns < self.min_ns {
            self.min_ns = ns;
        }
        if ns > self.max_ns {
            self.max_ns = ns;
        }
        self.samples += 1;
        // Saturating: u128 holds any realistic sum, but not three squares of u64::MAX.
        self.sum_ns = self.sum_ns.saturating_add(ns as u128);
        self.sum_sq_ns = self.sum_sq_ns.saturating_add((ns as u128) * (ns as u128));
        self.hist.record(ns);
    }

    pub fn merge(&mut self, other: &LatStats) {
        if other.samples == 0 {
            return;
        }
        if self.samples == 0 || other.min_ns < self.min_ns {
            self.min_ns = other.min_ns;
        }
        self.max_ns = self.max_ns.max(other.max_ns);
        self.samples += other.samples;
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
        self.sum_sq_ns = self.sum_sq_ns.saturating_add(other.sum_sq_ns);
        self.hist.merge(&other.hist);
        if self.given_percentiles.is_empty() {
            self.given_percentiles = other.given_percentiles.clone();
        }
    }

    pub fn mean(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.samples as f64
        }
    }

    /// Sample standard deviation (n-1), as fio prints it.
    pub fn stddev(&self) -> f64 {
        if self.samples < 2 {
            return 0.0;
        }
        let n = self.samples as u128;
        // n·Σx² − (Σx)² is exact in u128 for any realistic run; fall back to f64 otherwise.
        let exact = self
            .sum_sq_ns
            .checked_mul(n)
            .zip(self.sum_ns.checked_mul(self.sum_ns))
            .map(|(a, b)| a.saturating_sub(b));
        let var = match exact {
            Some(num) => num as f64 / (n as f64 * (n as f64 - 1.0)),
            None => {
                let mean = self.sum_ns as f64 / n as f64;
                (self.sum_sq_ns as f64 - mean * self.sum_ns as f64) / (n as f64 - 1.0)
            }
        };
        var.max(0.0).sqrt()
    }

    /// Percentile values in ns: from the histogram, or from an imported report's list.
    pub fn percentiles(&self, list: &[f64]) -> Vec<u64> {
        if self.hist.is_empty() && !self.given_percentiles.is_empty() {
            return list
                .iter()
                .map(|p| {
                    self.given_percentiles
                        .iter()
                        .find(|(q, _)| (q - p).abs() < 1e-9)
                        .map_or(0, |(_, v)| *v)
                })
                .collect();
        }
        self.hist.percentiles(list)
    }
}

/// Serializes a u128 as a u64 while it fits and as an f64 beyond (53 bits of precision,
/// ample for a mean and a standard deviation); reads any JSON number back. Every serializer
/// and `serde_json::Value` can hold the result, so no run is lost to a slow IO.
mod wide {
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
        match u64::try_from(*v) {
            Ok(small) => s.serialize_u64(small),
            Err(_) => s.serialize_f64(*v as f64),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
        d.deserialize_any(Wide)
    }

    struct Wide;

    impl Visitor<'_> for Wide {
        type Value = u128;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a non-negative number")
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<u128, E> {
            Ok(v.into())
        }

        fn visit_u128<E: de::Error>(self, v: u128) -> Result<u128, E> {
            Ok(v)
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<u128, E> {
            u128::try_from(v).map_err(|_| E::custom(format!("negative sum {v}")))
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<u128, E> {
            if v.is_finite() && v >= 0.0 {
                Ok(v as u128) // saturates at u128::MAX
            } else {
                Err(E::custom(format!("sum out of range: {v}")))
            }
        }
    }
}

/// Summary of periodic samples (bandwidth or IOPS), computed when a job ends.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SampleStats {
    pub samples: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub stddev: f64,
}

impl SampleStats {
    /// Summary of a list of samples (sample standard deviation).
    pub fn from_values(values: &[f64]) -> Self {
        if values.is_empty() {
            return SampleStats::default();
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = if values.len() > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        SampleStats {
            samples: values.len() as u64,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            mean,
            stddev: var.sqrt(),
        }
    }
}

/// fsync/fdatasync calls and their latency (fio's `sync` section).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncResult {
    pub total_ios: u64,
    pub lat: LatStats,
    /// Syncs at the job's end (end_fsync, fsync_on_close): timed into the runtime but,
    /// as in fio, not counted above; kept so a job that synced is known to have.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub closing: u64,
    /// fdatasync calls (`fdatasync=N`). fio 3.33 leaves them out of `total_ios` and
    /// counts them as short reads (its `short=N,…` and JSON `read.short_ios`); their
    /// latency is in `lat` with the fsyncs'.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub datasyncs: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// CPU used by a job: its worker threads plus the helper threads its IO needed (io_uring
/// workers, AIO threads), which fio leaves out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUsage {
    pub usr_ns: u64,
    pub sys_ns: u64,
    /// Part of usr+sys spent in helper threads, included above.
    pub helper_ns: u64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    /// Time the job's threads were ready to run but waited for a CPU (the kernel's run
    /// delay, /proc/thread-self/schedstat); 0 where unknown (imported, older runs).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wait_ns: u64,
}

impl CpuUsage {
    pub fn merge(&mut self, o: &CpuUsage) {
        self.usr_ns += o.usr_ns;
        self.sys_ns += o.sys_ns;
        self.helper_ns += o.helper_ns;
        self.ctx += o.ctx;
        self.majf += o.majf;
        self.minf += o.minf;
        self.wait_ns += o.wait_ns;
    }
}

/// fio's `IO depths`, `submit` and `complete` distributions, as raw counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DepthStats {
    /// IOs by depth in flight when issued: 1, 2, 4, 8, 16, 32, >=64.
    pub level: [u64; 7],
    /// Submit calls by IOs submitted: 0, 1-4, 5-8, 9-16, 17-32, 33-64, >64.
    pub submit: [u64; 7],
    /// Reap calls by IOs completed, same buckets.
    pub complete: [u64; 7],
}

impl DepthStats {
    pub fn merge(&mut self, o: &DepthStats) {
        for i in 0..7 {
            self.level[i] += o.level[i];
            self.submit[i] += o.submit[i];
            self.complete[i] += o.complete[i];
        }
    }
}

/// Completion latency counts in fio's display buckets (`lat (usec)   : 250=…`), over all
/// directions. A value goes to `ns` below 1 µs, to `us` below 1 ms, else to `ms`, truncated
/// to whole units of that array. Bucket i holds the values from the previous bound
/// (inclusive; 0 for the first) up to bound i (exclusive), bounds being 2, 4, 10, 20, 50,
/// 100, 250, 500, 750, 1000, and for `ms` also 2000 and then everything from 2000 on. So
/// fio's `250=` in µs counts 100 µs <= clat < 250 µs (fio's `io_u_mark_lat_*`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatBuckets {
    pub ns: [u64; 10],
    pub us: [u64; 10],
    pub ms: [u64; 12],
}

impl LatBuckets {
    /// Counts one completion latency in fio's display buckets: bucket i holds values from
    /// the previous bound up to (not including) bound i, in the unit the value falls in
    /// (ns below 1 µs, µs below 1 ms, else ms, each truncated to whole units).
    #[inline]
    pub fn record(&mut self, ns: u64) {
        if ns < 1_000 {
            self.ns[small_bucket(ns)] += 1;
        } else if ns < 1_000_000 {
            self.us[small_bucket(ns / 1_000)] += 1;
        } else {
            let ms = ns / 1_000_000;
            let idx = match ms {
                0..=999 => small_bucket(ms),
                1000..=1999 => 10,
                _ => 11,
            };
            self.ms[idx] += 1;
        }
    }

    pub fn merge(&mut self, o: &LatBuckets) {
        self.ns.iter_mut().zip(o.ns).for_each(|(a, b)| *a += b);
        self.us.iter_mut().zip(o.us).for_each(|(a, b)| *a += b);
        self.ms.iter_mut().zip(o.ms).for_each(|(a, b)| *a += b);
    }
}

/// Index among the bounds 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000 for a value < 1000.
#[inline]
fn small_bucket(v: u64) -> usize {
    const LOWER: [u64; 9] = [2, 4, 10, 20, 50, 100, 250, 500, 750];
    LOWER.iter().take_while(|&&b| v >= b).count()
}

/// Totals over one second of a job's measured time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// End of the interval, ms since measurement started.
    pub t_ms: u64,
    pub bytes: [u64; 3],
    pub ios: [u64; 3],
    /// Sum of completion latencies in the interval, per direction (for a mean).
    pub lat_sum_ns: [u64; 3],
}

/// Counters of a block device over the run (fio's `Disk stats`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks: u64,
    pub write_ticks: u64,
    pub in_queue: u64,
    /// Busy time as a percentage of the measured time.
    pub util: f64,
    /// Bytes transferred (from sectors), to tell device IO from cache hits.
    #[serde(default)]
    pub read_bytes: u64,
    #[serde(default)]
    pub write_bytes: u64,
    /// One of the disks that hold the data, found by following partitions, dm, md and
    /// loop devices down from the file's device: what the cache verdict counts. False for
    /// the devices above them, and in results stored before it was recorded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub leaf: bool,
    /// Found below the file's own device (a loop device's backing disk, a dm or md
    /// member): counted for the cache verdict, not judged as the job's device.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub below: bool,
}

/// Counters of a network interface over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NicUsage {
    pub name: String,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub duration_ms: u64,
    /// Link speed in Mbit/s: the lower of what the interface states and a shaping qdisc's
    /// rate (tbf), if either is known.
    pub speed_mbps: Option<u64>,
}

/// Whole-machine CPU time over the run, in percent of one CPU (so up to 100 × ncpus).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemCpu {
    pub ncpus: u32,
    pub user: f64,
    pub system: f64,
    pub iowait: f64,
    pub steal: f64,
    pub idle: f64,
}

/// A finding about a result: what limits it, or why a figure should not be trusted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    pub level: NoteLevel,
    /// Stable identifier (`limit.device`, `verdict.cache`, …) for scripts and tests.
    pub code: String,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoteLevel {
    Info,
    Limit,
    Warning,
}

/// Where a run happened, stored with it for comparisons.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub hostname: String,
    pub cpu_model: String,
    pub ncpus: u32,
    pub mem_bytes: u64,
    pub kernel: String,
    pub storbench_version: String,
    pub targets: Vec<TargetInfo>,
}

/// What a target is: a local path's file system and device, or a network server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// Path or URL as given.
    pub target: String,
    pub fs_type: Option<String>,
    pub mount_options: Option<String>,
    pub device: Option<String>,
    pub device_model: Option<String>,
    pub rotational: Option<bool>,
    pub scheduler: Option<String>,
    pub size_bytes: Option<u64>,
    pub server: Option<String>,
    pub interface: Option<String>,
    pub link_speed_mbps: Option<u64>,
    /// For a loop device, the file behind it and whether the loop reaches that file with
    /// direct IO: without it the host's page cache sits under every "device" IO.
    #[serde(default)]
    pub loop_backing_file: Option<String>,
    #[serde(default)]
    pub loop_direct_io: Option<bool>,
}

/// Result of a bonnie++-style suite.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BonnieResult {
    /// `-m` name.
    pub name: String,
    /// Version string as bonnie++ would print it (ours, or the imported one).
    pub version: String,
    pub concurrency: u32,
    pub seed: u64,
    pub file_size_mib: u64,
    pub chunk_bytes: u64,
    pub seeks: u64,
    pub seekers: u32,
    /// `-n` parameters: files in units of 1024, max and min size (max -1: links, -2:
    /// symlinks), directories, file chunk.
    pub num_files: u64,
    pub max_size: i64,
    pub min_size: u64,
    pub num_dirs: u64,
    pub file_chunk_bytes: u64,
    /// storbench's deviations from bonnie++ that were in effect (shown in the header).
    pub compressible: bool,
    /// With `--compressible`: the target's compression (`off`, `zstd`, …), or why it is
    /// unknown, looked up as for fio's compressible writes (`compress.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_compression: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression_unknown: Option<String>,
    pub direct: bool,
    pub fsync_each_write: bool,
    pub tests: Vec<BonnieTest>,
}

/// bonnie++'s tests in CSV column order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BonnieTestId {
    Putc,
    PutBlock,
    Rewrite,
    Getc,
    GetBlock,
    Seeks,
    SeqCreate,
    SeqStat,
    SeqDel,
    RanCreate,
    RanStat,
    RanDel,
}

/// One bonnie test's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BonnieTest {
    pub id: BonnieTestId,
    /// KiB/s for IO tests, seeks/s, files/s; None when bonnie would print `+++++`.
    pub rate: Option<f64>,
    /// Process CPU over elapsed time, percent (None with `+++`).
    pub cpu_pct: Option<f64>,
    pub elapsed_ns: u64,
    /// Longest single operation, ns (None if not measured, e.g. on import of 1.03).
    pub max_latency_ns: Option<u64>,
    /// When the test ran and what it did, which a multi-host run combines across ranks
    /// (docs/multihost.md); None in imports and in results stored before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<TestSpan>,
}

/// A bonnie test's timed part on its host, for IOR's aggregate over several hosts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TestSpan {
    /// The start of the timed part, ns since the Unix epoch on the host's clock (its end
    /// is `elapsed_ns` later).
    pub start_unix_ns: u64,
    /// What the test did over all its copies, in the unit of its rate: KiB for the IO
    /// tests, seeks, files. Kept apart from the rate, which bonnie++'s rule leaves out
    /// under half a second.
    pub work: f64,
    /// The process's CPU time (user + system) over the test, ns.
    pub cpu_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow(ns: u64, n: u64) -> LatStats {
        let mut s = LatStats::default();
        for _ in 0..n {
            s.record(ns);
        }
        s
    }

    #[test]
    fn sums_past_u64_survive_json_values() {
        // One IO of 4.3 s takes the sum of squares past 2^64 ns²; an hour-long one far past.
        for ns in [4_300_000_000, 3_600_000_000_000, u64::MAX >> 1] {
            let s = slow(ns, 3);
            assert!(s.sum_sq_ns > u128::from(u64::MAX));
            let v = serde_json::to_value(&s).expect("a Value holds it");
            let back: LatStats = serde_json::from_value(v).expect("and reads back");
            let text = serde_json::to_string(&s).unwrap();
            let back2: LatStats = serde_json::from_str(&text).unwrap();
            for b in [back, back2] {
                assert_eq!((b.samples, b.min_ns, b.max_ns), (3, ns, ns));
                let rel = |a: u128, b: u128| (a as f64 - b as f64).abs() / b as f64;
                assert!(rel(b.sum_ns, s.sum_ns) < 1e-12);
                assert!(rel(b.sum_sq_ns, s.sum_sq_ns) < 1e-12);
                assert!((b.mean() - ns as f64).abs() / (ns as f64) < 1e-12);
                assert!(b.stddev() < ns as f64 * 1e-6, "{}", b.stddev());
            }
        }
    }

    #[test]
    fn sums_that_fit_stay_exact_integers() {
        let s = slow(1_000, 5);
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["sum_ns"], serde_json::json!(5_000));
        assert_eq!(v["sum_sq_ns"], serde_json::json!(5_000_000));
        let bad = serde_json::json!(-1);
        let mut neg = v.clone();
        neg["sum_ns"] = bad;
        assert!(serde_json::from_value::<LatStats>(neg).is_err());
    }
}
