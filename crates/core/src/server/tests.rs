use super::*;

// Read from this machine while a Python process listened on 127.0.0.1:47751 and on
// [::]:47752, with one connection to each (the second from 127.0.0.1, so it shows
// as ::ffff:127.0.0.1 in tcp6).
const TCP: &str = include_str!("../../fixtures/proc/net_tcp");
const TCP6: &str = include_str!("../../fixtures/proc/net_tcp6");
const STAT: &str = include_str!("../../fixtures/proc/pid_stat_python3");

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

// The tables print each address word in this machine's byte order: the fixtures were
// read on a little-endian one.
#[cfg(target_endian = "little")]
#[test]
fn finds_the_listener_of_a_port_bound_to_the_address() {
    // The listener, not the two ends of the established connection on the same port.
    assert_eq!(
        listening_inodes(TCP, addr("127.0.0.1:47751")),
        vec![3237175]
    );
    assert!(listening_inodes(TCP, addr("127.0.0.1:47753")).is_empty());
    // Bound to 127.0.0.1 only: another address of the host does not reach it.
    assert!(listening_inodes(TCP, addr("10.1.2.3:47751")).is_empty());
    // 0.0.0.0:2024 takes connections to any local address.
    assert_eq!(listening_inodes(TCP, addr("10.1.2.3:2024")), vec![1076]);
    assert_eq!(
        listening_inodes(TCP, addr("[::ffff:10.1.2.3]:2024")),
        vec![1076]
    );
    // ... but no IPv6 one.
    assert!(listening_inodes(TCP, addr("[::1]:2024")).is_empty());
}

/// The server's end of each fixture connection, not the client's.
#[cfg(target_endian = "little")]
#[test]
fn finds_the_server_end_of_a_connection() {
    let server = addr("127.0.0.1:47751");
    let client = addr("127.0.0.1:58832");
    assert_eq!(established_inodes(TCP, server, client), vec![3237178]);
    assert_eq!(established_inodes(TCP, client, server), vec![3237177]);
    assert!(established_inodes(TCP, server, addr("127.0.0.1:1")).is_empty());
    // Accepted by the IPv6 wildcard listener, it is in tcp6 as ::ffff:127.0.0.1.
    let server = addr("127.0.0.1:47752");
    let client = addr("[::ffff:127.0.0.1]:41794");
    assert_eq!(established_inodes(TCP6, server, client), vec![3237180]);
    assert!(established_inodes(TCP, server, client).is_empty());
}

#[cfg(target_endian = "little")]
#[test]
fn an_ipv6_wildcard_listener_serves_ipv4_connections() {
    assert_eq!(
        listening_inodes(TCP6, addr("127.0.0.1:47752")),
        vec![3237176]
    );
    assert_eq!(listening_inodes(TCP6, addr("[::1]:47752")), vec![3237176]);
    assert!(listening_inodes(TCP6, addr("127.0.0.1:47751")).is_empty());
}

#[cfg(target_endian = "little")]
#[test]
fn socket_addresses_in_both_tables() {
    assert_eq!(
        parse_socket_address("0100007F:BA87"),
        Some((addr("127.0.0.1:0").ip(), 47751))
    );
    // ::ffff:127.0.0.1 is 127.0.0.1.
    assert_eq!(
        parse_socket_address("0000000000000000FFFF00000100007F:A342"),
        Some((addr("127.0.0.1:0").ip(), 41794))
    );
    assert_eq!(
        parse_socket_address("00000000000000000000000001000000:0801"),
        Some((addr("[::1]:0").ip(), 2049))
    );
    assert_eq!(parse_socket_address("0100007F"), None);
    assert_eq!(parse_socket_address("7F:0801"), None);
}

#[test]
fn stat_fields_count_from_the_last_parenthesis() {
    let s = ProcStat::parse(STAT).unwrap();
    assert_eq!(
        s,
        ProcStat {
            comm: "python3".into(),
            utime: 4,
            stime: 1,
            starttime: 7195716
        }
    );
    // A name with spaces and a parenthesis of its own.
    let odd = STAT.replace("(python3)", "(my (odd) srv)");
    let s = ProcStat::parse(&odd).unwrap();
    assert_eq!((s.comm.as_str(), s.utime, s.stime), ("my (odd) srv", 4, 1));
    assert_eq!(ProcStat::parse("26945 (python3) S 1 2"), None);
}

#[test]
fn socket_links() {
    assert_eq!(socket_inode("socket:[3237175]"), Some(3237175));
    assert_eq!(socket_inode("pipe:[3237175]"), None);
    assert_eq!(socket_inode("/dev/null"), None);
}

#[test]
fn locality() {
    assert!(is_local(addr("127.0.0.1:1").ip()));
    assert!(is_local(addr("127.0.0.2:1").ip()));
    assert!(is_local(addr("[::1]:1").ip()));
    assert!(is_local(addr("[::ffff:127.0.0.1]:1").ip()));
    // TEST-NET-3: never assigned to a machine.
    assert!(!is_local(addr("203.0.113.9:1").ip()));
}

/// A listener of this test's own finds no server: the process looking is left out
/// (the client never serves itself).
#[test]
fn the_process_looking_is_never_the_server() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mine = listener.local_addr().unwrap();
    assert_eq!(ServerProcess::find(mine, None), None);
}

/// The server of a socket-activated service (systemd holds the listener), of
/// inetd or of a server forking per connection is not the listener's owner. Here one
/// child holds the listener (the lower pid, which the listener rule took) and another
/// the accepted connection, spinning as a server would: that one is found, with its CPU
/// and its busiest thread's.
#[test]
fn the_process_serving_the_connection_wins_over_the_listener() {
    use std::os::fd::AsRawFd;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = listener.local_addr().unwrap();
    let mut front = crate::testing::child_holding(listener.as_raw_fd(), "exec sleep 30");
    let client = std::net::TcpStream::connect(at).unwrap();
    let (conn, _) = listener.accept().unwrap();
    // A builtin loop: an external command would outlive the shell we kill.
    let mut server = crate::testing::child_holding(conn.as_raw_fd(), "while :; do :; done");
    drop((conn, listener));
    let found = ServerProcess::find(at, client.local_addr().ok());
    let by_listener = ServerProcess::find(at, None);
    let (a, b) = found.as_ref().map_or((None, None), |s| {
        let a = s.sample();
        std::thread::sleep(std::time::Duration::from_millis(300));
        (a, s.sample())
    });
    for child in [&mut front, &mut server] {
        child.kill().ok();
        child.wait().ok();
    }
    let found = found.expect("the child holding the connection is found");
    assert_eq!((found.pid, found.name.as_str()), (server.id(), "sh"));
    let by_listener = by_listener.expect("the child holding the listener is found");
    assert_eq!(
        (by_listener.pid, by_listener.name.as_str()),
        (front.id(), "sleep")
    );
    let cpu = b.unwrap().since(&a.unwrap(), &found);
    // Whatever the machine's load: the time between the samples is at least the sleep,
    // and a spinning shell got some CPU in it, all in its one thread.
    assert!(cpu.duration_ms >= 300, "{cpu:?}");
    assert!(cpu.cpu_ns() > 0, "the spinning child used no CPU: {cpu:?}");
    assert_eq!(cpu.busiest_thread_ns, Some(cpu.cpu_ns()), "{cpu:?}");
    assert_eq!(cpu.addr, at.to_string());
}

/// A connection to an IPv4-mapped address is named as the IPv4 one.
#[test]
fn the_address_is_named_canonically() {
    let p = ServerProcess {
        pid: 1,
        name: "s".into(),
        addr: addr("[::ffff:127.0.0.1]:2049"),
        starttime: 0,
        quota: None,
    };
    let at = Instant::now();
    let sample = ServerSample {
        usr_ns: 0,
        sys_ns: 0,
        threads: vec![(1, 5), (2, 0)],
        periods: None,
        at,
    };
    let later = ServerSample {
        threads: vec![(1, 7), (2, 4), (3, 3)],
        ..sample.clone()
    };
    let cpu = later.since(&sample, &p);
    assert_eq!(cpu.addr, "127.0.0.1:2049");
    // Thread 2 used 4 ns, more than 1 (2 ns) or the new 3 (3 ns).
    assert_eq!(cpu.busiest_thread_ns, Some(4));
}
