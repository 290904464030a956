//! `--server-stats snmp://[community@]host[:port]` (or `snmpv3://user@host[:port]`): a
//! thread of its own reads the server's
//! CPU (UCD-SNMP-MIB ssCpuRaw*, HOST-RESOURCES-MIB hrProcessorLoad), NICs (IF-MIB 64-bit
//! octet counters) and disks (UCD-DISKIO-MIB) about once a second while the run goes, so
//! the verdicts can name the server's CPU, link or disks as the limit. The workers never
//! see it: no per-IO work. The community comes from the URL or STORBENCH_SNMP_COMMUNITY
//! (default `public`); an SNMPv3 user's passwords from STORBENCH_SNMP_AUTH and
//! STORBENCH_SNMP_PRIV, or the files STORBENCH_SNMP_AUTH_FILE and STORBENCH_SNMP_PRIV_FILE
//! name. None is ever shown or stored.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use storbench_model::result::{ServerDisk, ServerNic, ServerSample, ServerStats};
use storbench_snmp::client::Secrets;
use storbench_snmp::{Client, Oid, SnmpUrl, Value};

/// How often the server is read.
const PERIOD: Duration = Duration::from_secs(1);
/// Each request's wait for an answer, and tries: a reading that gets no answer costs at
/// most 1.5 s, so the end of a run never waits long for a dead agent.
const TIMEOUT: Duration = Duration::from_millis(750);
const TRIES: u32 = 2;
/// Runs shorter than this wait (at most [`REFRESH_WAIT`]) after their end for the agent's
/// next refresh of its CPU ticks, so the CPU figure covers the whole run: net-snmp
/// refreshes them every 5 s, which would leave a short run's figure mostly before it.
const SHORT_RUN: Duration = Duration::from_secs(30);
const REFRESH_WAIT: Duration = Duration::from_secs(6);
/// The kernel's USER_HZ, the unit of ssCpuRaw* ticks on Linux.
const TICKS_PER_S: u64 = 100;

const SS_CPU_RAW: &str = "1.3.6.1.4.1.2021.11";
/// ssCpuRawUser, Nice, System, Idle, Wait, Steal (.0 instances).
const CPU_ARCS: [u32; 6] = [50, 51, 52, 53, 54, 64];
const HR_PROCESSOR_LOAD: &str = "1.3.6.1.2.1.25.3.3.1.2";
/// hrDeviceType, whose value hrDeviceProcessor marks each CPU.
const HR_DEVICE_TYPE: &str = "1.3.6.1.2.1.25.3.2.1.2";
const HR_DEVICE_PROCESSOR: &str = "1.3.6.1.2.1.25.3.1.3";
const IF_TYPE: &str = "1.3.6.1.2.1.2.2.1.3";
const IF_NAME: &str = "1.3.6.1.2.1.31.1.1.1.1";
const IF_HC_IN: &str = "1.3.6.1.2.1.31.1.1.1.6";
const IF_HC_OUT: &str = "1.3.6.1.2.1.31.1.1.1.10";
const IF_HIGH_SPEED: &str = "1.3.6.1.2.1.31.1.1.1.15";
/// ifType softwareLoopback: its traffic never leaves the server.
const LOOPBACK: u64 = 24;
const DISK_DEVICE: &str = "1.3.6.1.4.1.2021.13.15.1.1.2";
const DISK_READ_X: &str = "1.3.6.1.4.1.2021.13.15.1.1.12";
const DISK_WRITTEN_X: &str = "1.3.6.1.4.1.2021.13.15.1.1.13";
const DISK_BUSY: &str = "1.3.6.1.4.1.2021.13.15.1.1.14";

fn oid(s: &str) -> Oid {
    Oid::parse(s).expect("a constant OID")
}

/// Parses the flag's value; a bad URL is one line before anything runs.
pub fn parse(text: &str) -> anyhow::Result<SnmpUrl> {
    SnmpUrl::parse(text).map_err(|e| anyhow::anyhow!("--server-stats: {e}"))
}

/// The same for clap, whose message names the flag itself.
pub fn parse_for_clap(text: &str) -> Result<SnmpUrl, String> {
    SnmpUrl::parse(text).map_err(|e| e.to_string())
}

/// A running sampler; [`Sampler::finish`] stops it and returns what it read.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<ServerStats>,
}

/// Opens the agent and takes the first reading before the run starts: an agent that does
/// not answer is one error line before any IO, not an unknown after a long run.
pub fn start(url: &SnmpUrl) -> anyhow::Result<Sampler> {
    let fail =
        |e: storbench_snmp::Error| anyhow::anyhow!("--server-stats {url}: {e}; nothing was run");
    let secrets = Secrets {
        community: secret("STORBENCH_SNMP_COMMUNITY")?,
        auth: secret("STORBENCH_SNMP_AUTH")?,
        privacy: secret("STORBENCH_SNMP_PRIV")?,
    };
    let mut client = Client::open_with(url, secrets, TIMEOUT, TRIES).map_err(fail)?;
    let tables = Tables::discover(&mut client).map_err(fail)?;
    let first = read(&mut client, &tables).map_err(fail)?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let source = url.to_string();
    let handle = std::thread::Builder::new()
        .name("server-stats".into())
        .spawn(move || sample(client, tables, first, source, &flag))?;
    Ok(Sampler { stop, handle })
}

/// A secret from the variable `var`, else from the first line of the file `var`_FILE
/// names; an unreadable file is one line naming the variable (never the secret).
fn secret(var: &str) -> anyhow::Result<Option<Vec<u8>>> {
    if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
        return Ok(Some(v.into_encoded_bytes()));
    }
    let file_var = format!("{var}_FILE");
    let Some(path) = std::env::var_os(&file_var).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let text = std::fs::read(&path).map_err(|e| {
        anyhow::anyhow!(
            "--server-stats: {file_var} ({}): {e}",
            path.to_string_lossy()
        )
    })?;
    let line = text.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    Ok((!line.is_empty()).then(|| line.to_vec()))
}

impl Sampler {
    /// Takes a last reading and returns the server's figures over the run.
    pub fn finish(self) -> ServerStats {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_else(|_| ServerStats {
            error: Some("the sampling thread failed".into()),
            ..ServerStats::default()
        })
    }
}

/// What the agent has, found once: interface names, speeds and types, disk names.
struct Tables {
    /// The server's CPUs (HOST-RESOURCES-MIB's device table), when it lists them.
    ncpus: Option<u32>,
    nics: Vec<(u32, String, u64)>,
    disks: Vec<(u32, String)>,
    disk_busy: bool,
    /// What the agent lacks, for the figures' `error`.
    missing: Vec<String>,
}

impl Tables {
    fn discover(c: &mut Client) -> Result<Tables, storbench_snmp::Error> {
        let names = by_index(c.walk(&oid(IF_NAME))?, &oid(IF_NAME));
        let types = by_index(c.walk(&oid(IF_TYPE))?, &oid(IF_TYPE));
        let speeds = by_index(c.walk(&oid(IF_HIGH_SPEED))?, &oid(IF_HIGH_SPEED));
        let nics = names
            .iter()
            .filter(|(i, _)| number(&types, *i) != Some(LOOPBACK))
            .filter_map(|(i, v)| Some((*i, v.as_text()?, number(&speeds, *i).unwrap_or(0))))
            .collect::<Vec<_>>();
        let disks: Vec<(u32, String)> = by_index(c.walk(&oid(DISK_DEVICE))?, &oid(DISK_DEVICE))
            .into_iter()
            .filter_map(|(i, v)| Some((i, v.as_text()?)))
            .collect();
        let disk_busy = !c.walk(&oid(DISK_BUSY))?.is_empty();
        let processor = Value::Oid(oid(HR_DEVICE_PROCESSOR));
        let ncpus = c
            .walk(&oid(HR_DEVICE_TYPE))?
            .iter()
            .filter(|(_, v)| *v == processor)
            .count();
        let mut missing = Vec::new();
        if nics.is_empty() {
            missing.push("no interfaces in IF-MIB's ifXTable".to_string());
        }
        if disks.is_empty() {
            missing.push("no disks in UCD-DISKIO-MIB".to_string());
        }
        Ok(Tables {
            ncpus: u32::try_from(ncpus).ok().filter(|n| *n > 0),
            nics,
            disks,
            disk_busy,
            missing,
        })
    }
}

/// One reading of the counters.
struct Reading {
    at: Instant,
    /// (busy, total) CPU ticks over all CPUs, when the agent has UCD-SNMP-MIB.
    cpu: Option<(u32, u32)>,
    nics: Vec<(u64, u64)>,
    disks: Vec<(u64, u64, Option<u64>)>,
}

/// (busy, total) CPU ticks over all CPUs, when the agent has UCD-SNMP-MIB.
fn read_cpu(c: &mut Client) -> Result<Option<(u32, u32)>, storbench_snmp::Error> {
    let cpu_oids: Vec<Oid> = CPU_ARCS
        .iter()
        .map(|a| oid(&format!("{SS_CPU_RAW}.{a}.0")))
        .collect();
    let cpu = c.get(&cpu_oids)?;
    let tick = |i: usize| cpu.get(i).and_then(|(_, v)| v.as_u64()).map(|v| v as u32);
    Ok(match (tick(0), tick(1), tick(2), tick(3), tick(4)) {
        (Some(u), Some(n), Some(s), Some(idle), Some(w)) => {
            let steal = tick(5).unwrap_or(0);
            let busy = u.wrapping_add(n).wrapping_add(s).wrapping_add(steal);
            Some((busy, busy.wrapping_add(idle).wrapping_add(w)))
        }
        _ => None,
    })
}

/// The agent's first CPU ticks that differ from `last` (its next refresh), polled for at
/// most [`REFRESH_WAIT`]; `None` when none came.
fn next_refresh(c: &mut Client, last: (u32, u32)) -> Option<(u32, u32)> {
    let deadline = Instant::now() + REFRESH_WAIT;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        match read_cpu(c) {
            Ok(Some(t)) if t != last => return Some(t),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

fn read(c: &mut Client, t: &Tables) -> Result<Reading, storbench_snmp::Error> {
    let at = Instant::now();
    let cpu = read_cpu(c)?;
    let rx = by_index(c.walk(&oid(IF_HC_IN))?, &oid(IF_HC_IN));
    let tx = by_index(c.walk(&oid(IF_HC_OUT))?, &oid(IF_HC_OUT));
    let nics = t
        .nics
        .iter()
        .map(|(i, _, _)| (number(&rx, *i).unwrap_or(0), number(&tx, *i).unwrap_or(0)))
        .collect();
    let rd = by_index(c.walk(&oid(DISK_READ_X))?, &oid(DISK_READ_X));
    let wr = by_index(c.walk(&oid(DISK_WRITTEN_X))?, &oid(DISK_WRITTEN_X));
    let busy = if t.disk_busy {
        by_index(c.walk(&oid(DISK_BUSY))?, &oid(DISK_BUSY))
    } else {
        Vec::new()
    };
    let disks = t
        .disks
        .iter()
        .map(|(i, _)| {
            (
                number(&rd, *i).unwrap_or(0),
                number(&wr, *i).unwrap_or(0),
                number(&busy, *i),
            )
        })
        .collect();
    Ok(Reading {
        at,
        cpu,
        nics,
        disks,
    })
}

/// A column's rows by their single-arc index.
fn by_index(rows: Vec<(Oid, Value)>, column: &Oid) -> Vec<(u32, Value)> {
    rows.into_iter()
        .filter_map(|(o, v)| match o.suffix(column) {
            Some([i]) => Some((*i, v)),
            _ => None,
        })
        .collect()
}

fn number(rows: &[(u32, Value)], index: u32) -> Option<u64> {
    rows.iter().find(|(i, _)| *i == index)?.1.as_u64()
}

/// The thread: a reading about once a second until told to stop, then a last one.
fn sample(
    mut c: Client,
    tables: Tables,
    first: Reading,
    source: String,
    stop: &AtomicBool,
) -> ServerStats {
    let mut errors: Vec<String> = tables.missing.clone();
    if first.cpu.is_none() {
        errors.push("no CPU ticks in UCD-SNMP-MIB (ssCpuRaw)".into());
    }
    let mut readings = vec![first];
    let mut next = readings[0].at + PERIOD;
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        if !stopping && Instant::now() < next {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        match read(&mut c, &tables) {
            Ok(r) => readings.push(r),
            Err(e) if errors.iter().all(|x| *x != e.to_string()) => errors.push(e.to_string()),
            Err(_) => {}
        }
        if stopping {
            break;
        }
        next += PERIOD;
    }
    let loads: Vec<u32> = c
        .walk(&oid(HR_PROCESSOR_LOAD))
        .map(|rows| {
            rows.iter()
                .filter_map(|(_, v)| v.as_u64().map(|l| l.min(100) as u32))
                .collect()
        })
        .unwrap_or_default();
    let mut stats = summarise(&tables, &readings);
    let (first, last) = (&readings[0], &readings[readings.len() - 1]);
    let mut stale = false;
    if last.at.duration_since(first.at) < SHORT_RUN
        && let (Some(start), Some(end)) = (first.cpu, last.cpu)
        && let Some(after) = next_refresh(&mut c, end)
    {
        // The ticks from the refresh before the run to the first after it: the whole run
        // and what the agent's 5 s period adds around it, stated as such.
        let busy = after.0.wrapping_sub(start.0);
        let total = after.1.wrapping_sub(start.1);
        let span_ms = tables
            .ncpus
            .map(|n| u64::from(total) * 1000 / TICKS_PER_S / u64::from(n));
        // At most one refresh period before the first reading, plus the wait.
        let most = first.at.elapsed() + Duration::from_secs(6);
        if span_ms.is_some_and(|ms| ms > most.as_millis() as u64) {
            stats.cpu_busy_percent = None;
            stale = true;
            errors.push(format!(
                "the agent's CPU ticks span {:.0} s from before the run, more than the {:.0} s it can have been (an agent started moments ago had not refreshed them yet)",
                span_ms.unwrap_or(0) as f64 / 1000.0,
                most.as_secs_f64()
            ));
        } else if total > 0 {
            stats.cpu_busy_percent = Some(f64::from(busy) * 100.0 / f64::from(total));
            stats.cpu_span_ms = span_ms;
        }
    }
    if stats.cpu_busy_percent.is_none() && !stale && readings[0].cpu.is_some() {
        errors.push(
            "the agent's CPU ticks did not move during the run nor within 6 s after it".into(),
        );
    }
    stats.source = source;
    stats.cpu_loads = loads;
    if !errors.is_empty() {
        stats.error = Some(errors.join("; "));
    }
    stats
}

fn summarise(t: &Tables, r: &[Reading]) -> ServerStats {
    let (first, last) = (&r[0], &r[r.len() - 1]);
    let ms = |a: &Reading, b: &Reading| b.at.duration_since(a.at).as_millis() as u64;
    let cpu = |a: &Reading, b: &Reading| {
        let ((b0, t0), (b1, t1)) = (a.cpu?, b.cpu?);
        let total = t1.wrapping_sub(t0);
        (total > 0).then(|| f64::from(b1.wrapping_sub(b0)) * 100.0 / f64::from(total))
    };
    let duration_ms = ms(first, last);
    let samples = r
        .windows(2)
        .filter(|w| ms(&w[0], &w[1]) > 0)
        .map(|w| {
            let secs = ms(&w[0], &w[1]) as f64 / 1000.0;
            let sum = |f: &dyn Fn(&Reading) -> u64| f(&w[1]).saturating_sub(f(&w[0])) as f64 / secs;
            let busiest = (0..t.disks.len())
                .filter_map(|i| {
                    let d = w[1].disks[i].2?.saturating_sub(w[0].disks[i].2?);
                    Some(d as f64 / 1e4 / secs)
                })
                .reduce(f64::max);
            ServerSample {
                t_ms: ms(first, &w[1]),
                cpu_busy_percent: cpu(&w[0], &w[1]),
                rx_bytes_per_s: sum(&|x| x.nics.iter().map(|n| n.0).sum()),
                tx_bytes_per_s: sum(&|x| x.nics.iter().map(|n| n.1).sum()),
                disk_read_bytes_per_s: sum(&|x| x.disks.iter().map(|d| d.0).sum()),
                disk_write_bytes_per_s: sum(&|x| x.disks.iter().map(|d| d.1).sum()),
                disk_busy_percent: busiest.map(|b| b.min(100.0)),
            }
        })
        .collect();
    let nics = t
        .nics
        .iter()
        .enumerate()
        .map(|(i, (_, name, speed))| ServerNic {
            name: name.clone(),
            speed_mbps: *speed,
            rx_bytes: last.nics[i].0.saturating_sub(first.nics[i].0),
            tx_bytes: last.nics[i].1.saturating_sub(first.nics[i].1),
        })
        .filter(|n| n.rx_bytes + n.tx_bytes > 0)
        .collect();
    let disks = t
        .disks
        .iter()
        .enumerate()
        .map(|(i, (_, name))| ServerDisk {
            name: name.clone(),
            read_bytes: last.disks[i].0.saturating_sub(first.disks[i].0),
            write_bytes: last.disks[i].1.saturating_sub(first.disks[i].1),
            busy_us: match (first.disks[i].2, last.disks[i].2) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                _ => None,
            },
        })
        .filter(|d| d.read_bytes + d.write_bytes > 0)
        .collect();
    ServerStats {
        duration_ms,
        cpu_busy_percent: cpu(first, last),
        ncpus: t.ncpus,
        nics,
        disks,
        samples,
        ..ServerStats::default()
    }
}
