//! Clients over in-memory streams (`Client::open_over`) of nodes without a listener
//! (`Server::builder().in_memory(..)`, `serve_stream`), on a current-thread runtime with paused
//! time: what a deterministic simulation runs on. Every lock kind works there, the command and
//! pub/sub connections come back after the server kills them, and a seeded workload replays
//! event for event.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use locksmith_lock::{Backoff, Client, ClientOptions, Connection, Connector, RedLock};
use locksmith_server::{Server, ServerHandle};
use redis::aio::ConnectionLike;
use tokio::time::{timeout, Instant};

use crate::support::{eventually, in_memory_node, until_waiting};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Streams to `node`: each a fresh duplex pair, seen by the node as a new port from `first_port`.
fn connector(node: &ServerHandle, first_port: u16) -> impl Connector {
    let acceptor = node.acceptor();
    let next = Arc::new(AtomicU16::new(first_port));
    move || {
        let acceptor = acceptor.clone();
        let port = next.fetch_add(1, Ordering::Relaxed);
        async move {
            let (ours, theirs) = tokio::io::duplex(64 * 1024);
            acceptor.serve_stream(theirs, SocketAddr::from(([127, 0, 0, 1], port)));
            Ok::<_, io::Error>(ours)
        }
    }
}

async fn client(node: &ServerHandle, first_port: u16, options: ClientOptions) -> Client {
    Client::open_over(connector(node, first_port), options)
        .await
        .unwrap()
}

async fn client_id(client: &Client) -> redis::RedisResult<i64> {
    redis::cmd("CLIENT")
        .arg("ID")
        .query_async(&mut client.connection())
        .await
}

async fn subscribers(admin: &Client, channel: &str) -> i64 {
    let reply: (String, i64) = redis::cmd("PUBSUB")
        .arg("NUMSUB")
        .arg(channel)
        .query_async(&mut admin.connection())
        .await
        .unwrap();
    reply.1
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_client_over_streams_locks_and_unlocks() {
    let node = in_memory_node(7101).await;
    let a = client(&node, 41000, ClientOptions::default()).await;
    let b = client(&node, 42000, ClientOptions::default()).await;
    assert!(matches!(a.connection(), Connection::Stream(_)));
    let mine = a.lock("plain");
    mine.lock().await.unwrap();
    mine.lock().await.unwrap();
    assert_eq!(mine.hold_count().await.unwrap(), 2);
    assert!(!b.lock("plain").try_lock().await.unwrap());
    mine.unlock().await.unwrap();
    mine.unlock().await.unwrap();
    assert!(!mine.is_locked().await.unwrap());
    assert!(b.lock("plain").try_lock().await.unwrap());
    node.shutdown().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn open_over_with_info_authenticates_and_selects_the_database_on_every_stream() {
    let node = Server::builder()
        .in_memory(SocketAddr::from(([127, 0, 0, 1], 7111)))
        .config_set("requirepass", "s3cret")
        .start()
        .await
        .unwrap();
    let info = || {
        redis::RedisConnectionInfo::default()
            .set_password("s3cret")
            .set_db(2)
    };
    let open = |port, info| {
        Client::open_over_with_info(connector(&node, port), info, ClientOptions::default())
    };
    let a = open(41000, info()).await.unwrap();
    let b = open(42000, info()).await.unwrap();
    let held = a.lock("auth");
    held.lock().await.unwrap();
    // The waiter's pub/sub stream authenticates too, or the release message would not reach it.
    let waiter = b.lock("auth");
    let task = tokio::spawn(async move {
        waiter.lock().await.unwrap();
        waiter
    });
    until_waiting(&b, 1).await;
    let in_db2: i64 = redis::cmd("EXISTS")
        .arg("auth")
        .query_async(&mut a.connection())
        .await
        .unwrap();
    assert_eq!((in_db2, a.connection().get_db()), (1, 2));
    let db0 = open(43000, info().set_db(0)).await.unwrap();
    assert!(!db0.lock("auth").is_locked().await.unwrap());
    held.unlock().await.unwrap();
    let waiter = timeout(Duration::from_secs(5), task)
        .await
        .expect("woken by the release message")
        .unwrap();
    waiter.unlock().await.unwrap();
    // A wrong password fails at once: a refusal is not retried.
    let refused = open(44000, info().set_password("wrong")).await.unwrap_err();
    assert!(
        refused.is_redis() && !refused.is_connection_error(),
        "{refused}"
    );
    node.shutdown().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_waiter_over_streams_is_woken_through_pub_sub_when_the_holder_unlocks() {
    let node = in_memory_node(7102).await;
    let a = client(&node, 41000, ClientOptions::default()).await;
    let b = client(&node, 42000, ClientOptions::default()).await;
    let held = a.lock("wake");
    held.lock().await.unwrap();
    let waiter = b.lock("wake");
    let task = tokio::spawn(async move {
        waiter.lock().await.unwrap();
        waiter
    });
    until_waiting(&b, 1).await;
    held.unlock().await.unwrap();
    // The holder's lease is 30 s: the waiter got in through the release message, not the TTL.
    let waiter = timeout(Duration::from_secs(5), task)
        .await
        .expect("woken by the release message")
        .unwrap();
    assert!(waiter.is_held_by_me().await.unwrap());
    waiter.unlock().await.unwrap();
    node.shutdown().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_command_connection_over_streams_comes_back_after_the_server_kills_it() {
    let node = in_memory_node(7103).await;
    let c = client(&node, 41000, ClientOptions::default()).await;
    let admin = client(&node, 42000, ClientOptions::default()).await;
    let before = client_id(&c).await.unwrap();
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .query_async(&mut admin.connection())
        .await
        .unwrap();
    assert_eq!(killed, 1, "the other client's command connection");
    // A command either finds the stream ended and dials anew, or fails on it (an I/O error)
    // and the next one dials anew.
    let mut after = None;
    for _ in 0..2 {
        match client_id(&c).await {
            Ok(id) => {
                after = Some(id);
                break;
            }
            Err(e) => assert!(e.is_io_error() || e.is_unrecoverable_error(), "{e}"),
        }
    }
    let after = after.expect("a new connection");
    assert_ne!(after, before);
    let lock = c.lock("after-kill");
    lock.lock().await.unwrap();
    lock.unlock().await.unwrap();
    node.shutdown().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_response_timeout_over_streams_replaces_the_command_connection() {
    let node = in_memory_node(7109).await;
    let c = client(
        &node,
        41000,
        ClientOptions::default().response_timeout(MS(500)),
    )
    .await;
    let admin = client(&node, 42000, ClientOptions::default()).await;
    let before = client_id(&c).await.unwrap();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(2000)
        .arg("ALL")
        .query_async(&mut admin.connection())
        .await
        .unwrap();
    let stalled = client_id(&c).await.unwrap_err();
    assert!(stalled.is_timeout(), "{stalled}");
    // The stream's state is unknown after a timeout: the next command dials a new one (and
    // waits out the pause there).
    let after = client_id(&c).await.unwrap();
    assert_ne!(after, before);
    node.shutdown().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_waiter_over_streams_resubscribes_after_the_server_kills_its_pub_sub_connection() {
    let node = in_memory_node(7104).await;
    let a = client(&node, 41000, ClientOptions::default()).await;
    let b = client(&node, 42000, ClientOptions::default()).await;
    let admin = client(&node, 43000, ClientOptions::default()).await;
    let held = a.lock("resubscribe");
    held.lock().await.unwrap();
    let channel = "redisson_lock__channel:{resubscribe}";
    let waiter = b.lock("resubscribe");
    let task = tokio::spawn(async move {
        waiter.lock().await.unwrap();
        waiter
    });
    until_waiting(&b, 1).await;
    assert_eq!(subscribers(&admin, channel).await, 1);
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("pubsub")
        .query_async(&mut admin.connection())
        .await
        .unwrap();
    assert_eq!(killed, 1);
    // The hub dials a new stream and subscribes the channel again.
    assert!(
        eventually(Duration::from_secs(2), || async {
            subscribers(&admin, channel).await == 1 && b.metrics().waits >= 2
        })
        .await
    );
    held.unlock().await.unwrap();
    let waiter = timeout(Duration::from_secs(5), task)
        .await
        .expect("woken on the new pub/sub connection")
        .unwrap();
    waiter.unlock().await.unwrap();
    node.shutdown().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_fair_lock_over_streams_grants_in_arrival_order() {
    let node = in_memory_node(7105).await;
    let start = Instant::now();
    let options = || {
        ClientOptions::default()
            .wall_clock(move || 1_700_000_000_000 + start.elapsed().as_millis() as u64)
    };
    let a = client(&node, 41000, options()).await;
    let b = client(&node, 42000, options()).await;
    let c = client(&node, 43000, options()).await;
    let held = a.fair_lock("fair");
    held.lock().await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = Vec::new();
    for (i, cl) in [&b, &c].into_iter().enumerate() {
        let fair = cl.fair_lock("fair");
        let tx = tx.clone();
        tasks.push(tokio::spawn(async move {
            fair.lock().await.unwrap();
            tx.send(i).unwrap();
            // Hold a little, then let the next one in.
            tokio::time::sleep(MS(10)).await;
            fair.unlock().await.unwrap();
        }));
        until_waiting(cl, 1).await;
    }
    held.unlock().await.unwrap();
    let first = timeout(Duration::from_secs(5), rx.recv()).await.unwrap();
    let second = timeout(Duration::from_secs(5), rx.recv()).await.unwrap();
    assert_eq!((first, second), (Some(0), Some(1)));
    for t in tasks {
        t.await.unwrap();
    }
    node.shutdown().await;
}

/// Redisson's fair-lock protocol, pinned (the explorer's "lost wake-ups" of the fair lock): a
/// waiter's entry in the timeout zset is an estimate made when it joins (the previous waiter's
/// timeout, or the lock's PTTL, plus the wait), and every acquisition ahead of it takes one wait
/// off it. When the holders keep their lock longer than the estimate (the watchdog renews it),
/// the entry of a waiter that is still waiting times out: the release script's stale-entry sweep
/// drops it and publishes to nobody, and the waiter gets the lock only at its next look.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_fair_waiter_whose_queue_estimate_ran_out_is_dropped_and_not_woken() {
    let node = in_memory_node(7106).await;
    let start = Instant::now();
    let epoch = 1_700_000_000_000u64;
    let options = || {
        ClientOptions::default()
            .wall_clock(move || epoch + start.elapsed().as_millis() as u64)
            .watchdog_timeout(MS(1000))
    };
    let a = client(&node, 44000, options()).await;
    let b = client(&node, 45000, options()).await;
    let c = client(&node, 46000, options()).await;
    let (queue, timeouts) = (
        "redisson_lock_queue:{fair-stale}",
        "redisson_lock_timeout:{fair-stale}",
    );
    let at = move |ms: u64| tokio::time::sleep_until(start + MS(ms));
    let holder = a.fair_lock("fair-stale");
    holder.lock().await.unwrap();
    // b joins at 0: its estimate is the lock's PTTL (1 s) plus its wait (2 s).
    let fair_b = b.fair_lock("fair-stale");
    let b_task = tokio::spawn(async move {
        assert!(fair_b.try_lock_for(MS(2000), None).await.unwrap());
        at(3200).await;
        fair_b.unlock().await.unwrap();
    });
    until_waiting(&b, 1).await;
    // c joins at 1500 behind b: b's estimate (3000) plus its wait, 5000; c waits until 3500.
    at(1500).await;
    let fair_c = c.fair_lock("fair-stale");
    let c_task = tokio::spawn(async move {
        let acquired = fair_c.try_lock_for(MS(2000), None).await.unwrap();
        (acquired, start.elapsed())
    });
    until_waiting(&c, 1).await;
    let admin = a.clone();
    let score = |member_of: Client| async move {
        let field: Vec<String> = redis::cmd("LRANGE")
            .arg(queue)
            .arg(0)
            .arg(-1)
            .query_async(&mut member_of.connection())
            .await
            .unwrap();
        let mut scores = Vec::new();
        for f in field {
            let s: f64 = redis::cmd("ZSCORE")
                .arg(timeouts)
                .arg(&f)
                .query_async(&mut member_of.connection())
                .await
                .unwrap();
            scores.push(s as u64 - epoch);
        }
        scores
    };
    assert_eq!(score(admin.clone()).await, vec![3000, 5000]);
    // a releases at 1600: b is woken and acquires, which takes a wait off c's estimate: 3000,
    // half a second before c's own wait ends.
    at(1600).await;
    holder.unlock().await.unwrap();
    for _ in 0..10_000 {
        if b.metrics().acquired == 1 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(b.metrics().acquired, 1, "b was woken by a's release");
    assert_eq!(score(admin.clone()).await, vec![3000]);
    // b holds past 3000 (its watchdog renews) and releases at 3200: the sweep drops c's entry
    // and the release wakes nobody, though c still waits.
    b_task.await.unwrap();
    let queued: i64 = redis::cmd("LLEN")
        .arg(queue)
        .query_async(&mut admin.connection())
        .await
        .unwrap();
    assert_eq!(queued, 0, "c's entry was dropped as timed out");
    assert!(!c_task.is_finished(), "nobody woke c");
    // c takes the free lock at its next look (its sleep is capped by the lock's PTTL, <= 1 s).
    let (acquired, when) = c_task.await.unwrap();
    assert!(acquired);
    assert!(when > MS(3200), "c acquired at {when:?}");
    node.shutdown().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_redlock_over_streams_of_three_nodes_needs_a_majority() {
    let nodes = [
        in_memory_node(7106).await,
        in_memory_node(7107).await,
        in_memory_node(7108).await,
    ];
    let mut mine = Vec::new();
    let mut theirs = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let port = 41000 + 1000 * i as u16;
        mine.push(client(n, port, ClientOptions::default()).await);
        theirs.push(client(n, port + 500, ClientOptions::default()).await);
    }
    let ours = RedLock::new(mine.iter().map(|c| c.lock("red")).collect());
    let other = RedLock::new(theirs.iter().map(|c| c.lock("red")).collect());
    let got = ours.try_lock().await.unwrap();
    assert!(got.acquired);
    assert!(got.validity.is_some());
    let refused = other.try_lock_for(Some(MS(300)), None).await.unwrap();
    assert!(!refused.acquired);
    for r in ours.unlock().await {
        r.unwrap();
    }
    // One node gone: two of three is still a majority.
    let [first, second, third] = nodes;
    third.shutdown().await;
    let out = other.try_lock_for(Some(MS(2000)), None).await.unwrap();
    assert!(out.acquired, "{out:?}");
    assert_eq!(out.nodes.iter().filter(|n| n.is_acquired()).count(), 2);
    // The stopped node's release fails; the others succeed.
    let released = other.unlock().await;
    assert_eq!(released.iter().filter(|r| r.is_ok()).count(), 2);
    first.shutdown().await;
    second.shutdown().await;
}

/// One event of the determinism workload: (virtual ms since the start, client, what).
type Event = (u64, usize, &'static str);

/// What a run of the determinism workload observed.
#[derive(Debug, PartialEq)]
struct Run {
    events: Vec<Event>,
    /// Client ids and owner fields.
    ids: Vec<String>,
    /// Per client: waits (on a message, a TTL or a backoff).
    waits: Vec<u64>,
}

/// Three seeded clients contend on one node for a spin lock (jittered backoff), a plain lock
/// (pub/sub waiters) and a fair lock (timestamps from the shared virtual wall clock), in a
/// fresh current-thread runtime with paused time. Returns the events and every id a client
/// wrote (client ids, owner fields), and how often each client waited.
fn simulate(seeds: [u64; 3]) -> Run {
    const ROUNDS: usize = 12;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async move {
        let node = in_memory_node(7110).await;
        let start = Instant::now();
        let log: Arc<Mutex<Vec<Event>>> = Arc::default();
        let mut ids = Vec::new();
        let mut tasks = Vec::new();
        let mut clients = Vec::new();
        for (i, seed) in seeds.into_iter().enumerate() {
            let options = ClientOptions::default()
                .seed(seed)
                .wall_clock(move || 1_700_000_000_000 + start.elapsed().as_millis() as u64);
            let c = client(&node, 41000 + 1000 * i as u16, options).await;
            let spin = c
                .spin_lock("spin")
                .with_backoff(Backoff::exponential(MS(1), MS(32), 2).jitter(MS(8)));
            let plain = c.lock("plain");
            let fair = c.fair_lock("fair");
            ids.extend([
                c.id().to_owned(),
                spin.owner_field().to_owned(),
                plain.owner_field().to_owned(),
                fair.owner_field().to_owned(),
            ]);
            clients.push(c);
            let log = log.clone();
            tasks.push(tokio::spawn(async move {
                let note = |what: &'static str| {
                    let ms = start.elapsed().as_millis() as u64;
                    log.lock().unwrap().push((ms, i, what));
                };
                for _ in 0..ROUNDS {
                    if spin.try_lock_for(MS(60), Some(MS(1000))).await.unwrap() {
                        note("spin acquired");
                        tokio::time::sleep(MS(3 + i as u64)).await;
                        spin.unlock().await.unwrap();
                    } else {
                        note("spin gave up");
                    }
                    if plain.try_lock_for(MS(200), None).await.unwrap() {
                        note("plain acquired");
                        tokio::time::sleep(MS(4)).await;
                        plain.unlock().await.unwrap();
                    } else {
                        note("plain gave up");
                    }
                    if fair.try_lock_for(MS(200), None).await.unwrap() {
                        note("fair acquired");
                        tokio::time::sleep(MS(3)).await;
                        fair.unlock().await.unwrap();
                    } else {
                        note("fair gave up");
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        node.shutdown().await;
        let events = log.lock().unwrap().clone();
        let waits = clients.iter().map(|c| c.metrics().waits).collect();
        Run { events, ids, waits }
    })
}

#[test]
fn a_seeded_workload_over_streams_replays_event_for_event() {
    let first = simulate([11, 12, 13]);
    assert_eq!(first.events.len(), 3 * 3 * 12);
    assert!(first.waits.iter().all(|&w| w > 0), "{:?}", first.waits);
    let again = simulate([11, 12, 13]);
    assert_eq!(first, again);
    // Other seeds: other jitter, so another interleaving (and other ids).
    let other = simulate([21, 22, 23]);
    assert_ne!(first.events, other.events);
    assert_ne!(first.ids, other.ids);
}

// Issue 36, item 8: a wait is bounded by its wait time, its subscription included. The client's
// pub/sub node hangs (every stream after the command connection is never answered): each
// bounded wait gives up at its end, as Redisson's tryLock returns false when its subscription
// times out, instead of sleeping out the pub/sub timeout (10 s here) and failing.
#[tokio::test(start_paused = true)]
async fn bounded_waits_end_on_time_while_the_pubsub_node_hangs() {
    let n = in_memory_node(7361).await;
    let acceptor = n.acceptor();
    let dialed = Arc::new(AtomicU16::new(0));
    let hung: Arc<Mutex<Vec<tokio::io::DuplexStream>>> = Arc::default();
    let connector = {
        let hung = hung.clone();
        move || {
            let first = dialed.fetch_add(1, Ordering::Relaxed) == 0;
            let acceptor = acceptor.clone();
            let hung = hung.clone();
            async move {
                let (ours, theirs) = tokio::io::duplex(64 * 1024);
                if first {
                    acceptor.serve_stream(theirs, SocketAddr::from(([127, 0, 0, 1], 42000)));
                } else {
                    hung.lock().unwrap().push(theirs);
                }
                Ok::<_, io::Error>(ours)
            }
        }
    };
    let c = Client::open_over(connector, ClientOptions::default().seed(7))
        .await
        .unwrap();
    let holder = client(&n, 42100, ClientOptions::default().seed(8)).await;
    holder.lock("hung").lock().await.unwrap();
    let bound = Duration::from_secs(5);
    let got = timeout(bound, c.lock("hung").try_lock_for(MS(500), None))
        .await
        .expect("the lock's 500 ms wait ended");
    assert!(!got.unwrap());
    let fair = holder.fair_lock("hung-fair");
    fair.lock().await.unwrap();
    let got = timeout(bound, c.fair_lock("hung-fair").try_lock_for(MS(500), None))
        .await
        .expect("the fair lock's 500 ms wait ended");
    assert!(!got.unwrap());
    let got = timeout(bound, c.semaphore("hung-sem").try_acquire_for(MS(500)))
        .await
        .expect("the semaphore's 500 ms wait ended");
    assert!(!got.unwrap());
    let pes = c.permit_expirable_semaphore("hung-pes");
    assert!(pes.try_set_permits(0).await.unwrap());
    let got = timeout(bound, pes.try_acquire_for(MS(500), None))
        .await
        .expect("the permit semaphore's 500 ms wait ended");
    assert!(got.unwrap().is_none());
    let latch = c.count_down_latch("hung-latch");
    assert!(latch.try_set_count(1).await.unwrap());
    let got = timeout(bound, latch.wait_for(MS(500)))
        .await
        .expect("the latch's 500 ms wait ended");
    assert!(!got.unwrap());
    assert!(
        !hung.lock().unwrap().is_empty(),
        "the pub/sub node was never dialed"
    );
}

/// The arguments and length of the complete request at the start of `buf`, if it is all
/// there (a RESP multibulk of bulk strings, as clients send them).
fn request(buf: &[u8]) -> Option<(Vec<Vec<u8>>, usize)> {
    let line = |at: usize| -> Option<(usize, usize)> {
        let end = buf.get(at..)?.windows(2).position(|w| w == b"\r\n")? + at;
        let n = std::str::from_utf8(buf.get(at + 1..end)?)
            .ok()?
            .parse()
            .ok()?;
        Some((n, end + 2))
    };
    let (count, mut at) = line(0)?;
    let mut args = Vec::new();
    for _ in 0..count {
        let (len, start) = line(at)?;
        args.push(buf.get(start..start + len)?.to_vec());
        at = start + len + 2;
        if at > buf.len() {
            return None;
        }
    }
    Some((args, at))
}

/// Copies the client's requests to the server, leaving out every `WAIT` (each request is
/// parsed as a RESP multibulk of bulk strings, as clients send them): its answer never comes.
async fn forward_without_wait(
    mut from: impl tokio::io::AsyncRead + Unpin,
    mut to: impl tokio::io::AsyncWrite + Unpin,
) -> io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = from.read(&mut chunk).await?;
        if n == 0 {
            return to.shutdown().await;
        }
        buf.extend_from_slice(&chunk[..n]);
        while let Some((args, len)) = request(&buf) {
            let bytes: Vec<u8> = buf.drain(..len).collect();
            if !(args.len() == 3 && args[0] == b"WAIT") {
                to.write_all(&bytes).await?;
            }
        }
    }
}

// Issue 36, item 2, on our server: a write's WAIT that fails by a response timeout (its answer
// never comes: the link drops every WAIT) after the write ran. An acquisition is rolled back
// before the error is returned (no lock left held for its lease, no permit gone); a release
// stands and reports success (a retry would release twice).
#[tokio::test(start_paused = true)]
async fn a_write_whose_wait_times_out_is_rolled_back_or_stands() {
    let n = in_memory_node(7362).await;
    let acceptor = n.acceptor();
    let port = Arc::new(AtomicU16::new(43000));
    let connector = move || {
        let acceptor = acceptor.clone();
        let port = port.fetch_add(1, Ordering::Relaxed);
        async move {
            let (ours, near) = tokio::io::duplex(64 * 1024);
            let (far, theirs) = tokio::io::duplex(64 * 1024);
            acceptor.serve_stream(theirs, SocketAddr::from(([127, 0, 0, 1], port)));
            let (near_read, mut near_write) = tokio::io::split(near);
            let (mut far_read, far_write) = tokio::io::split(far);
            tokio::spawn(forward_without_wait(near_read, far_write));
            tokio::spawn(async move { tokio::io::copy(&mut far_read, &mut near_write).await });
            Ok::<_, io::Error>(ours)
        }
    };
    let options = ClientOptions::default()
        .seed(9)
        .replica_sync(locksmith_lock::ReplicaSync::Replicas(1))
        .response_timeout(MS(300))
        .replica_sync_timeout(MS(200));
    let c = Client::open_over(connector, options).await.unwrap();
    let admin = client(&n, 43500, ClientOptions::default().seed(10)).await;
    let exists = |key: &'static str| {
        let admin = admin.clone();
        async move {
            let n: i64 = redis::cmd("EXISTS")
                .arg(key)
                .query_async(&mut admin.connection())
                .await
                .unwrap();
            n == 1
        }
    };
    let err = c.lock("no-wait").lock().await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(!exists("no-wait").await, "the lock stayed held");
    assert!(!c.lock("no-wait").is_renewing());
    assert!(c.fair_lock("no-wait-fair").try_lock().await.is_err());
    assert!(!exists("no-wait-fair").await);
    assert!(c.fenced_lock("no-wait-fenced").try_lock().await.is_err());
    assert!(!exists("no-wait-fenced").await);
    // Semaphores: permits taken are given back; a release stands once.
    assert!(admin
        .semaphore("no-wait-sem")
        .try_set_permits(3)
        .await
        .unwrap());
    let sem = c.semaphore("no-wait-sem");
    assert!(sem.try_acquire_many(2).await.is_err());
    assert_eq!(sem.available_permits().await.unwrap(), 3);
    sem.release().await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 4);
    let pes = admin.permit_expirable_semaphore("no-wait-pes");
    assert!(pes.try_set_permits(2).await.unwrap());
    let pes = c.permit_expirable_semaphore("no-wait-pes");
    assert!(pes.try_acquire_many(2, None).await.is_err());
    assert_eq!(pes.available_permits().await.unwrap(), 2);
    assert_eq!(pes.acquired_permits().await.unwrap(), 0);
}

// Issue 36, item 10: a spin lock's release whose answer is lost (the script ran, then the link
// dropped before the reply) is retried with the same request id; Redisson's unlock latch
// answers the retry with the first answer, so a re-entered lock is decremented once and keeps
// its outer hold.
#[tokio::test(start_paused = true)]
async fn a_spin_release_retried_after_a_lost_answer_decrements_once() {
    use std::sync::atomic::AtomicBool;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let n = in_memory_node(7363).await;
    let acceptor = n.acceptor();
    let port = Arc::new(AtomicU16::new(44000));
    // Set by the test: the next script request cuts its link once the server has it, and its
    // answer never reaches the client.
    let cut_next = Arc::new(AtomicBool::new(false));
    let connector = {
        let cut_next = cut_next.clone();
        move || {
            let acceptor = acceptor.clone();
            let port = port.fetch_add(1, Ordering::Relaxed);
            let cut_next = cut_next.clone();
            async move {
                let (ours, near) = tokio::io::duplex(64 * 1024);
                let (far, theirs) = tokio::io::duplex(64 * 1024);
                acceptor.serve_stream(theirs, SocketAddr::from(([127, 0, 0, 1], port)));
                let (mut near_read, mut near_write) = tokio::io::split(near);
                let (mut far_read, mut far_write) = tokio::io::split(far);
                let cut = Arc::new(AtomicBool::new(false));
                let cut_up = cut.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 16 * 1024];
                    while let Ok(n) = near_read.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        let request = &buf[..n];
                        let script = request.windows(7).any(|w| w == b"EVALSHA");
                        if script && cut_next.swap(false, Ordering::SeqCst) {
                            cut_up.store(true, Ordering::SeqCst);
                            let _ = far_write.write_all(request).await;
                            // Held open a while, so the server runs the request (it drops
                            // what a closed connection sent).
                            tokio::time::sleep(Duration::from_secs(1)).await;
                            return;
                        }
                        if far_write.write_all(request).await.is_err() {
                            break;
                        }
                    }
                });
                tokio::spawn(async move {
                    let mut buf = [0u8; 16 * 1024];
                    while let Ok(n) = far_read.read(&mut buf).await {
                        if n == 0 || cut.load(Ordering::SeqCst) {
                            break;
                        }
                        if near_write.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    let _ = near_write.shutdown().await;
                });
                Ok::<_, io::Error>(ours)
            }
        }
    };
    let c = Client::open_over(connector, ClientOptions::default().seed(11))
        .await
        .unwrap();
    let l = c.spin_lock("spin-retried");
    // The scripts are loaded first (a NOSCRIPT answer cut would change nothing).
    l.lock().await.unwrap();
    l.unlock().await.unwrap();
    l.lock().await.unwrap();
    l.lock().await.unwrap();
    cut_next.store(true, Ordering::SeqCst);
    l.unlock().await.unwrap();
    assert!(
        !cut_next.load(Ordering::SeqCst),
        "the release was never cut"
    );
    let admin = client(&n, 44500, ClientOptions::default().seed(12)).await;
    let count: Option<i64> = redis::cmd("HGET")
        .arg("spin-retried")
        .arg(l.owner_field())
        .query_async(&mut admin.connection())
        .await
        .unwrap();
    assert_eq!(count, Some(1), "the retry released the outer hold too");
    l.unlock().await.unwrap();
}

/// Copies the client's requests to the server, leaving out the first whose arguments `drop`
/// picks (its answer never comes); every later one goes through.
async fn forward_dropping_once(
    mut from: impl tokio::io::AsyncRead + Unpin,
    mut to: impl tokio::io::AsyncWrite + Unpin,
    pick: impl Fn(&[Vec<u8>]) -> bool,
    dropped: Arc<std::sync::atomic::AtomicBool>,
) -> io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = from.read(&mut chunk).await?;
        if n == 0 {
            return to.shutdown().await;
        }
        buf.extend_from_slice(&chunk[..n]);
        while let Some((args, len)) = request(&buf) {
            let bytes: Vec<u8> = buf.drain(..len).collect();
            if pick(&args) && !dropped.swap(true, Ordering::Relaxed) {
                continue;
            }
            to.write_all(&bytes).await?;
        }
    }
}

// Issue 36, item 15: a fair waiter whose wait ran out leaves the queue even when that step
// fails: its first `acquire failed` script (EVALSHA with the queue as first of two keys) is
// lost on the link and times out. The queue guard stays armed until the script answered, so
// its Drop leaves the queue; it used to be disarmed first, leaving the waiter queued (and
// every later waiter behind it) for the fair wait timeout, 5 minutes.
#[tokio::test(start_paused = true)]
async fn a_fair_waiter_leaves_the_queue_when_its_first_leave_fails() {
    let n = in_memory_node(7363).await;
    let acceptor = n.acceptor();
    let port = Arc::new(AtomicU16::new(44000));
    let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let connector = move || {
        let acceptor = acceptor.clone();
        let port = port.fetch_add(1, Ordering::Relaxed);
        let dropped = dropped.clone();
        async move {
            let (ours, near) = tokio::io::duplex(64 * 1024);
            let (far, theirs) = tokio::io::duplex(64 * 1024);
            acceptor.serve_stream(theirs, SocketAddr::from(([127, 0, 0, 1], port)));
            let (near_read, mut near_write) = tokio::io::split(near);
            let (mut far_read, far_write) = tokio::io::split(far);
            let leave = |args: &[Vec<u8>]| {
                args.len() > 3
                    && args[0].eq_ignore_ascii_case(b"EVALSHA")
                    && args[2] == b"2"
                    && args[3].starts_with(b"redisson_lock_queue:")
            };
            tokio::spawn(forward_dropping_once(near_read, far_write, leave, dropped));
            tokio::spawn(async move { tokio::io::copy(&mut far_read, &mut near_write).await });
            Ok::<_, io::Error>(ours)
        }
    };
    let options = ClientOptions::default().seed(11).response_timeout(MS(500));
    let c = Client::open_over(connector, options).await.unwrap();
    let holder = client(&n, 44500, ClientOptions::default().seed(12)).await;
    let held = holder.fair_lock("leave-queue");
    held.lock().await.unwrap();
    let got = timeout(
        Duration::from_secs(10),
        c.fair_lock("leave-queue").try_lock_for(MS(300), None),
    )
    .await
    .expect("the wait ended");
    assert!(got.is_err(), "the lost leave was not noticed: {got:?}");
    let queued = || {
        let holder = holder.clone();
        async move {
            let n: i64 = redis::cmd("LLEN")
                .arg("redisson_lock_queue:{leave-queue}")
                .query_async(&mut holder.connection())
                .await
                .unwrap();
            n
        }
    };
    assert!(
        eventually(Duration::from_secs(5), || async { queued().await == 0 }).await,
        "the waiter stayed in the queue"
    );
    held.unlock().await.unwrap();
}
