//! The pub/sub connection when its node misbehaves (issue 36, item 8), over in-memory streams
//! of a node without a listener on a paused clock: waiters behind a hung node share one
//! connect, a lock asked for while the connection is being made anew waits for it, and a
//! half-open connection (nothing arrives, nothing is refused) is found by its `PING` and made
//! anew. Library behaviour, not Redis's: our server only.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use locksmith_lock::{Client, ClientOptions, Connector, LockError};
use locksmith_server::{ServerHandle, StreamAcceptor};
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};
use tokio::time::timeout;

use crate::support::{in_memory_node, until_waiting};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// What a dial after the first (the command connection's) gets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dial {
    /// A stream the node serves.
    Serve,
    /// A stream nobody ever answers on (a hung node).
    Hang,
    /// Connection refused.
    Refuse,
}

/// Streams to a node whose pub/sub dials (every dial after the first) the test steers, and
/// whose served streams it can make half-open.
#[derive(Clone)]
struct Links {
    acceptor: StreamAcceptor,
    port: Arc<AtomicU16>,
    dials: Arc<AtomicUsize>,
    mode: Arc<Mutex<Dial>>,
    /// The far ends of hung streams, kept open.
    hung: Arc<Mutex<Vec<DuplexStream>>>,
    /// The freeze switch of every served pub/sub stream.
    switches: Arc<Mutex<Vec<Arc<AtomicBool>>>>,
}

impl Links {
    fn new(node: &ServerHandle, first_port: u16) -> Links {
        Links {
            acceptor: node.acceptor(),
            port: Arc::new(AtomicU16::new(first_port)),
            dials: Arc::default(),
            mode: Arc::new(Mutex::new(Dial::Serve)),
            hung: Arc::default(),
            switches: Arc::default(),
        }
    }

    fn set(&self, mode: Dial) {
        *self.mode.lock().unwrap() = mode;
    }

    fn dials(&self) -> usize {
        self.dials.load(Ordering::Relaxed)
    }

    /// Every pub/sub stream served so far goes half-open: nothing it sends arrives, nothing
    /// more is read from it, and it is never closed.
    fn freeze(&self) {
        for s in self.switches.lock().unwrap().iter() {
            s.store(true, Ordering::Relaxed);
        }
    }

    fn connector(&self) -> impl Connector {
        let links = self.clone();
        move || {
            let links = links.clone();
            async move {
                let first = links.dials.fetch_add(1, Ordering::Relaxed) == 0;
                let mode = if first {
                    Dial::Serve
                } else {
                    *links.mode.lock().unwrap()
                };
                let (ours, theirs) = tokio::io::duplex(64 * 1024);
                let port = links.port.fetch_add(1, Ordering::Relaxed);
                match mode {
                    Dial::Refuse => return Err(io::ErrorKind::ConnectionRefused.into()),
                    Dial::Hang => links.hung.lock().unwrap().push(theirs),
                    Dial::Serve => links
                        .acceptor
                        .serve_stream(theirs, SocketAddr::from(([127, 0, 0, 1], port))),
                }
                let frozen = Arc::new(AtomicBool::new(false));
                if !first {
                    links.switches.lock().unwrap().push(frozen.clone());
                }
                Ok::<_, io::Error>(Freezable {
                    inner: ours,
                    frozen,
                })
            }
        }
    }
}

/// A stream that, once frozen, reads nothing more and swallows every write: a peer gone
/// without a FIN or RST (a half-open TCP connection).
struct Freezable {
    inner: DuplexStream,
    frozen: Arc<AtomicBool>,
}

impl AsyncRead for Freezable {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.frozen.load(Ordering::Relaxed) {
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Freezable {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.frozen.load(Ordering::Relaxed) {
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.frozen.load(Ordering::Relaxed) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.frozen.load(Ordering::Relaxed) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A client of `node` over plain served streams (the holder of the tests).
async fn plain_client(node: &ServerHandle, first_port: u16, seed: u64) -> Client {
    let links = Links::new(node, first_port);
    Client::open_over(links.connector(), ClientOptions::default().seed(seed))
        .await
        .unwrap()
}

// Eight `lock()` calls (no wait bound) behind a hung pub/sub node: the first connect's failure
// is every queued subscriber's, so all of them end within about one pub/sub timeout (1 s here)
// with `LockError::Timeout`, where each used to connect in turn and the last failed after 8 s.
#[tokio::test(start_paused = true)]
async fn waiters_behind_a_hung_pubsub_node_share_one_connect() {
    let n = in_memory_node(7381).await;
    let links = Links::new(&n, 41000);
    links.set(Dial::Hang);
    let options = ClientOptions::default()
        .seed(1)
        .connection_timeout(MS(1000))
        .response_timeout(MS(1000));
    let c = Client::open_over(links.connector(), options).await.unwrap();
    let holder = plain_client(&n, 42000, 2).await;
    let held = holder.lock("hung-node");
    held.lock().await.unwrap();
    let mut waiters = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let lock = c.lock("hung-node");
        waiters.spawn(async move { lock.lock().await });
    }
    let results = timeout(Duration::from_secs(4), async {
        let mut results = Vec::new();
        while let Some(r) = waiters.join_next().await {
            results.push(r.unwrap());
        }
        results
    })
    .await
    .expect("eight waiters behind one hung node end within about one pub/sub timeout");
    assert_eq!(results.len(), 8);
    for r in results {
        match r {
            Err(e @ LockError::Timeout { .. }) => assert!(e.is_timeout()),
            other => panic!("expected a subscription timeout, got {other:?}"),
        }
    }
    assert!(links.dials() >= 2, "the pub/sub node was never dialed");
    held.unlock().await.unwrap();
}

// The pub/sub connection is killed while a waiter waits, and every reconnect is refused for a
// while: a lock asked for then (subscribing during the reconnect's back-off) waits for the
// connection within its 20 s wait and gets the lock when its holder lets go, instead of
// failing on the dead connection.
#[tokio::test(start_paused = true)]
async fn a_lock_asked_for_during_the_pubsub_reconnect_waits_for_it() {
    let n = in_memory_node(7382).await;
    let links = Links::new(&n, 41000);
    let c = Client::open_over(links.connector(), ClientOptions::default().seed(3))
        .await
        .unwrap();
    let holder = plain_client(&n, 42000, 4).await;
    let first = holder.lock("reconnect-first");
    first.lock().await.unwrap();
    let second = holder.lock("reconnect-second");
    second.lock().await.unwrap();
    let waiter = c.lock("reconnect-first");
    let first_waiter = tokio::spawn(async move { waiter.lock().await.map(|()| waiter) });
    until_waiting(&c, 1).await;
    links.set(Dial::Refuse);
    let dials = links.dials();
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("pubsub")
        .query_async(&mut holder.connection())
        .await
        .unwrap();
    assert_eq!(killed, 1);
    // The hub's reconnect was refused at least once: its back-off has begun.
    for _ in 0..1000 {
        if links.dials() > dials {
            break;
        }
        tokio::time::sleep(MS(5)).await;
    }
    assert!(links.dials() > dials, "the hub never tried to reconnect");
    let lock = c.lock("reconnect-second");
    let asked = tokio::spawn(async move {
        let got = lock.try_lock_for(Duration::from_secs(20), None).await;
        (lock, got)
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    links.set(Dial::Serve);
    tokio::time::sleep(Duration::from_secs(2)).await;
    second.unlock().await.unwrap();
    let (lock, got) = timeout(Duration::from_secs(30), asked)
        .await
        .expect("the wait ended")
        .unwrap();
    assert!(
        got.expect("no error from a reconnect under way"),
        "not acquired"
    );
    lock.unlock().await.unwrap();
    first.unlock().await.unwrap();
    let waiter = timeout(Duration::from_secs(30), first_waiter)
        .await
        .expect("the first waiter got its lock")
        .unwrap()
        .unwrap();
    waiter.unlock().await.unwrap();
}

// The waiter's pub/sub connection goes half-open (nothing arrives, nothing is refused, nothing
// closes) and then the holder unlocks: the release message is lost, but the hub's PING (every
// second here) goes unanswered, the connection is given up and the waiter retries, getting the
// lock long before the holder's 30 s lease would have run out; the next waiter subscribes on a
// new connection.
#[tokio::test(start_paused = true)]
async fn a_waiter_on_a_half_open_pubsub_connection_is_woken_by_the_ping_check() {
    let n = in_memory_node(7383).await;
    let links = Links::new(&n, 41000);
    let options = ClientOptions::default()
        .seed(5)
        .pubsub_ping_interval(MS(1000))
        .response_timeout(MS(1000));
    let c = Client::open_over(links.connector(), options).await.unwrap();
    let holder = plain_client(&n, 42000, 6).await;
    let held = holder.lock("half-open");
    held.lock().await.unwrap();
    let waiter = c.lock("half-open");
    let task = tokio::spawn(async move { waiter.lock().await.map(|()| waiter) });
    until_waiting(&c, 1).await;
    links.freeze();
    held.unlock().await.unwrap();
    let waiter = timeout(Duration::from_secs(10), task)
        .await
        .expect("the waiter got the lock well within the holder's 30 s lease")
        .unwrap()
        .unwrap();
    waiter.unlock().await.unwrap();
    // The next waiter subscribes on a new connection, which hears the release.
    let held = holder.lock("half-open");
    held.lock().await.unwrap();
    let dials = links.dials();
    let waiter = c.lock("half-open");
    let task = tokio::spawn(async move { waiter.lock().await.map(|()| waiter) });
    until_waiting(&c, 2).await;
    assert!(links.dials() > dials, "no new pub/sub connection");
    held.unlock().await.unwrap();
    let waiter = timeout(Duration::from_secs(10), task)
        .await
        .expect("woken on the new connection")
        .unwrap()
        .unwrap();
    waiter.unlock().await.unwrap();
}

// Issue 36, item 15: a semaphore release wakes as many waiters as the count of permits it
// publishes (Redisson's SemaphorePubSub releases min(waiters, count)), not every waiter: with
// five waiting for one permit each, releasing one wakes one, which takes it; the four others
// are not woken to find nothing and go back to sleep. Releasing four then wakes the four.
#[tokio::test(start_paused = true)]
async fn a_semaphore_release_wakes_as_many_waiters_as_permits_it_frees() {
    let n = in_memory_node(7384).await;
    let c = plain_client(&n, 41000, 7).await;
    let sem = c.semaphore("wake-count");
    assert!(sem.try_set_permits(0).await.unwrap());
    let mut waiters = tokio::task::JoinSet::new();
    for _ in 0..5 {
        let s = c.semaphore("wake-count");
        waiters.spawn(async move { s.acquire().await });
    }
    until_waiting(&c, 5).await;
    let waits = c.metrics().waits;
    sem.release().await.unwrap();
    timeout(Duration::from_secs(10), waiters.join_next())
        .await
        .expect("one waiter took the permit")
        .unwrap()
        .unwrap()
        .unwrap();
    // Long enough for any other woken waiter to try and wait again; short of their 30 s cap.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        c.metrics().waits,
        waits,
        "waiters that could get no permit were woken"
    );
    assert_eq!(waiters.len(), 4);
    sem.release_many(4).await.unwrap();
    timeout(Duration::from_secs(10), async {
        while let Some(r) = waiters.join_next().await {
            r.unwrap().unwrap();
        }
    })
    .await
    .expect("the four others took the four permits");
    assert_eq!(sem.available_permits().await.unwrap(), 0);
}
