//! `storbench diagnose`'s verdict: reads the battery's jobs (named by the preset in
//! `storbench_job::presets::diagnose`) from the result model, builds the ladder of stages,
//! and names the stage whose ceiling the measurements meet (docs/diagnose.md lists each
//! rule with the scenario that tests it).

use storbench_job::presets::diagnose as preset;

use super::path::{self, LinkCeiling, SteadyRate};
use super::server_quota::{self, quota_use};
use storbench_model::confidence::Summary;
use storbench_model::diagnose::{Diagnosis, Limit, LimitStage, Stage, StageKind, StageUnit};
use storbench_model::result::{JobResult, NicUsage, RunResult};

/// The plateau: ladder steps within this share of the best one.
const PLATEAU: f64 = 0.95;
/// The ladder still rises when its last step beats the one before by more than this.
const RISING: f64 = 1.10;
/// A round trip at least this share of a QD1 read's time: the ladder's rise is latency.
const ROUND_TRIP_SHARE: f64 = 0.25;
/// Cold reads this much slower than the path's ceiling: the storage bounds them.
const STORAGE_SLOWER: f64 = 0.80;
/// A CPU this busy (its time running plus waiting to run) is saturated.
const SATURATED: f64 = 90.0;
/// A client thread waiting for a CPU this share of its time (or more) is held back by it
/// (the shared-CPU rule's threshold).
const CPU_WAIT: f64 = 50.0;
/// The per-second scatter a steady rate may have (the path rule's).
const STEADY_CV: f64 = 0.05;
/// Timeline intervals at least this long count (a stage capped by its bytes ends within
/// a second; its last interval still gives a rate, only a noisier one).
const MIN_SPAN_MS: u64 = 500;

/// What the command knows that the result does not say.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// Stages not run, with the reason shown to the user.
    pub skipped: Vec<(StageKind, String)>,
    /// A local directory or device (the hot region is the client's page cache).
    pub local: bool,
}

/// The diagnosis of a finished battery.
pub fn judge(run: &RunResult, ctx: &Context) -> Diagnosis {
    let facts = Facts::read(run, ctx);
    let stages = facts.ladder(ctx);
    let mut remarks: Vec<String> = ctx
        .skipped
        .iter()
        .map(|(s, why)| format!("{} skipped: {why}", s.label()))
        .collect();
    remarks.extend(facts.cache_remark());
    Diagnosis {
        limit: facts.limit(),
        stages,
        remarks,
    }
}

/// A job of the battery, found by its name.
fn job<'r>(run: &'r RunResult, name: &str) -> Option<&'r JobResult> {
    run.groups
        .iter()
        .flat_map(|g| g.jobs.iter())
        .find(|j| j.name == name && (j.dirs[0].total_ios + j.dirs[1].total_ios) > 0)
}

fn rate(job: &JobResult) -> f64 {
    job.dirs[0].bw_bytes().max(job.dirs[1].bw_bytes())
}

/// What the battery measured, in the figures the rules read.
struct Facts<'r> {
    run: &'r RunResult,
    local: bool,
    qd1: Option<&'r JobResult>,
    /// The read ladder's steps that ran: (queue depth, job).
    steps: Vec<(u32, &'r JobResult)>,
    write: Option<&'r JobResult>,
    cold: Option<&'r JobResult>,
    /// The no-op round trip the engine timed (NFS NULL, SMB ECHO, iSCSI NOP-Out; NBD a
    /// small cached read), ns.
    noop_ns: Option<f64>,
    /// This client's NIC the network jobs used, and its speed.
    nic: Option<(&'r NicUsage, u64)>,
}

impl<'r> Facts<'r> {
    fn read(run: &'r RunResult, ctx: &Context) -> Facts<'r> {
        let steps: Vec<(u32, &JobResult)> = preset::PATH_READS
            .iter()
            .filter_map(|(name, qd)| job(run, name).map(|j| (*qd, j)))
            .collect();
        let noop_ns = run
            .groups
            .iter()
            .flat_map(|g| g.jobs.iter())
            .flat_map(|j| j.engine_details.iter())
            .find(|(k, _)| k == "round trip")
            .and_then(|(_, v)| parse_duration_ns(v));
        let nic = steps.iter().find_map(|(_, j)| super::job_link(run, j));
        Facts {
            run,
            local: ctx.local,
            qd1: job(run, preset::QD1),
            steps,
            write: job(run, preset::PATH_WRITE),
            cold: job(run, preset::COLD),
            noop_ns,
            nic,
        }
    }

    /// The best step of the read ladder.
    fn best(&self) -> Option<&'r JobResult> {
        self.steps
            .iter()
            .map(|(_, j)| *j)
            .max_by(|a, b| rate(a).total_cmp(&rate(b)))
    }

    fn best_rate(&self) -> f64 {
        self.best().map_or(0.0, rate)
    }

    /// The steps at the best step's rate, pooled: their full seconds' mean and scatter.
    fn plateau(&self) -> Option<SteadyRate> {
        let best = self.best_rate();
        let rates: Vec<f64> = self
            .steps
            .iter()
            .filter(|(_, j)| rate(j) >= best * PLATEAU)
            .flat_map(|(_, j)| super::verdicts::rates_over(&j.timeline, MIN_SPAN_MS))
            .map(|(_, r)| r)
            .collect();
        let s = Summary::of(&rates)?;
        let sd = s.var.sqrt();
        (rates.len() >= 3 && s.mean > 0.0 && sd / s.mean <= STEADY_CV).then_some(SteadyRate {
            mean: s.mean,
            sd,
            seconds: s.n,
        })
    }

    /// The rate still rose at the ladder's last step.
    fn still_rising(&self) -> bool {
        match self.steps.as_slice() {
            [.., (_, a), (_, b)] => rate(b) > rate(a) * RISING,
            _ => false,
        }
    }

    /// The round trip is a large share of what one read of the ladder's first step took at
    /// QD1: the wait a deeper queue hides is the network's, not the server's or its disks'.
    fn round_trip_bound(&self) -> bool {
        let (Some(rtt), Some((_, q1))) = (self.round_trip_ns(), self.steps.first()) else {
            return false;
        };
        let r = rate(q1);
        r > 0.0 && rtt >= preset::BIG_BS as f64 / r * 1e9 * ROUND_TRIP_SHARE
    }

    /// A standard link slower than this client's NIC whose ceiling the plateau meets.
    fn path_link(&self) -> Option<LinkCeiling> {
        let (_, speed) = self.nic?;
        path::matching_link(&self.plateau()?, speed)
    }

    /// This client's NIC's payload ceiling (MTU 1500), bytes/s.
    fn nic_ceiling(&self) -> Option<f64> {
        let (_, speed) = self.nic?;
        Some(LinkCeiling::new(speed, 1500).payload_bytes_per_sec())
    }

    /// The QD1 reads' median and least latency, ns.
    fn qd1_latency(&self) -> Option<(f64, f64)> {
        let j = self.qd1?;
        let clat = &j.dirs[0].clat;
        let median = *clat.percentiles(&[50.0]).first()? as f64;
        Some((median, clat.min_ns as f64))
    }

    /// The round trip: the protocol's no-op where the engine timed one, else the least
    /// small cached read.
    fn round_trip_ns(&self) -> Option<f64> {
        self.noop_ns
            .or_else(|| self.qd1_latency().map(|(_, min)| min))
    }

    /// The client's thread at the best step: (CPU busy %, run delay %, CPU per IO ns).
    fn client(&self) -> Option<(f64, f64, f64)> {
        let j = self.best()?;
        let runtime_ns = j.runtime_ms as f64 * 1e6;
        let ios = (j.dirs[0].total_ios + j.dirs[1].total_ios) as f64;
        if runtime_ns <= 0.0 || ios <= 0.0 {
            return None;
        }
        let cpu = (j.cpu.usr_ns + j.cpu.sys_ns) as f64;
        Some((
            cpu / runtime_ns * 100.0,
            j.cpu.wait_ns as f64 / runtime_ns * 100.0,
            cpu / ios,
        ))
    }

    /// The server's CPU at the best step: a server on this host measured by its process
    /// (against its cgroup's CPU quota when it has one), else its agent's figure.
    fn server_cpu(&self) -> Option<ServerCpuShare> {
        let host = self
            .best()?
            .server_cpu
            .first()
            .filter(|s| s.duration_ms > 0);
        let agent = self.agent_cpu();
        if let Some(s) = host {
            let (busy, of) = match quota_use(s) {
                Some(q) => (q.share, "its cgroup's CPU quota"),
                None => (s.percent(), "one CPU"),
            };
            let mut text = format!("{} on this host: {}", s.process, server_quota::figures(s));
            if let Some((a, n)) = agent {
                text.push_str(&format!(
                    "; its agent: the server's CPUs {a:.0}% busy ({n})"
                ));
            }
            return Some(ServerCpuShare { busy, of, text });
        }
        let (busy, over) = agent?;
        Some(ServerCpuShare {
            busy,
            of: "its CPUs",
            text: format!("its agent: the server's CPUs {busy:.0}% busy ({over})"),
        })
    }

    /// The agent's CPU busy share over the best step's seconds (else over the whole
    /// battery), and over what.
    fn agent_cpu(&self) -> Option<(f64, String)> {
        let j = self.best()?;
        let stats = self.run.server_stats.as_ref()?;
        let first_ms = self.run.finished_unix_ms.saturating_sub(stats.duration_ms);
        let from = j.end_unix_ms.saturating_sub(j.runtime_ms);
        let inside = |t_ms: u64| {
            let at = first_ms + t_ms;
            at > from + 500 && at <= j.end_unix_ms + 500
        };
        let busy: Vec<f64> = stats
            .samples
            .iter()
            .filter(|s| inside(s.t_ms))
            .filter_map(|s| s.cpu_busy_percent)
            .collect();
        if busy.is_empty() {
            // An agent refreshes its CPU ticks every few seconds: a short step may see none.
            let whole = stats.cpu_busy_percent?;
            return Some((whole, "over the battery".into()));
        }
        let mean = busy.iter().sum::<f64>() / busy.len() as f64;
        Some((mean, format!("{} s", busy.len())))
    }

    fn ladder(&self, ctx: &Context) -> Vec<Stage> {
        let mut out = vec![
            self.round_trip_stage(),
            self.path_read_stage(),
            self.path_write_stage(),
            self.storage_stage(),
            self.client_stage(),
            self.server_stage(),
            self.qd1_stage(),
        ];
        for stage in &mut out {
            if let Some((_, why)) = ctx.skipped.iter().find(|(s, _)| *s == stage.stage) {
                stage.skipped = Some(why.clone());
            }
        }
        out
    }

    fn round_trip_stage(&self) -> Stage {
        let mut s = Stage::new(StageKind::RoundTrip, StageUnit::Nanos);
        s.measured = self.round_trip_ns();
        s.note = match (self.noop_ns, self.qd1_latency()) {
            (Some(_), Some((median, _))) => {
                format!("no-op, least of 5; 4K read median {}", micros(median))
            }
            (Some(_), None) => "no-op, least of 5".into(),
            (None, Some((median, min))) => {
                format!(
                    "4K cached read min {}, median {}",
                    micros(min),
                    micros(median)
                )
            }
            (None, None) => String::new(),
        };
        s
    }

    fn path_read_stage(&self) -> Stage {
        let mut s = Stage::new(StageKind::PathRead, StageUnit::BytesPerSec);
        if self.steps.is_empty() {
            s.skipped = Some("no read completed".into());
            return s;
        }
        s.measured = Some(self.best_rate());
        self.set_link_ceiling(&mut s);
        let ladder: Vec<String> = self
            .steps
            .iter()
            .map(|(qd, j)| format!("Q{qd} {:.0}", rate(j) / 1e6))
            .collect();
        s.note = format!(
            "1M {}; {}",
            ladder.join(", "),
            if self.still_rising() {
                "still rising"
            } else {
                "flat"
            }
        );
        s
    }

    fn set_link_ceiling(&self, s: &mut Stage) {
        if let Some(link) = self.path_link() {
            s.ceiling = Some(link.payload_bytes_per_sec());
            s.ceiling_what = format!("{} link", link.speed_text());
        } else if let (Some(c), Some((nic, speed))) = (self.nic_ceiling(), self.nic) {
            s.ceiling = Some(c);
            s.ceiling_what = format!("{} {}", nic.name, speed_text(speed));
        }
    }

    fn path_write_stage(&self) -> Stage {
        let mut s = Stage::new(StageKind::PathWrite, StageUnit::BytesPerSec);
        if let Some(w) = self.write {
            s.measured = Some(rate(w));
            if let (Some(c), Some((nic, speed))) = (self.nic_ceiling(), self.nic) {
                s.ceiling = Some(c);
                s.ceiling_what = format!("{} {}", nic.name, speed_text(speed));
            }
            s.note = "1M Q8 to the hot region".into();
        }
        s
    }

    fn storage_stage(&self) -> Stage {
        let mut s = Stage::new(StageKind::Storage, StageUnit::BytesPerSec);
        let Some(c) = self.cold else {
            s.skipped.get_or_insert_with(|| "no read completed".into());
            return s;
        };
        s.measured = Some(rate(c));
        if !self.steps.is_empty() {
            s.ceiling = Some(self.best_rate());
            s.ceiling_what = "path read".into();
        }
        let disks: Vec<String> = c
            .disks
            .iter()
            .filter(|d| d.leaf || !d.below)
            .map(|d| format!("{} {:.0}% busy", d.name, d.util))
            .collect();
        s.note = match (self.local, c.settings_direct(), disks.is_empty()) {
            (true, true, false) => format!("O_DIRECT; {}", disks.join(", ")),
            (true, true, true) => "O_DIRECT".into(),
            (true, false, _) => "buffered: O_DIRECT refused".into(),
            (false, ..) => format!("{} MiB read once", c.dirs[0].io_bytes >> 20),
        };
        s
    }

    fn client_stage(&self) -> Stage {
        let mut s = Stage::new(StageKind::Client, StageUnit::Percent);
        let Some((cpu, wait, per_io)) = self.client() else {
            return s;
        };
        s.measured = Some(cpu + wait);
        s.ceiling = Some(100.0);
        s.ceiling_what = "one CPU".into();
        let nic = match self.nic {
            Some((n, speed)) => format!(
                "; {} {} {:.0}% used",
                n.name,
                speed_text(speed),
                self.best_rate() * 8.0 / (speed as f64 * 1e6) * 100.0
            ),
            None => String::new(),
        };
        s.note = format!(
            "CPU {cpu:.0}% + run delay {wait:.0}%, {}/IO{nic}",
            micros(per_io)
        );
        s
    }

    fn server_stage(&self) -> Stage {
        let mut s = Stage::new(StageKind::Server, StageUnit::Percent);
        match self.server_cpu() {
            Some(cpu) => {
                s.measured = Some(cpu.busy);
                s.ceiling = Some(100.0);
                s.ceiling_what = cpu.of.into();
                s.note = cpu.text;
            }
            None => {
                s.skipped = Some("no agent (--server-stats snmp://…)".into());
            }
        }
        s
    }

    fn qd1_stage(&self) -> Stage {
        let mut s = Stage::new(StageKind::Qd1, StageUnit::Nanos);
        let Some((median, _)) = self.qd1_latency() else {
            return s;
        };
        s.measured = Some(median);
        s.ceiling = self.round_trip_ns();
        s.ceiling_what = "round trip".into();
        let iops = self.qd1.map_or(0.0, |j| j.dirs[0].iops());
        s.note = format!("4K median, {iops:.0} IOPS");
        s
    }

    /// The cold reads went to the storage: locally a disk under the file read at least
    /// half their bytes (tmpfs has none); over the network, the server's agent shows its
    /// disks reading at least half of them (without it, its cache cannot be ruled out).
    fn cold_reached_storage(&self) -> bool {
        let Some(c) = self.cold else {
            return false;
        };
        let bytes = c.dirs[0].io_bytes as f64;
        if self.local {
            let read: u64 = c
                .disks
                .iter()
                .filter(|d| !d.below)
                .map(|d| d.read_bytes)
                .max()
                .unwrap_or(0);
            return read as f64 >= bytes * 0.5;
        }
        self.server_disk_share().is_some_and(|share| share >= 0.5)
    }

    /// Said when the cold reads may have come from the server's memory.
    fn cache_remark(&self) -> Option<String> {
        if self.local || self.cold.is_none() {
            return None;
        }
        let read_by_disks = self.server_disk_share();
        match read_by_disks {
            Some(share) if share >= 0.5 => None,
            Some(_) => Some(
                "the server's disks read little during the storage stage: its memory \
                 served it, so the storage's ceiling is not measured"
                    .into(),
            ),
            None => Some(
                "the server's cache cannot be ruled out for the storage stage: no agent \
                 reports its disks (--server-stats)"
                    .into(),
            ),
        }
    }

    /// The share of the cold stage's bytes the server's disks read, from its agent.
    fn server_disk_share(&self) -> Option<f64> {
        let stats = self.run.server_stats.as_ref()?;
        let c = self.cold?;
        let first_ms = self.run.finished_unix_ms.saturating_sub(stats.duration_ms);
        let from = c.end_unix_ms.saturating_sub(c.runtime_ms);
        let read: f64 = stats
            .samples
            .iter()
            .filter(|s| {
                let at = first_ms + s.t_ms;
                at > from && at <= c.end_unix_ms + 1000
            })
            .map(|s| s.disk_read_bytes_per_s)
            .sum();
        let bytes = c.dirs[0].io_bytes as f64;
        (bytes > 0.0 && !stats.disks.is_empty()).then(|| read / bytes)
    }

    fn limit(&self) -> Limit {
        let Some(best) = self.best() else {
            return Limit {
                stage: LimitStage::None,
                message: "no read completed, so no stage could be judged".into(),
            };
        };
        let rate = rate(best);
        // Cold reads well below the reads from memory, served by a disk: the storage's
        // ceiling is the lower one, whatever bounded the reads from memory.
        if let Some(cold) = self.cold.map(self::rate)
            && cold < rate * STORAGE_SLOWER
            && self.cold_reached_storage()
        {
            return self.storage_limit(rate, cold);
        }
        if let Some(cpu) = self.server_cpu().filter(|c| c.busy >= SATURATED) {
            return self.server_limit(rate, &cpu);
        }
        if let Some((cpu, wait, _)) = self
            .client()
            .filter(|(c, w, _)| !self.local && c + w >= SATURATED)
        {
            return self.client_limit(rate, cpu, wait);
        }
        if let Some(link) = self.path_link() {
            return self.link_limit(link);
        }
        if let (Some(c), Some((nic, speed))) = (self.nic_ceiling(), self.nic)
            && rate >= c * (1.0 - 0.03)
        {
            return Limit {
                stage: LimitStage::Link,
                message: format!(
                    "the limit is this client's own link: reads stop at {}, the payload \
                     ceiling of {} at {}; a faster NIC and path would raise it",
                    mbs(rate),
                    nic.name,
                    speed_text(speed)
                ),
            };
        }
        // Waiting for a CPU most of the time holds the thread back even when its work
        // and its waits fall short of a whole CPU (the rest it sleeps on the network).
        if let Some((cpu, wait, _)) = self
            .client()
            .filter(|(_, w, _)| !self.local && *w >= CPU_WAIT)
        {
            return self.client_limit(rate, cpu, wait);
        }
        // Locally the path's reads are memory copies, whose rate says nothing of latency.
        if !self.local && self.still_rising() && self.round_trip_bound() {
            return self.latency_limit(rate);
        }
        self.no_limit(rate)
    }

    fn link_limit(&self, link: LinkCeiling) -> Limit {
        let plateau = self.plateau().map_or(self.best_rate(), |p| p.mean);
        let ceiling = link.payload_bytes_per_sec();
        let (nic_text, used) = match self.nic {
            Some((n, speed)) => (
                format!("{} ({})", speed_text(speed), n.name),
                plateau * 8.0 / (speed as f64 * 1e6) * 100.0,
            ),
            None => ("faster".into(), 0.0),
        };
        let cold = match self.cold.map(rate) {
            Some(c) if c >= plateau * PLATEAU => {
                "Cold reads ran as fast: the disks keep up with the link".to_string()
            }
            Some(c) => format!(
                "Cold reads were slower ({}): past the link, the storage is next",
                mbs(c)
            ),
            None => "The storage stage did not run".to_string(),
        };
        Limit {
            stage: LimitStage::Link,
            message: format!(
                "the limit is a {speed} link on the path: reads from the server's memory \
                 stop at {rate}, {pct:.0}% of {speed} Ethernet's payload ceiling ({cmb}); \
                 this client's NIC is {nic_text} and {used:.0}% used, so the narrow link \
                 is the NAS's port, a switch port or a cable. {cold}. A server CPU running \
                 at exactly this rate would give the same figure. A faster disk, more \
                 server RAM or a faster client would not raise this; a faster link at \
                 both ends would.",
                speed = link.speed_text(),
                rate = mbs(plateau),
                pct = plateau / ceiling * 100.0,
                cmb = mbs(ceiling),
            ),
        }
    }

    fn storage_limit(&self, path: f64, cold: f64) -> Limit {
        let evidence = if self.local {
            "O_DIRECT reads of data not in memory"
        } else {
            "reads of a region read once"
        };
        Limit {
            stage: LimitStage::Storage,
            message: format!(
                "the limit is the storage: {evidence} ran at {}, {:.0}% of the {} the path \
                 carries from memory. A faster disk (or more cache in front of it) would \
                 raise this; a faster link or client would not.",
                mbs(cold),
                cold / path * 100.0,
                mbs(path)
            ),
        }
    }

    fn server_limit(&self, rate: f64, cpu: &ServerCpuShare) -> Limit {
        let link = match self.nic_ceiling() {
            Some(c) => format!(
                ", {:.0}% of this client's NIC's payload ceiling",
                rate / c * 100.0
            ),
            None => String::new(),
        };
        Limit {
            stage: LimitStage::Server,
            message: format!(
                "the limit is the server's CPU: {:.0}% of {} used at the best read step \
                 ({}) while reads from its memory ran at {}{link}. A link or disk running \
                 at exactly this rate would give the same rate, not the busy CPU. A faster \
                 or less busy server would raise this; a faster link, disk or client would \
                 not.",
                cpu.busy,
                cpu.of,
                cpu.text,
                mbs(rate)
            ),
        }
    }

    fn client_limit(&self, rate: f64, cpu: f64, wait: f64) -> Limit {
        Limit {
            stage: LimitStage::Client,
            message: format!(
                "the limit is this client: its IO thread ran {cpu:.0}% and waited for a CPU \
                 {wait:.0}% of the time at {}. A faster or less busy client would raise \
                 this; a faster link, disk or server would not.",
                mbs(rate)
            ),
        }
    }

    fn latency_limit(&self, rate: f64) -> Limit {
        let rtt = self
            .round_trip_ns()
            .map(|r| format!(" with a round trip of {}", micros(r)))
            .unwrap_or_default();
        Limit {
            stage: LimitStage::Latency,
            message: format!(
                "the limit is latency: the rate still rose with queue depth ({} at the \
                 deepest){rtt}, so each IO waits on the round trip. A deeper queue or \
                 larger blocks would raise it; a faster disk would not.",
                mbs(rate)
            ),
        }
    }

    fn no_limit(&self, rate: f64) -> Limit {
        let memory = self.local && !self.cold_reached_storage();
        let text = if memory {
            format!(
                "no stage's ceiling was met: reads ran at {} from memory, and the storage \
                 stage's reads reached no disk (tmpfs, or a file system that refuses \
                 O_DIRECT): the figures are memory speed",
                mbs(rate)
            )
        } else if let Some(cold) = self
            .cold
            .map(self::rate)
            .filter(|c| *c < rate * STORAGE_SLOWER)
        {
            format!(
                "no stage's ceiling was met: reads from the server's memory reached {}; \
                 reads of a region read once ran at {} ({:.0}% of it), which slower \
                 storage would explain, but without the server's disk counters \
                 (--server-stats) its cache or a busy moment cannot be ruled out",
                mbs(rate),
                mbs(cold),
                cold / rate * 100.0
            )
        } else {
            format!(
                "no stage's ceiling was met: reads reached {} and stopped rising without \
                 filling a link, a CPU or the storage this battery can see",
                mbs(rate)
            )
        };
        Limit {
            stage: LimitStage::None,
            message: text,
        }
    }
}

/// The server's CPU at the best read step: its busy share of what it may use, what that
/// is, and the figures behind it.
struct ServerCpuShare {
    busy: f64,
    of: &'static str,
    text: String,
}

trait Direct {
    fn settings_direct(&self) -> bool;
}

impl Direct for JobResult {
    /// Whether the job asked for O_DIRECT (its options as given).
    fn settings_direct(&self) -> bool {
        self.options.iter().any(|(k, v)| k == "direct" && v == "1")
    }
}

/// "117.6 MB/s".
fn mbs(bytes_per_sec: f64) -> String {
    format!("{:.1} MB/s", bytes_per_sec / 1e6)
}

/// "61 µs", "2.50 ms".
fn micros(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.0} µs", ns / 1e3)
    }
}

fn speed_text(mbps: u64) -> String {
    LinkCeiling::new(mbps, 1500).speed_text()
}

/// The engines' round-trip detail ("61 µs", "2.50 ms") in ns.
fn parse_duration_ns(text: &str) -> Option<f64> {
    let (n, unit) = text.split_once(' ')?;
    let n: f64 = n.parse().ok()?;
    match unit {
        "µs" => Some(n * 1e3),
        "ms" => Some(n * 1e6),
        _ => None,
    }
}

#[cfg(test)]
#[path = "diagnose_tests.rs"]
mod tests;
