//! The README's examples run as written. Every command of its `sh` code blocks (and each
//! `$ storbench …` line of its other blocks) is run through `sh -c`, in README order, with
//! the storbench under test first on `PATH`, a scratch `HOME` and results database:
//!
//! - local ones on a tmpfs (a directory on /dev/shm stands for `/mnt/pool`);
//! - network ones against real servers on 127.0.0.1 (ganesha registered with rpcbind,
//!   smbd, tgtd, nbdkit, snmpd), with `nas.lan` resolved as storbench resolves every name:
//!   from /etc/hosts, here a file bind-mounted over it in a mount namespace of the run's
//!   own. What the test servers cannot take as written is substituted in the command and
//!   listed per server below ([`Server::substitutions`]): their ports (the test servers'
//!   private ones, where the example relies on the protocol's default), the SMB user,
//!   share and password, the SNMP community and SNMPv3 user.
//!
//! An example that cannot run here is listed in [`NOT_RUN`] with the reason; a new
//! example is run by the group its text falls in, so none is left out silently.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Run;
use storbench_testkit::ganesha::{self, Ganesha};
use storbench_testkit::nbdkit::{self, Nbdkit};
use storbench_testkit::require;
use storbench_testkit::smbd::{self, Smbd};
use storbench_testkit::snmpd::{self, Snmpd};
use storbench_testkit::tgtd::{self, OneLun};

const README: &str = include_str!("../../../README.md");

/// The longest one example may take (`timeout`'s form), on a busy machine.
const EXAMPLE_LIMIT: &str = "240";

/// Run lengths cut short: the examples' times are what a user waits for (the quick set
/// with its defaults is 40 s of tests); here every command line runs as written but for
/// these, in the README's order. The defaults themselves are run by quick_run.rs.
const SHORTER: [(&str, &str); 5] = [
    ("--runtime 2s", "--runtime 1s"),
    ("--runtime=10", "--runtime=2"),
    ("--ramp_time=2", "--ramp_time=1"),
    ("--budget 20s", "--budget 10s"),
    ("--budget 15s", "--budget 10s"),
];

/// `command` with [`SHORTER`]'s lengths, and a quick run without a time or a size given
/// one second per test and 256 MiB (before its arguments: an example may end in a comment).
fn shortened(command: &str) -> String {
    let mut text = command.to_string();
    for (from, to) in SHORTER {
        text = text.replace(from, to);
    }
    if text.contains("storbench quick ") {
        let mut added = String::from("storbench quick ");
        if !text.contains("--runtime") {
            added.push_str("--runtime 1s ");
        }
        if !text.contains("--size") {
            added.push_str("--size 256m ");
        }
        text = text.replacen("storbench quick ", &added, 1);
    }
    text
}

/// Examples that are not run, each with why (matched by the start of the command).
const NOT_RUN: [(&str, &str); 3] = [
    (
        "cargo run --release -- quick",
        "builds the release binary (minutes); the quick set it runs is the first example of \"Using it\"",
    ),
    ("./test.sh", "the whole test suite, this test among them"),
    (
        "bench-fio ",
        "fio-plot's bench-fio runs its matrix of jobs for minutes; fio_dropin.rs runs bench-fio through the fio link",
    ),
];

/// The README's commands: in `sh` blocks every line that is not a comment, continuation
/// lines joined; in other blocks the `$ storbench …` lines.
fn readme_examples() -> Vec<String> {
    let mut out = Vec::new();
    let mut block: Option<bool> = None;
    let mut command = String::new();
    for line in README.lines() {
        if let Some(lang) = line.trim_start().strip_prefix("```") {
            block = match block {
                None => Some(lang.trim() == "sh"),
                Some(_) => None,
            };
            continue;
        }
        match block {
            Some(true) => {
                let line = line.trim();
                if command.is_empty() && (line.is_empty() || line.starts_with('#')) {
                    continue;
                }
                let (text, more) = match line.strip_suffix('\\') {
                    Some(t) => (t.trim_end(), true),
                    None => (line, false),
                };
                if !command.is_empty() {
                    command.push(' ');
                }
                command.push_str(text);
                if !more {
                    out.push(std::mem::take(&mut command));
                }
            }
            Some(false) => {
                if let Some(c) = line
                    .strip_prefix("$ ")
                    .filter(|c| c.starts_with("storbench"))
                {
                    out.push(c.to_string());
                }
            }
            None => {}
        }
    }
    out
}

/// Which servers an example needs; `None`: it runs on the local tmpfs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    Nfs,
    Smb,
    Iscsi,
    Nbd,
    /// NFS with the server's SNMP agent.
    Snmp,
}

fn server_of(command: &str) -> Option<Server> {
    if command.contains("--server-stats") {
        Some(Server::Snmp)
    } else if command.contains("nfs://") {
        Some(Server::Nfs)
    } else if command.contains("smb://") || command.contains("storbench smb ") {
        Some(Server::Smb)
    } else if command.contains("iscsi") {
        Some(Server::Iscsi)
    } else if command.contains("nbd://") {
        Some(Server::Nbd)
    } else {
        None
    }
}

fn not_run(command: &str) -> Option<&'static str> {
    NOT_RUN
        .iter()
        .find(|(start, _)| command.starts_with(start))
        .map(|(_, why)| *why)
}

/// The examples of one group, in README order, without those not run.
fn examples_of(server: Option<Server>) -> Vec<String> {
    readme_examples()
        .into_iter()
        .filter(|c| not_run(c).is_none() && server_of(c) == server)
        .collect()
}

/// Every example is run by one group or listed as not run, and every listed one is still
/// in the README.
#[test]
fn every_readme_example_is_run_or_listed_with_its_reason() {
    let all = readme_examples();
    assert!(all.len() >= 30, "{all:#?}");
    for (start, _) in NOT_RUN {
        assert!(
            all.iter().any(|c| c.starts_with(start)),
            "{start} is listed as not run but is no longer in the README"
        );
    }
    let groups = [
        None,
        Some(Server::Nfs),
        Some(Server::Smb),
        Some(Server::Iscsi),
        Some(Server::Nbd),
        Some(Server::Snmp),
    ];
    let run: usize = groups.iter().map(|g| examples_of(*g).len()).sum();
    let listed = all.iter().filter(|c| not_run(c).is_some()).count();
    assert_eq!(run + listed, all.len(), "{all:#?}");
    // Every storbench subcommand the README shows is among those run.
    for sub in [
        "quick", "fio", "bonnie", "history", "compare", "report", "show",
    ] {
        assert!(
            groups.iter().flat_map(|g| examples_of(*g)).any(|c| {
                let words: Vec<&str> = c.split_whitespace().collect();
                words.windows(2).any(|w| w == ["storbench", sub])
            }),
            "no example of {sub} is run"
        );
    }
}

/// A scratch home where the examples run: the working directory, `HOME`, the results
/// database, and `/mnt/pool` on a tmpfs.
struct Home {
    dir: tempfile::TempDir,
    pool: tempfile::TempDir,
    path: String,
    /// A hosts file to bind over /etc/hosts (network examples).
    hosts: Option<PathBuf>,
    /// (README text, what runs here instead).
    subs: Vec<(String, String)>,
    env: Vec<(String, String)>,
}

impl Home {
    fn new() -> Option<Home> {
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        require!(
            mounts
                .lines()
                .any(|l| l.split(' ').nth(1) == Some("/dev/shm") && l.contains(" tmpfs ")),
            "/dev/shm is not a tmpfs here"
        );
        let dir = tempfile::tempdir().unwrap();
        // ~/bin first, where the drop-in example links fio.
        let bin = PathBuf::from(env!("CARGO_BIN_EXE_storbench"));
        let path = format!(
            "{}:{}:{}",
            dir.path().join("bin").display(),
            bin.parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let home = Home {
            dir,
            pool: tempfile::tempdir_in("/dev/shm").unwrap(),
            path,
            hosts: None,
            subs: Vec::new(),
            env: Vec::new(),
        };
        std::fs::create_dir(home.dir.path().join("bin")).unwrap();
        Some(home)
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Runs `command` as written, but for `/mnt/pool` and the substitutions.
    fn run(&self, command: &str) -> Run {
        let mut text =
            shortened(command).replace("/mnt/pool", &self.pool.path().display().to_string());
        for (from, to) in &self.subs {
            text = text.replace(from.as_str(), to);
        }
        let mut c = match &self.hosts {
            Some(hosts) => {
                let mut c = Command::new("timeout");
                c.args([
                    EXAMPLE_LIMIT,
                    "unshare",
                    "--mount",
                    "--propagation",
                    "private",
                ])
                .args(["--", "sh", "-c"])
                .arg(format!(
                    "mount --bind {} /etc/hosts && exec sh -c \"$0\"",
                    hosts.display()
                ))
                .arg(&text);
                c
            }
            None => {
                let mut c = Command::new("timeout");
                c.args([EXAMPLE_LIMIT, "sh", "-c", &text]);
                c
            }
        };
        c.current_dir(self.root())
            .env("HOME", self.root())
            .env("PATH", &self.path)
            .env("STORBENCH_DB", self.root().join("results.db"))
            .env_remove("COLUMNS")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null());
        let run = Run::from(c.output().expect("sh runs"));
        assert_eq!(
            run.code,
            Some(0),
            "{command}\nran as: {text}\nstdout:\n{}\nstderr:\n{}",
            run.stdout,
            run.stderr
        );
        common::assert_no_panic(&run.stderr);
        run
    }

    /// Runs every example of `server`'s group.
    fn run_group(&self, server: Option<Server>) -> Vec<(String, Run)> {
        let examples = examples_of(server);
        assert!(!examples.is_empty(), "{server:?}");
        examples
            .into_iter()
            .map(|c| {
                let run = self.run(&c);
                (c, run)
            })
            .collect()
    }

    /// `nas.lan` as 127.0.0.1, through a hosts file bound over /etc/hosts.
    fn with_nas(&mut self) {
        let hosts = self.root().join("hosts");
        std::fs::write(&hosts, "127.0.0.1 localhost\n127.0.0.1 nas.lan\n").unwrap();
        self.hosts = Some(hosts);
    }

    fn sub(&mut self, from: &str, to: String) {
        self.subs.push((from.to_string(), to));
    }
}

/// What a user has before the local examples: their own job file, the outputs of fio and
/// bonnie++ and another machine's database to import, and runs labelled as the history
/// examples name them (`ssd-pool`; `vda-ext4` and `shm-tmpfs` of the compare excerpt).
fn user_files(home: &Home) {
    let pool = home.pool.path().display();
    std::fs::create_dir(home.root().join("jobs")).unwrap();
    std::fs::write(
        home.root().join("jobs/mixed.fio"),
        format!(
            "[global]\ndirectory={pool}\nsize=64m\nruntime=2\ntime_based\n\n\
             [reads]\nrw=randread\nbs=4k\n\n[writes]\nrw=randwrite\nbs=64k\n"
        ),
    )
    .unwrap();
    let made = [
        "storbench fio --ioengine=null --name=w --size=16m --output-format=json --output=fio-output.json --no-save".to_string(),
        format!("storbench bonnie -d {pool} -s 64 -r 0 -n 1 -f -q --no-save > bonnie-lines.csv"),
        "mkdir other-machine && STORBENCH_DB=other-machine/results.db storbench fio --ioengine=null --name=o --size=16m --label other".to_string(),
        format!("storbench quick {pool} --size 64m --runtime 1s --label ssd-pool"),
        format!("storbench quick {pool} --tests RND4K-Q32T1 --size 64m --runtime 1s --label vda-ext4"),
        format!("storbench quick {pool} --tests RND4K-Q32T1 --size 64m --runtime 1s --label shm-tmpfs"),
    ];
    for command in made {
        home.run(&command);
    }
}

/// The local examples, in README order: quick, fio and bonnie on the tmpfs, the drop-in
/// fio link, history, comparison, reports, export and import, clean.
#[test]
fn local_readme_examples_run_as_written() {
    let Some(home) = Home::new() else { return };
    user_files(&home);
    let runs = home.run_group(None);
    let out = |start: &str| {
        &runs
            .iter()
            .find(|(c, _)| c.starts_with(start))
            .unwrap_or_else(|| panic!("no example {start}"))
            .1
    };
    assert!(
        out("fio --version").stdout.contains("fio-3.33 (storbench"),
        "{}",
        out("fio --version").stdout
    );
    let excerpt = out("storbench compare vda-ext4 shm-tmpfs");
    for line in ["RND4K Q32T1 read", "bandwidth MB/s", "IOPS"] {
        assert!(excerpt.stdout.contains(line), "{line}:\n{}", excerpt.stdout);
    }
    assert!(out("storbench history").stdout.contains("hdd-pool"));
    for file in ["result.json", "pools.html", "card.png", "ssd.sbr"] {
        let meta = std::fs::metadata(home.root().join(file));
        assert!(meta.is_ok_and(|m| m.len() > 0), "{file} not written");
    }
    // quick and bonnie remove their files; fio keeps its own (unlink=0), as fio does.
    let leftovers = common::entries(home.pool.path());
    assert!(
        leftovers.iter().all(|f| f.starts_with("randrw.")
            || f.starts_with("reads.")
            || f.starts_with("writes.")),
        "{leftovers:?}"
    );
}

/// Network examples need root: /etc/hosts is replaced in a mount namespace.
fn network_home() -> Option<Home> {
    if !common::system::root_or_skip("a mount namespace with its own /etc/hosts") {
        return None;
    }
    let mut home = Home::new()?;
    home.with_nas();
    Some(home)
}

/// The NFS examples, and the server-stats ones over NFS, against one ganesha registered
/// with rpcbind (so `nfs://nas.lan/export/…` needs no port) and snmpd. Substituted: the
/// agent's port, its community for `s3cret`, and its SNMPv3 user `sbsha256` for `bench`.
#[test]
fn nfs_readme_examples_run_against_ganesha_and_snmpd() {
    require!(ganesha::unavailable());
    require!(snmpd::unavailable());
    let Some(mut home) = network_home() else {
        return;
    };
    let g = Ganesha::start_registered().expect("ganesha starts");
    std::fs::create_dir_all(g.export_dir().join("bench")).unwrap();
    home.run_group(Some(Server::Nfs));
    let port = storbench_testkit::ports::free_port().unwrap();
    let agent = Snmpd::start_at("127.0.0.1", port, None).expect("snmpd starts");
    home.sub("s3cret", agent.community.clone());
    home.sub("snmp://nas.lan", format!("snmp://nas.lan:{port}"));
    home.sub(
        "snmpv3://bench@nas.lan",
        format!("snmpv3://sbsha256@nas.lan:{port}"),
    );
    std::fs::write(home.root().join(".nas-auth"), snmpd::AUTH_PASSWORD).unwrap();
    std::fs::write(home.root().join(".nas-priv"), snmpd::PRIV_PASSWORD).unwrap();
    // An agent that does not answer, or refuses the user, fails the run before any IO.
    home.run_group(Some(Server::Snmp));
    let left = common::entries(&g.export_dir().join("bench"));
    assert!(left.is_empty(), "{left:?}");
}

/// The SMB examples against smbd. Substituted: its port, its user for `alice`, its share
/// for `data` and its password for `...`, which the fio example takes from the
/// environment the quick example set.
#[test]
fn smb_readme_examples_run_against_smbd() {
    require!(smbd::unavailable());
    let Some(mut home) = network_home() else {
        return;
    };
    let s = Smbd::start().expect("smbd starts");
    std::fs::create_dir_all(s.share_dir(smbd::SHARE).join("bench")).unwrap();
    home.sub("nas.lan", format!("nas.lan:{}", s.port));
    home.sub("alice@", format!("{}@", s.user()));
    home.sub("/data/", format!("/{}/", smbd::SHARE));
    home.sub(
        "STORBENCH_SMB_PASSWORD=...",
        format!("STORBENCH_SMB_PASSWORD={}", s.password()),
    );
    home.env
        .push(("STORBENCH_SMB_PASSWORD".into(), s.password().into()));
    home.run_group(Some(Server::Smb));
    let left = common::entries(&s.share_dir(smbd::SHARE).join("bench"));
    assert!(left.is_empty(), "{left:?}");
}

/// The iSCSI examples against tgtd serving the README's IQN. Substituted: its port.
#[test]
fn iscsi_readme_examples_run_against_tgtd() {
    require!(tgtd::unavailable());
    let Some(mut home) = network_home() else {
        return;
    };
    let Some(lun) = OneLun::start("iqn.2026-11.lab:disk", 1 << 30) else {
        return;
    };
    home.sub("nas.lan", format!("nas.lan:{}", lun.tgtd.port()));
    home.run_group(Some(Server::Iscsi));
    lun.assert_no_session_left();
}

/// The NBD example against nbdkit's memory disk. Substituted: its port.
#[test]
fn nbd_readme_examples_run_against_nbdkit() {
    require!(nbdkit::unavailable());
    let Some(mut home) = network_home() else {
        return;
    };
    let n = Nbdkit::memory("1G").expect("nbdkit starts");
    home.sub("nas.lan", format!("nas.lan:{}", n.port()));
    home.run_group(Some(Server::Nbd));
}
