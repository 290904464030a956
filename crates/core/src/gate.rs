//! A start barrier that can be abandoned: workers of a group finish their set-up, then start
//! IO together; if one fails its set-up, the others are released with an error instead of
//! waiting forever.

use std::sync::{Condvar, Mutex};

pub struct StartGate {
    state: Mutex<GateState>,
    cv: Condvar,
}

struct GateState {
    expected: usize,
    arrived: usize,
    aborted: bool,
}

impl StartGate {
    pub fn new(expected: usize) -> Self {
        StartGate {
            state: Mutex::new(GateState {
                expected,
                arrived: 0,
                aborted: false,
            }),
            cv: Condvar::new(),
        }
    }

    /// Waits for all workers; false if the gate was abandoned.
    pub fn arrive_and_wait(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.arrived += 1;
        if s.arrived >= s.expected {
            self.cv.notify_all();
        }
        while s.arrived < s.expected && !s.aborted {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        !s.aborted
    }

    /// Releases everyone with failure (a worker could not start).
    pub fn abandon(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.aborted = true;
        self.cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn releases_when_all_arrive() {
        let g = Arc::new(StartGate::new(3));
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let g = g.clone();
                std::thread::spawn(move || g.arrive_and_wait())
            })
            .collect();
        assert!(handles.into_iter().all(|h| h.join().unwrap()));
    }

    #[test]
    fn abandon_releases_waiters_with_false() {
        let g = Arc::new(StartGate::new(2));
        let g2 = g.clone();
        let waiter = std::thread::spawn(move || g2.arrive_and_wait());
        std::thread::sleep(std::time::Duration::from_millis(20));
        g.abandon();
        assert!(!waiter.join().unwrap());
    }
}
