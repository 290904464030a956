//! A TCP relay a test puts between a client and a server, so that it can cut the client's
//! connections at a chosen moment while new connections keep being relayed: what a dropped
//! network path looks like to both ends (each sees its connection close), with the server
//! process still running. Samba keeps durable handles across exactly this, not across a
//! restart of smbd, so the durable-handle tests need it.
//!
//! A paced relay ([`CutProxy::start_paced`]) hands the server's bytes to the client a
//! chunk at a time with a pause between: a slow link on loopback, where a reply is seen
//! partly arrived (the SMB pipelining tests need that).

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

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
        let port = crate::ports::free_port()?;
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let open = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (o, s, a) = (open.clone(), stop.clone(), accepted.clone());
        let thread = std::thread::spawn(move || accept_loop(listener, target, pace, o, s, a));
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
    pace: Option<(usize, Duration)>,
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
        pump(client, s2, None);
        pump(server, c2, pace);
    }
}

/// Copies `from` into `to` until either closes (`pace`: a chunk at a time, a pause
/// after each), then closes both.
fn pump(mut from: TcpStream, mut to: TcpStream, pace: Option<(usize, Duration)>) {
    std::thread::spawn(move || {
        match pace {
            None => {
                let _ = io::copy(&mut from, &mut to);
            }
            Some((chunk, pause)) => paced_copy(&mut from, &mut to, chunk, pause),
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
