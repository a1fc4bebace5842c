//! Freeing large values off the command path (Redis's lazy free): `UNLINK`, `FLUSHALL` and
//! `FLUSHDB` with `ASYNC`, and the deletes the `lazyfree-lazy-*` settings name, hand a value
//! whose freeing takes more than [`LAZYFREE_THRESHOLD`] allocations (a whole database, for a
//! flush) to a thread of its own, as Redis hands it to its `bio` thread: dropping a set of a
//! million members takes tens of milliseconds, during which every client would wait.
//! `INFO memory` shows what waits (`lazyfree_pending_objects`) and what was freed so
//! (`lazyfreed_objects`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;

/// Allocations above which a value is freed in the background (Redis's `LAZYFREE_THRESHOLD`).
pub(crate) const LAZYFREE_THRESHOLD: usize = 64;

/// Something to drop, and how many objects `INFO` counts it as.
type Job = (Box<dyn Send>, u64);

/// The background freeing thread (started on first use) and its counters.
#[derive(Debug, Default)]
pub(crate) struct LazyFree {
    /// The thread's queue; `None` until the first job.
    queue: Mutex<Option<Sender<Job>>>,
    /// Objects handed over and not freed yet (`lazyfree_pending_objects`).
    pending: std::sync::Arc<AtomicU64>,
    /// Objects freed in the background (`lazyfreed_objects`, reset by `CONFIG RESETSTAT`).
    freed: std::sync::Arc<AtomicU64>,
    /// Set when the thread freed something since [`LazyFree::freed_since_asked`] last asked.
    done: std::sync::Arc<AtomicBool>,
}

impl LazyFree {
    /// Drops `garbage`, counted as `objects`, on the freeing thread; here, if that thread
    /// cannot be started.
    pub(crate) fn free(&self, garbage: impl Send + 'static, objects: u64) {
        self.pending.fetch_add(objects, Ordering::Relaxed);
        let job: Job = (Box::new(garbage), objects);
        let mut queue = match self.queue.lock() {
            Ok(queue) => queue,
            Err(poisoned) => poisoned.into_inner(),
        };
        if queue.is_none() {
            *queue = self.start();
        }
        let job = match queue.as_ref() {
            Some(tx) => match tx.send(job) {
                Ok(()) => return,
                Err(unsent) => unsent.0,
            },
            None => job,
        };
        drop(queue);
        drop(job.0);
        self.pending.fetch_sub(objects, Ordering::Relaxed);
    }

    /// Starts the freeing thread; `None` if the system refuses a thread.
    fn start(&self) -> Option<Sender<Job>> {
        let (tx, rx) = channel::<Job>();
        let (pending, freed) = (self.pending.clone(), self.freed.clone());
        let done = self.done.clone();
        let spawned = std::thread::Builder::new()
            .name("lazyfree".into())
            .spawn(move || {
                for (garbage, objects) in rx {
                    drop(garbage);
                    pending.fetch_sub(objects, Ordering::Relaxed);
                    freed.fetch_add(objects, Ordering::Relaxed);
                    done.store(true, Ordering::Release);
                }
            });
        match spawned {
            Ok(_) => Some(tx),
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the lazy free thread: freeing inline");
                None
            }
        }
    }

    /// `lazyfree_pending_objects`.
    pub(crate) fn pending(&self) -> u64 {
        self.pending.load(Ordering::Relaxed)
    }

    /// `lazyfreed_objects`.
    pub(crate) fn freed(&self) -> u64 {
        self.freed.load(Ordering::Relaxed)
    }

    /// Whether the thread freed something since the last call: the periodic task then has the
    /// allocator give the memory back (the thread that owns the freed blocks must see them).
    pub(crate) fn freed_since_asked(&self) -> bool {
        self.done.swap(false, Ordering::AcqRel)
    }

    /// `CONFIG RESETSTAT`.
    pub(crate) fn reset_stats(&self) {
        self.freed.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn garbage_is_dropped_on_the_thread_and_counted() {
        let lazy = LazyFree::default();
        lazy.free(vec![0u8; 1 << 20], 1);
        lazy.free((0..1000).map(|i| i.to_string()).collect::<Vec<_>>(), 3);
        let deadline = Instant::now() + Duration::from_secs(10);
        while lazy.pending() > 0 {
            assert!(Instant::now() < deadline, "nothing freed in 10 s");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(lazy.freed(), 4);
        lazy.reset_stats();
        assert_eq!(lazy.freed(), 0);
    }
}
