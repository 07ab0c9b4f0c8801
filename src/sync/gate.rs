//! [`Gate`]: lets a bounded number of threads through at once; the others
//! wait their turn.

use parking_lot::{Condvar, Mutex};

/// At most `limit` holders at a time.
#[derive(Debug)]
pub(crate) struct Gate {
    limit: usize,
    inside: Mutex<usize>,
    left: Condvar,
}

/// A place taken at a [`Gate`], given back when dropped.
pub(crate) struct Pass<'a>(&'a Gate);

impl Gate {
    pub(crate) fn new(limit: usize) -> Gate {
        Gate {
            limit: limit.max(1),
            inside: Mutex::new(0),
            left: Condvar::new(),
        }
    }

    /// Waits for a place and takes it.
    pub(crate) fn enter(&self) -> Pass<'_> {
        let mut inside = self.inside.lock();
        while *inside >= self.limit {
            self.left.wait(&mut inside);
        }
        *inside += 1;
        Pass(self)
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        *self.0.inside.lock() -= 1;
        self.0.left.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    #[test]
    fn no_more_than_the_limit_are_inside_at_once() {
        let gate = Arc::new(Gate::new(2));
        let (inside, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (gate, inside, most) = (Arc::clone(&gate), Arc::clone(&inside), Arc::clone(&most));
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let _pass = gate.enter();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }
}
