//! A TCP relay a test puts between a client and a server, so that it can cut the client's
//! connections at a chosen moment while new connections keep being relayed: what a dropped
//! network path looks like to both ends (each sees its connection close), with the server
//! process still running. Samba keeps durable handles across exactly this, not across a
//! restart of smbd, so the durable-handle tests need it.
//!
//! A paced relay ([`CutProxy::start_paced`]) hands the server's bytes to the client a
//! chunk at a time with a pause between: a slow link on loopback, where a reply is seen
//! partly arrived (the SMB pipelining tests need that).
//!
//! A delaying relay ([`CutProxy::start_delayed`]) holds every byte for a fixed time in each
//! direction before passing it on, without limiting the rate: a long path on loopback (the
//! kernel here has no `netem` qdisc), so each request's round trip grows by twice the delay.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a relayed connection passes bytes on.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// As they come.
    Copy,
    /// The server's bytes at most `chunk` at a time, `pause` apart.
    Paced(usize, Duration),
    /// Every byte, both ways, held for this long.
    Delayed(Duration),
}

/// A relay from `127.0.0.1:port` to a target; stopped (and every relayed connection
/// closed) on drop.
pub struct CutProxy {
    pub port: u16,
    open: Arc<Mutex<Vec<TcpStream>>>,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl CutProxy {
    /// Listens on a free port and relays each connection to `target`.
    pub fn start(target: SocketAddr) -> io::Result<CutProxy> {
        CutProxy::start_paced(target, None)
    }

    /// As [`CutProxy::start`]; with `pace` = (chunk, pause), the server's bytes go to the
    /// client at most `chunk` at a time, `pause` apart.
    pub fn start_paced(
        target: SocketAddr,
        pace: Option<(usize, Duration)>,
    ) -> io::Result<CutProxy> {
        let shape = match pace {
            Some((chunk, pause)) => Shape::Paced(chunk, pause),
            None => Shape::Copy,
        };
        CutProxy::start_shaped(target, shape)
    }

    /// As [`CutProxy::start`], each direction's bytes held for `one_way` before they are
    /// passed on.
    pub fn start_delayed(target: SocketAddr, one_way: Duration) -> io::Result<CutProxy> {
        CutProxy::start_shaped(target, Shape::Delayed(one_way))
    }

    fn start_shaped(target: SocketAddr, shape: Shape) -> io::Result<CutProxy> {
        let port = crate::ports::free_port()?;
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let open = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (o, s, a) = (open.clone(), stop.clone(), accepted.clone());
        let thread = std::thread::spawn(move || accept_loop(listener, target, shape, o, s, a));
        Ok(CutProxy {
            port,
            open,
            stop,
            accepted,
            thread: Some(thread),
        })
    }

    /// Closes every connection relayed so far, both sides; returns how many there were.
    pub fn cut(&self) -> usize {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.len() / 2;
        for s in open.drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
        n
    }

    /// Connections accepted so far (a reconnecting client makes a new one).
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.cut();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    target: SocketAddr,
    shape: Shape,
    open: Arc<Mutex<Vec<TcpStream>>>,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
) {
    while !stop.load(Ordering::SeqCst) {
        let client = match listener.accept() {
            Ok((c, _)) => c,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            Err(_) => return,
        };
        accepted.fetch_add(1, Ordering::SeqCst);
        let _ = client.set_nonblocking(false);
        let Ok(server) = TcpStream::connect_timeout(&target, Duration::from_secs(5)) else {
            continue; // the client sees its connection close
        };
        let _ = (client.set_nodelay(true), server.set_nodelay(true));
        let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
            continue;
        };
        if let Ok(mut o) = open.lock() {
            o.push(client.try_clone().expect("clone a relayed socket"));
            o.push(server.try_clone().expect("clone a relayed socket"));
        }
        let upstream = match shape {
            Shape::Delayed(_) => shape,
            Shape::Copy | Shape::Paced(..) => Shape::Copy,
        };
        pump(client, s2, upstream);
        pump(server, c2, shape);
    }
}

/// Copies `from` into `to` as `shape` says until either closes, then closes both.
fn pump(mut from: TcpStream, mut to: TcpStream, shape: Shape) {
    std::thread::spawn(move || {
        match shape {
            Shape::Copy => {
                let _ = io::copy(&mut from, &mut to);
            }
            Shape::Paced(chunk, pause) => paced_copy(&mut from, &mut to, chunk, pause),
            Shape::Delayed(by) => delayed_copy(&mut from, &mut to, by),
        }
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    });
}

fn paced_copy(from: &mut TcpStream, to: &mut TcpStream, chunk: usize, pause: Duration) {
    use std::io::{Read, Write};
    let mut buf = vec![0u8; chunk.max(1)];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
                std::thread::sleep(pause);
            }
        }
    }
}

/// Reads as fast as `from` gives and hands each read to a writer thread, which passes it
/// to `to` once `by` has passed since it arrived: a delay line, not a rate limit.
fn delayed_copy(from: &mut TcpStream, to: &mut TcpStream, by: Duration) {
    use std::io::{Read, Write};
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let Ok(mut out) = to.try_clone() else {
        return;
    };
    let writer = std::thread::spawn(move || {
        for (due, bytes) in rx {
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            if out.write_all(&bytes).is_err() {
                return;
            }
        }
    });
    let mut buf = vec![0u8; 256 << 10];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx.send((Instant::now() + by, buf[..n].to_vec())).is_err() {
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = writer.join();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// An echo server behind a relay delaying 30 ms each way: a reply takes at least 60 ms.
    #[test]
    fn a_delayed_relay_adds_its_delay_both_ways() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let target = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut b = [0u8; 4];
            while s.read_exact(&mut b).is_ok() && s.write_all(&b).is_ok() {}
        });
        let relay = CutProxy::start_delayed(target, Duration::from_millis(30)).unwrap();
        let mut c = TcpStream::connect(("127.0.0.1", relay.port)).unwrap();
        c.set_nodelay(true).unwrap();
        let mut b = [0u8; 4];
        for _ in 0..3 {
            let t = Instant::now();
            c.write_all(b"ping").unwrap();
            c.read_exact(&mut b).unwrap();
            let rtt = t.elapsed();
            assert_eq!(&b, b"ping");
            assert!(rtt >= Duration::from_millis(60), "{rtt:?}");
            assert!(rtt < Duration::from_millis(1000), "{rtt:?}");
        }
    }
}
