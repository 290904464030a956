//! fio's net engine against the installed fio 3.33 as the peer, both ways: storbench
//! listens and fio sends, fio listens and storbench sends, over TCP, UDP and a Unix
//! socket, with the bytes each side moved compared; a 1 Gbit/s link (a network namespace
//! whose egress is shaped to 984 Mbit/s) filled by the engine; bad input refused in one
//! line. Skipped with a reason when fio 3.33 is missing.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::system::wait_for;
use common::{Run, fio_available, storbench, words};
use serde_json::Value;
use storbench_testkit::netns::{self, NetNs};
use storbench_testkit::ports::free_port;

/// 1 Gbit/s Ethernet's TCP payload ceiling at MTU 1500, MB/s.
const GBIT_PAYLOAD_MBS: f64 = 117.7;

/// Which tool runs a side.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tool {
    Fio,
    Storbench,
}

/// One side's command: `args` (a job as words) for `tool`, in namespace `ns` if given.
fn side(tool: Tool, args: &str, dir: &Path, ns: Option<&NetNs>) -> Command {
    let program = match tool {
        Tool::Fio => "fio".to_string(),
        Tool::Storbench => assert_cmd::cargo::cargo_bin("storbench")
            .display()
            .to_string(),
    };
    let mut c = match ns {
        Some(ns) => ns.command(&program),
        None => {
            let mut c = storbench();
            if tool == Tool::Fio {
                c = Command::new("fio");
            }
            c
        }
    };
    if tool == Tool::Storbench {
        c.env("NO_COLOR", "1").arg("fio").arg("--no-save");
    }
    c.current_dir(dir)
        .args(words(args))
        .arg("--output-format=json");
    c
}

/// Whether something listens on `port` (TCP or UDP) or at Unix socket `port` names, seen
/// from `ns` (or the host).
fn listening(what: &str, ns: Option<&NetNs>) -> bool {
    let argv = ["ss", "-lnH", "-t", "-u", "-x"];
    let out = match ns {
        Some(ns) => ns.exec_ok(&argv).map(|o| o.stdout),
        None => Command::new(argv[0])
            .args(&argv[1..])
            .output()
            .map(|o| o.stdout),
    };
    let text = String::from_utf8_lossy(&out.unwrap_or_default()).into_owned();
    text.split_whitespace().any(|w| w.ends_with(what))
}

/// Runs `listener` until it listens at `at`, then `sender` to its end, then waits for the
/// listener; both runs.
fn pair(mut listener: Command, at: &str, ns: Option<&NetNs>, mut sender: Command) -> (Run, Run) {
    let l = std::thread::spawn(move || Run::of(&mut listener));
    let ready = wait_for(Duration::from_secs(20), || listening(at, ns));
    assert!(ready, "the listener never listened at {at}");
    let s = Run::of(&mut sender);
    (l.join().unwrap(), s)
}

/// The first job's section for `dir` ("read" or "write") of either tool's JSON, from a
/// run that ended without an error.
fn dir_of(run: &Run, who: &str, dir: &str) -> Value {
    assert!(
        run.success(),
        "{who} failed ({:?}):\n{}\n{}",
        run.code,
        run.stdout,
        run.stderr
    );
    section(run, who, dir, 0)
}

/// The first job's section for `dir` of a run whose job ended with error `errno`.
fn section(run: &Run, who: &str, dir: &str, errno: u64) -> Value {
    let start = run.stdout.find("{\n").expect("a JSON document");
    let doc: Value = serde_json::from_str(&run.stdout[start..])
        .unwrap_or_else(|e| panic!("{who}: bad JSON ({e}): {}", run.stdout));
    assert_eq!(doc["jobs"][0]["error"], errno, "{who}: {}", run.stdout);
    doc["jobs"][0][dir].clone()
}

fn bytes(v: &Value) -> u64 {
    v["io_bytes"].as_u64().unwrap()
}

/// A TCP receiver's blocks that came whole: fio counts a block a short read left
/// unfinished as an IO of its own (`short_ios`) and takes it off its byte count, so its
/// whole blocks are what the sender's IOs were.
fn whole_blocks(v: &Value) -> u64 {
    v["total_ios"].as_u64().unwrap() - v["short_ios"].as_u64().unwrap()
}

#[test]
fn storbench_listens_and_receives_every_byte_fio_sends_over_tcp() {
    if !fio_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().unwrap();
    let rx =
        format!("--name=rx --ioengine=net --listen --port={port} --rw=read --bs=64k --size=96m");
    let tx = format!(
        "--name=tx --ioengine=net --hostname=127.0.0.1 --port={port} --rw=write --bs=64k --size=64m"
    );
    let (ours, theirs) = pair(
        side(Tool::Storbench, &rx, dir.path(), None),
        &format!(":{port}"),
        None,
        side(Tool::Fio, &tx, dir.path(), None),
    );
    let (got, sent) = (
        dir_of(&ours, "storbench", "read"),
        dir_of(&theirs, "fio", "write"),
    );
    assert_eq!(bytes(&sent), 64 << 20);
    // fio's close message after its last block ends storbench's job at fio's count.
    assert_eq!(bytes(&got), bytes(&sent), "{}", ours.stdout);
    assert_eq!(got["total_ios"], 1024);
}

#[test]
fn fio_listens_and_receives_every_block_storbench_sends_over_tcp() {
    if !fio_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().unwrap();
    let rx =
        format!("--name=rx --ioengine=net --listen --port={port} --rw=read --bs=64k --size=96m");
    let tx = format!(
        "--name=tx --ioengine=net --hostname=localhost --port={port} --rw=write --bs=64k --size=64m --nodelay=1"
    );
    let (theirs, ours) = pair(
        side(Tool::Fio, &rx, dir.path(), None),
        &format!(":{port}"),
        None,
        side(Tool::Storbench, &tx, dir.path(), None),
    );
    let (got, sent) = (
        dir_of(&theirs, "fio", "read"),
        dir_of(&ours, "storbench", "write"),
    );
    assert_eq!(bytes(&sent), 64 << 20);
    assert_eq!(sent["total_ios"], 1024);
    assert_eq!(whole_blocks(&got), 1024, "{}", theirs.stdout);
}

/// `pingpong`: the reader sends each block back and the writer waits for it, so each
/// IO's latency is a round trip; both ends count every block once.
fn pingpong_pair(listener: Tool, sender: Tool) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().unwrap();
    let rx = format!(
        "--name=rx --ioengine=net --listen --pingpong --port={port} --rw=read --bs=4k --size=4m"
    );
    let tx = format!(
        "--name=tx --ioengine=net --pingpong --hostname=127.0.0.1 --port={port} --rw=write \
         --bs=4k --size=4m"
    );
    let (l, s) = pair(
        side(listener, &rx, dir.path(), None),
        &format!(":{port}"),
        None,
        side(sender, &tx, dir.path(), None),
    );
    let got = dir_of(&l, &format!("{listener:?}"), "read");
    let sent = dir_of(&s, &format!("{sender:?}"), "write");
    assert_eq!(bytes(&sent), 4 << 20);
    assert_eq!(sent["total_ios"], 1024);
    assert_eq!(whole_blocks(&got), 1024, "{}", l.stdout);
}

#[test]
fn pingpong_storbench_answers_fio() {
    if fio_available() {
        pingpong_pair(Tool::Storbench, Tool::Fio);
    }
}

#[test]
fn pingpong_fio_answers_storbench() {
    if fio_available() {
        pingpong_pair(Tool::Fio, Tool::Storbench);
    }
}

/// A UDP pair at a modest rate: the reader's datagrams and those it counted lost (from the
/// gaps in the writer's sequence trailer) are the writer's. The writer's first datagram
/// is fio's open message, its last fio's close message, which ends the reader's job.
fn udp_pair(reader: Tool, writer: Tool) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().unwrap();
    let rx = format!(
        "--name=rx --ioengine=net --protocol=udp --port={port} --rw=read --bs=1k --size=8m"
    );
    let tx = format!(
        "--name=tx --ioengine=net --protocol=udp --hostname=127.0.0.1 --port={port} --rw=write \
         --bs=1k --size=1m --rate=1m"
    );
    let (r, w) = pair(
        side(reader, &rx, dir.path(), None),
        &format!(":{port}"),
        None,
        side(writer, &tx, dir.path(), None),
    );
    let got = dir_of(&r, &format!("{reader:?}"), "read");
    let sent = dir_of(&w, &format!("{writer:?}"), "write");
    assert_eq!(bytes(&sent), 1 << 20);
    let ios = got["total_ios"].as_u64().unwrap();
    let lost = got["drop_ios"].as_u64().unwrap();
    assert_eq!(bytes(&got), ios * 1024, "{}", r.stdout);
    // On a busy machine the loopback drops datagrams; every one not received is counted
    // lost, but for those after the last one received, which leave no gap.
    assert!(
        (1024 - 16..=1024).contains(&(ios + lost)),
        "{ios} received, {lost} lost: {}",
        r.stdout
    );
    assert!(ios >= 512, "{ios} received, {lost} lost: {}", r.stdout);
}

#[test]
fn udp_storbench_reads_what_fio_writes() {
    if fio_available() {
        udp_pair(Tool::Storbench, Tool::Fio);
    }
}

#[test]
fn udp_fio_reads_what_storbench_writes() {
    if fio_available() {
        udp_pair(Tool::Fio, Tool::Storbench);
    }
}

/// A Unix socket pair: the reader binds the path, the writer connects to it.
fn unix_pair(reader: Tool, writer: Tool) {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("net.sock");
    let job = |rw: &str, size: &str| {
        format!(
            "--name={rw} --ioengine=net --protocol=unix --filename={} --rw={rw} --bs=16k --size={size}",
            sock.display()
        )
    };
    let (r, w) = pair(
        side(reader, &job("read", "48m"), dir.path(), None),
        &sock.display().to_string(),
        None,
        side(writer, &job("write", "32m"), dir.path(), None),
    );
    let got = dir_of(&r, &format!("{reader:?}"), "read");
    // fio 3.33 sends its close message on a Unix socket with sendto(2) and an address,
    // which a connected socket refuses (EISCONN): its writer ends with that error, after
    // its data, whoever reads (a fio reader then waits for ever; storbench's ends at the
    // end of the stream).
    let sent = match writer {
        Tool::Fio => section(&w, "fio", "write", libc::EISCONN as u64),
        Tool::Storbench => dir_of(&w, "storbench", "write"),
    };
    assert_eq!(bytes(&sent), 32 << 20);
    match reader {
        Tool::Storbench => assert_eq!(bytes(&got), bytes(&sent), "{}", r.stdout),
        Tool::Fio => assert_eq!(whole_blocks(&got), 2048, "{}", r.stdout),
    }
    // The reader's socket is gone with its job.
    assert!(!sock.exists() || reader == Tool::Fio);
}

#[test]
fn unix_socket_storbench_reads_what_fio_writes() {
    if fio_available() {
        unix_pair(Tool::Storbench, Tool::Fio);
    }
}

#[test]
fn unix_socket_fio_reads_what_storbench_writes() {
    if fio_available() {
        unix_pair(Tool::Fio, Tool::Storbench);
    }
}

/// fio listens in a namespace behind a port shaped to 984 Mbit/s and sends; storbench
/// connects over the veth and receives at the link's payload rate.
#[test]
fn storbench_receives_at_the_line_rate_of_a_1_gbit_link() {
    if !fio_available() {
        return;
    }
    if let Some(why) = netns::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let ns = NetNs::create().expect("a network namespace");
    ns.shape_egress("984mbit")
        .expect("tbf on the namespace's end");
    ns.verify_route().expect("peer reached over our veth only");
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().unwrap();
    let tx =
        format!("--name=tx --ioengine=net --listen --port={port} --rw=write --bs=128k --size=384m");
    let rx = format!(
        "--name=rx --ioengine=net --hostname={} --port={port} --rw=read --bs=128k --size=256m",
        ns.ns_addr
    );
    let (theirs, ours) = pair(
        side(Tool::Fio, &tx, dir.path(), Some(&ns)),
        &format!(":{port}"),
        Some(&ns),
        side(Tool::Storbench, &rx, dir.path(), None),
    );
    let got = dir_of(&ours, "storbench", "read");
    assert_eq!(bytes(&got), 256 << 20);
    let mbs = got["bw_bytes"].as_f64().unwrap() / 1e6;
    assert!(
        (0.9 * GBIT_PAYLOAD_MBS..=GBIT_PAYLOAD_MBS * 1.02).contains(&mbs),
        "{mbs:.1} MB/s over a 984 Mbit/s link:\n{}",
        ours.stdout
    );
    // fio's sender is cut off when storbench has its 256 MiB and closes: fio 3.33 then
    // dies of SIGPIPE, which is fio's own end, not a check here.
    drop(theirs);
}

#[test]
fn bad_net_jobs_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "--name=t --ioengine=net --port=9 --rw=write --size=1m",
            "needs hostname=",
        ),
        (
            "--name=t --ioengine=net --hostname=127.0.0.1 --port=70000 --rw=write --size=1m",
            "port 70000 is out of range (1 to 65535)",
        ),
        (
            "--name=t --ioengine=net --hostname=127.0.0.1 --port=9 --protocol=sctp --rw=write --size=1m",
            "'sctp' is not one of tcp, tcpv6, udp, udpv6, unix",
        ),
        (
            "--name=t --ioengine=net --hostname=127.0.0.1 --rw=write --size=1m",
            "protocol=tcp needs port=",
        ),
        (
            "--name=t --ioengine=net --listen --port=9 --rw=randread --size=1m",
            "network IO can't be random",
        ),
        (
            "--name=t --ioengine=net --protocol=udp --port=9 --listen --rw=read --size=1m",
            "listen is only valid with protocol=tcp",
        ),
    ];
    for (args, want) in cases {
        let run = common::sb_fio(dir.path(), &words(args));
        let line = run.one_error_line();
        assert!(
            line.starts_with("storbench: ") && line.contains(want),
            "{args}: {line}"
        );
    }
}
