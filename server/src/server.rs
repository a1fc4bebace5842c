//! Starting and stopping a node: the accept loop, the connection limit, the active expiry
//! task and graceful shutdown (the shape of mini-redis `server.rs`).

use crate::client::Endpoints;
use crate::clock::Clock;
use crate::config::runtime::RuntimeConfig;
use crate::config::table;
use crate::config::Config;
use crate::connection;
use crate::connection::{ClientStream, Socket};
use crate::net_stream::{NetStream, UnixSocketListener};
use crate::node::{Effects, Node};
use crate::write_round::WriteRound;
use rand::{Rng, SeedableRng};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;

/// Redis's active expiry runs `hz` (10) times a second.
const ACTIVE_EXPIRE_PERIOD: Duration = Duration::from_millis(100);
/// Connections accepted per wake-up of the listener at most (Redis's `MAX_ACCEPTS_PER_CALL`).
const MAX_ACCEPTS_PER_CALL: usize = 1000;
/// Percent of each period a slow cycle may spend, plus 2 per `active-expire-effort` step
/// above 1 (Redis's `ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC`).
const ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC: u64 = 25;
/// Longest a fast cycle runs, plus a quarter of it per effort step above 1; fast cycles start
/// at most every twice that (Redis's `ACTIVE_EXPIRE_CYCLE_FAST_DURATION`, in µs).
const ACTIVE_EXPIRE_CYCLE_FAST_DURATION: u64 = 1000;
/// Longest the cycle holds the state lock at a stretch (µs): between slices every waiting
/// client runs, so a wave of expiring keys never stalls the others for a whole cycle.
const ACTIVE_EXPIRE_SLICE_US: u64 = 500;
/// Deadline entries examined (most of them reclaim a key) between two reads of the clock.
const ACTIVE_EXPIRE_CHUNK: usize = 64;
/// Most deadline entries one slice examines.
const ACTIVE_EXPIRE_SLICE_KEYS: usize = 4096;
/// A cycle's budget in deadline entries examined: at most this many a µs of it. No machine
/// reclaims a key in 16 ns (an optimised build takes about 130), so the time budget ends a
/// cycle first; this one ends it when the clock does not move (tokio's paused clock in tests)
/// or moves coarsely, and so keeps a cycle's work in proportion to its budget there too.
const ACTIVE_EXPIRE_KEYS_PER_US: u64 = 64;
/// Longest a slow cycle moves keyspace buckets into resized tables (µs; Redis's
/// `incrementallyRehash` runs for 1 ms).
const REHASH_CRON_US: u64 = 1000;

/// Entry point: `Server::builder()…start().await`, or [`Server::start`] with a [`Config`].
#[derive(Debug)]
pub struct Server;

impl Server {
    /// A builder with Redis's defaults and port 0 (a free port).
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// Starts a node with `config` on the current tokio runtime.
    ///
    /// # Errors
    ///
    /// When the listener cannot be bound.
    pub async fn start(config: Config) -> io::Result<ServerHandle> {
        ServerBuilder {
            config,
            clock: None,
            cluster: None,
            in_memory: None,
        }
        .start()
        .await
    }
}

/// Builds and starts a server node.
#[derive(Debug, Default)]
pub struct ServerBuilder {
    config: Config,
    clock: Option<Clock>,
    /// The node's place in a cluster a harness topology built.
    cluster: Option<crate::cluster::Cluster>,
    /// No listener: clients come through [`ServerHandle::serve_stream`] only, and the node
    /// advertises this address.
    in_memory: Option<SocketAddr>,
}

impl ServerBuilder {
    /// Port to listen on (0 = a free port).
    pub fn port(mut self, port: u16) -> Self {
        self.config.port = port;
        self
    }

    /// Address to listen on.
    pub fn bind(mut self, addr: std::net::IpAddr) -> Self {
        self.config.bind = addr;
        self
    }

    /// Requires clients to `AUTH` with `password`.
    pub fn requirepass(mut self, password: impl Into<String>) -> Self {
        self.config.requirepass = Some(password.into());
        self
    }

    /// Number of databases.
    pub fn databases(mut self, n: usize) -> Self {
        self.config.databases = n.max(1);
        self
    }

    /// `busy-reply-threshold`.
    pub fn busy_reply_threshold(mut self, d: Duration) -> Self {
        self.config.busy_reply_threshold = d;
        self
    }

    /// The server the node reproduces (default [`Compat::Redis70`](crate::Compat::Redis70)).
    pub fn compat(mut self, compat: crate::Compat) -> Self {
        self.config.compat = compat;
        self
    }

    /// Seed for the node's random choices.
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = Some(seed);
        self
    }

    /// Uses `clock` as the node's clock (e.g. one the harness shifts).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// `notify-keyspace-events` at start (e.g. `"KEA"`); unknown letters are ignored as a whole
    /// (no notifications), as an invalid value is refused by Redis.
    pub fn notify_keyspace_events(mut self, flags: impl Into<String>) -> Self {
        self.config.notify_keyspace_events = flags.into();
        self
    }

    /// `tcp-backlog`: the listen backlog (default 511).
    pub fn tcp_backlog(mut self, backlog: u32) -> Self {
        self.config.tcp_backlog = backlog;
        self
    }

    /// `enable-debug-command`: who may run `DEBUG` (default
    /// [`EnableCommand::No`](crate::EnableCommand::No), as Redis 7).
    pub fn enable_debug_command(mut self, who: crate::EnableCommand) -> Self {
        self.config.enable_debug_command = who;
        self
    }

    /// Cluster mode (`cluster-enabled yes`): alone, the node is a one-node cluster serving
    /// all 16384 slots.
    pub fn cluster(mut self, enabled: bool) -> Self {
        self.config.cluster_enabled = enabled;
        self
    }

    /// Makes the node member `me` of the cluster `view` describes (cluster mode on): it serves
    /// the slots the view gives it, redirects the others with `MOVED` and reaches the other
    /// members' subscribers with its `PUBLISH` (a harness topology starts each node so).
    pub fn cluster_member(mut self, view: &crate::control::ClusterView, me: usize) -> Self {
        self.config.cluster_enabled = true;
        self.cluster = Some(crate::cluster::Cluster {
            view: view.view.clone(),
            me,
        });
        self
    }

    /// Bounds the memory of the Lua interpreter, in bytes (0: no bound; default 1 GiB); see
    /// [`Config::lua_memory_limit`].
    pub fn lua_memory_limit(mut self, bytes: u64) -> Self {
        self.config.lua_memory_limit = bytes;
        self
    }

    /// Sets any `CONFIG SET` parameter at start (e.g. `("maxmemory", "10mb")`), as
    /// redis-server's `--name value`; see [`Config::settings`].
    pub fn config_set(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.settings.push((name.into(), value.into()));
        self
    }

    /// Starts the node without a listener: it binds no socket and serves only the streams
    /// given to [`ServerHandle::serve_stream`] (a simulation's in-memory links), advertising
    /// `addr` as its own (`INFO`, `ROLE`, `CLUSTER SLOTS`, `CONFIG GET port`).
    pub fn in_memory(mut self, addr: SocketAddr) -> Self {
        self.in_memory = Some(addr);
        self
    }

    /// The configuration so far.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Starts the node on a runtime of its own (one worker thread) and returns at once with
    /// it serving: for synchronous code, such as a plain `#[test]` without tokio. The node
    /// stops when the returned [`BlockingServer`] is dropped.
    ///
    /// ```
    /// let server = locksmith_server::Server::builder().start_blocking()?;
    /// let mut con = redis::Client::open(server.url())?.get_connection()?;
    /// let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con)?;
    /// let v: String = redis::cmd("GET").arg("k").query(&mut con)?;
    /// assert_eq!(v, "v");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// When the runtime cannot be built or the listener cannot be bound.
    pub fn start_blocking(self) -> io::Result<BlockingServer> {
        let runtime = runtime_builder(1)
            .thread_name("locksmith-server")
            .enable_all()
            .build()?;
        let handle = runtime.block_on(self.start())?;
        Ok(BlockingServer {
            handle,
            runtime: Some(runtime),
        })
    }

    /// Binds the listener and starts serving on the current tokio runtime.
    ///
    /// # Errors
    ///
    /// When the listener cannot be bound, or a start-up setting ([`Config::settings`]) is
    /// unknown or invalid.
    pub async fn start(self) -> io::Result<ServerHandle> {
        let runtime = RuntimeConfig::new(&self.config)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let (listener, addr) = match self.in_memory {
            Some(addr) => (None, addr),
            None => {
                let listener = crate::control::listen(
                    SocketAddr::new(runtime.bind(), runtime.port()),
                    runtime.tcp_backlog(),
                )?;
                let addr = listener.local_addr()?;
                (Some(listener), addr)
            }
        };
        // `unixsocket`: a second listener, beside the TCP one (never for an in-memory node).
        let unix_path = runtime.unixsocket();
        let unix = if unix_path.is_empty() || listener.is_none() {
            None
        } else {
            Some(UnixSocketListener::bind(
                &unix_path,
                &runtime.dir(),
                runtime.unixsocketperm(),
                runtime.tcp_backlog(),
            )?)
        };
        // CONFIG GET port and INFO report the port actually bound.
        runtime.set_bound_port(addr.port());
        let clock = self.clock.unwrap_or_default();
        let seed = self.config.seed.unwrap_or_else(rand::random);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5eed);
        let run_id: String = (0..40)
            .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
            .collect();
        let cluster = match self.cluster {
            Some(cluster) => Some(cluster),
            None if runtime.cluster_enabled() => Some(crate::cluster::Cluster::single(
                crate::cluster::node_id(&mut rng),
                addr,
            )),
            None => None,
        };
        let node = Arc::new(Node::new(
            Arc::new(runtime),
            clock,
            addr,
            run_id,
            seed,
            crate::cmd::HOOKS,
        ));
        let _ = node.me.set(Arc::downgrade(&node));
        if let Some(master) = node.config.replicaof() {
            let mut state = node.state.lock().await;
            crate::replication::follow::replicaof(&mut state, &node, Some(master));
        }
        // An RDB file is loaded when its place was given (`--dir`, `--dbfilename`), so a
        // stray dump.rdb in the working directory never changes a test server's data.
        let placed = self.config.settings.iter().any(|(name, _)| {
            table::find(name.as_bytes()).is_some_and(|p| matches!(p.name, "dir" | "dbfilename"))
        });
        if placed {
            let mut state = node.state.lock().await;
            crate::cmd::load_at_start(&mut state, &node)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        }
        // Users from the ACL file, before the first client (Redis aborts its start on an
        // error in the file).
        let aclfile = node.config.aclfile();
        if !aclfile.is_empty() {
            let path = crate::cmd::acl::resolve_path(&node.config.dir(), &aclfile);
            crate::cmd::acl::load_acl_file(&node, &path, &aclfile).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("Aborting Redis startup because of ACL errors: {e}"),
                )
            })?;
        }
        if let Some(cluster) = cluster {
            let offset = node.state.lock().await.repl.offset_mirror();
            cluster.attach(&node, offset);
            let _ = node.cluster.set(cluster);
        }
        tracing::info!(%addr, seed, "locksmith server ready to accept connections");
        let (shutdown_tx, _) = broadcast::channel(1);
        let (done_tx, done_rx) = mpsc::channel::<()>(1);
        let accept = tokio::spawn(accept_loop(
            Listeners {
                tcp: listener,
                unix,
            },
            node.clone(),
            shutdown_tx.clone(),
            done_tx.clone(),
        ));
        let expire = tokio::spawn(active_expire_loop(
            node.clone(),
            shutdown_tx.subscribe(),
            done_tx.clone(),
        ));
        Ok(ServerHandle {
            addr,
            node,
            shutdown_tx,
            done_tx: Some(done_tx),
            done_rx: Some(done_rx),
            tasks: vec![accept, expire],
            runtime: tokio::runtime::Handle::current(),
        })
    }
}

/// The runtime a node brings its own of (the binary's, [`ServerBuilder::start_blocking`]'s):
/// multi-thread even with one worker, so that a long script hands the worker's other
/// connections to a new thread and they get BUSY (see `script::InlineRun`). Connections
/// woken by one poll of the I/O driver run in the order epoll reported them, as Redis runs
/// them: tokio's LIFO slot would run the last one first, so of two commands sent in turn on
/// two connections the second ran first
/// (`commands_sent_in_turn_on_two_connections_run_in_turn`); no cost was measurable in the
/// pipelined benchmarks. Turning the slot off needs `--cfg tokio_unstable`
/// (`.cargo/config.toml`).
///
/// Its threads (workers and blocking pool) get [`crate::script::THREAD_STACK`] of stack, so a
/// script runs on the thread's own stack and never needs a new one (`script::on_script_stack`).
pub(crate) fn runtime_builder(workers: usize) -> tokio::runtime::Builder {
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.worker_threads(workers);
    runtime.thread_stack_size(crate::script::THREAD_STACK);
    #[cfg(tokio_unstable)]
    runtime.disable_lifo_slot();
    runtime
}

/// The sockets a node accepts connections on.
struct Listeners {
    /// The TCP listener (none for an in-memory node).
    tcp: Option<TcpListener>,
    /// The `unixsocket` listener, if one was asked for.
    unix: Option<UnixSocketListener>,
}

/// Accepts connections until the node stops; with no listener (an in-memory node) only
/// watches for `SHUTDOWN`. The Unix socket's file goes when this returns.
async fn accept_loop(
    listeners: Listeners,
    node: Arc<Node>,
    shutdown: broadcast::Sender<()>,
    done: mpsc::Sender<()>,
) {
    let mut stop = shutdown.subscribe();
    let round = Arc::new(WriteRound::default());
    loop {
        let accepted = tokio::select! {
            biased;
            _ = stop.recv() => return,
            _ = node.live.stopped() => {
                // SHUTDOWN: stop every connection and the background tasks.
                let _ = shutdown.send(());
                return;
            }
            accepted = async {
                match &listeners.tcp {
                    Some(listener) => listener.accept().await,
                    None => std::future::pending().await,
                }
            } => accepted.map(|(socket, peer)| tcp_accepted(socket, peer)),
            accepted = async {
                match &listeners.unix {
                    Some(listener) => listener.accept().await.map(|s| (s, listener.path())),
                    None => std::future::pending().await,
                }
            } => accepted.map(|(socket, path)| {
                // A Unix socket's client is local: the loopback address stands for it.
                let ends = Endpoints {
                    addr: SocketAddr::from(([127, 0, 0, 1], 0)),
                    laddr: node.addr,
                    unix: Some(path.clone()),
                };
                Some((NetStream::Unix(socket), ends))
            }),
        };
        let (socket, ends) = match accepted {
            Ok(Some(accepted)) => accepted,
            Ok(None) => continue,
            Err(e) => {
                // Too many open files and the like: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        admit(
            &node,
            Socket::Net(Arc::new(socket)),
            ends,
            Some(&round),
            &shutdown,
            &done,
        );
        // What else waits in the TCP backlog now is accepted before the new connections
        // run, up to Redis's 1000 per readable event: one accept per turn of the runtime
        // (with thousands of new connections' tasks between turns) let a storm of connects
        // overflow `tcp-backlog` and wait out SYN retransmits. Unconstrained: tokio's
        // cooperative budget would end the drain after 128.
        if let Some(listener) = &listeners.tcp {
            tokio::task::unconstrained(async {
                for _ in 1..MAX_ACCEPTS_PER_CALL {
                    let ready =
                        std::future::poll_fn(|cx| std::task::Poll::Ready(listener.poll_accept(cx)))
                            .await;
                    let std::task::Poll::Ready(Ok((socket, peer))) = ready else {
                        break;
                    };
                    if let Some((socket, ends)) = tcp_accepted(socket, peer) {
                        let socket = Socket::Net(Arc::new(socket));
                        admit(&node, socket, ends, Some(&round), &shutdown, &done);
                    }
                }
            })
            .await;
        }
    }
}

/// A TCP connection ready to serve: no Nagle delay, and its endpoints; `None` for a socket
/// whose local address cannot be read (its peer already gone), which is dropped.
fn tcp_accepted(socket: tokio::net::TcpStream, peer: SocketAddr) -> Option<(NetStream, Endpoints)> {
    let _ = socket.set_nodelay(true);
    let local = socket.local_addr().ok()?;
    Some((NetStream::Tcp(socket), Endpoints::tcp(peer, local)))
}

/// Counts a new connection against `maxclients` and serves it on a task of its own, or
/// refuses it with Redis's error.
fn admit(
    node: &Arc<Node>,
    socket: Socket,
    ends: Endpoints,
    round: Option<&Arc<WriteRound>>,
    shutdown: &broadcast::Sender<()>,
    done: &mpsc::Sender<()>,
) {
    node.connections_received.fetch_add(1, Ordering::Relaxed);
    // `maxclients` can change at run time (CONFIG SET), so count instead of a semaphore.
    let max = node.config.maxclients();
    if node.live.connected.fetch_add(1, Ordering::AcqRel) >= max {
        node.live.connected.fetch_sub(1, Ordering::AcqRel);
        node.live.rejected.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(refuse(socket));
        return;
    }
    let node = node.clone();
    let stop = shutdown.subscribe();
    let done = done.clone();
    let round = round.cloned();
    tokio::spawn(async move {
        connection::serve(node.clone(), socket, ends, round, stop).await;
        node.live.connected.fetch_sub(1, Ordering::AcqRel);
        drop(done);
    });
}

/// Redis answers a client over `maxclients` with this error and closes.
async fn refuse(mut socket: Socket) {
    let _ = socket
        .write_all(b"-ERR max number of clients reached\r\n")
        .await;
}

/// The node's periodic task: Redis's active expiry (`activeExpireCycle`) and the keyspace's
/// incremental rehashing.
///
/// Every `1000 / hz` ms a slow cycle reclaims due keys, earliest deadline first, for at most
/// [`ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC`] % of the period. Where Redis samples keys and
/// repeats while more than a tenth of a sample had expired, the deadline index hands over
/// exactly the due keys, so the cycle goes on until none is left or the budget is spent.
/// When a cycle ends at its budget with keys still due, fast cycles of
/// [`ACTIVE_EXPIRE_CYCLE_FAST_DURATION`] follow in between, as Redis runs them before
/// sleeping. The work is cut into slices of [`ACTIVE_EXPIRE_SLICE_US`] under the state lock,
/// released in between so other clients' commands run.
async fn active_expire_loop(
    node: Arc<Node>,
    mut stop: broadcast::Receiver<()>,
    done: mpsc::Sender<()>,
) {
    let mut effects = Effects::default();
    let mut period = ACTIVE_EXPIRE_PERIOD;
    let clock = &node.clock;
    // Scheduled on the clock's ticks, which a clock jump does not move (a jump backwards
    // would otherwise hold the next cycle back by the jump).
    let mut last_slow_us = clock.tick_us();
    let mut last_fast_us = 0;
    let mut behind = false;
    // Keyspace memory since the last release of free memory to the system.
    let mut watermark = crate::db::release::Watermark::default();
    loop {
        let now = clock.tick_us();
        let to_slow = (last_slow_us + period.as_micros() as u64).saturating_sub(now);
        // A fast cycle starts at most every twice its duration after the previous one.
        let to_fast = (last_fast_us + 2 * ACTIVE_EXPIRE_CYCLE_FAST_DURATION).saturating_sub(now);
        let wait = if behind {
            to_slow.min(to_fast)
        } else {
            to_slow
        };
        tokio::select! {
            biased;
            _ = tokio::time::sleep(Duration::from_micros(wait)) => {}
            _ = stop.recv() => break,
        }
        let start = clock.tick_us();
        if node.live.cron_paused.load(Ordering::Relaxed) {
            // DEBUG PAUSE-CRON: Redis's `serverCron` returns at once, and no slow cycle runs
            // to start fast ones.
            last_slow_us = start;
            behind = false;
            continue;
        }
        let slow = start.saturating_sub(last_slow_us) >= period.as_micros() as u64;
        if slow {
            last_slow_us = start;
            let mut state = node.state.lock().await;
            node.live.sample_rates(clock.now_ms(), state.stats.commands);
            // `hz` sets the cycle's frequency.
            period = Duration::from_millis(1000 / node.config.hz());
            let rehash_until = clock.tick_us() + REHASH_CRON_US;
            state.rehash_keyspace(|| clock.tick_us() < rehash_until);
            state.migrate.close_idle(clock.now_ms());
            let used = state.used_memory();
            node.live.note_memory(used);
            let fell = watermark.fell(usize::try_from(used).unwrap_or(usize::MAX));
            if fell || node.live.lazyfree.freed_since_asked() {
                crate::db::release::release();
            }
            crate::tracking::cron(&mut state, &node);
            let config = state.config.clone();
            crate::replication::cron(&mut state.repl, &config, clock.now_ms());
        } else {
            last_fast_us = start;
        }
        // `active-expire-effort` 1..=10, rescaled to 0..=9 as Redis does.
        let effort = node.config.active_expire_effort() - 1;
        let budget = if slow {
            let perc = ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC + 2 * effort;
            period.as_micros() as u64 * perc / 100
        } else {
            ACTIVE_EXPIRE_CYCLE_FAST_DURATION + ACTIVE_EXPIRE_CYCLE_FAST_DURATION * effort / 4
        };
        behind = expire_cycle(&node, &mut effects, budget).await;
    }
    // A replica's link to its master ends with the node.
    crate::replication::follow::stop(&node).await;
    drop(done);
}

/// One active expiry cycle of at most `budget` µs under the state lock (and at most
/// [`ACTIVE_EXPIRE_KEYS_PER_US`] keys a µs of it), in slices; returns whether it stopped at
/// its budget with keys still due.
async fn expire_cycle(node: &Node, effects: &mut Effects, budget: u64) -> bool {
    let clock = &node.clock;
    let max_keys = budget.saturating_mul(ACTIVE_EXPIRE_KEYS_PER_US);
    let mut spent = 0;
    let mut keys = 0;
    loop {
        let mut state = node.state.lock().await;
        let slice_start = clock.tick_us();
        let now = clock.us_at(slice_start) / 1000;
        // DEBUG SET-ACTIVE-EXPIRE 0 and CLIENT PAUSE stop the cycle, as in Redis.
        if !node.live.active_expire.load(Ordering::Relaxed) || node.live.pause.is_paused(now) {
            record_cycle_latency(&mut state, node, spent);
            return false;
        }
        let slice = ACTIVE_EXPIRE_SLICE_US.min(budget.saturating_sub(spent));
        let slice_keys = usize::try_from(max_keys - keys)
            .unwrap_or(usize::MAX)
            .min(ACTIVE_EXPIRE_SLICE_KEYS);
        let mut examined = 0;
        let mut more = true;
        while more && examined < slice_keys {
            let chunk = ACTIVE_EXPIRE_CHUNK.min(slice_keys - examined);
            let n = state.active_expire(now, chunk, effects);
            examined += n;
            more = n == chunk;
            if clock.tick_us().saturating_sub(slice_start) >= slice {
                break;
            }
        }
        state.finish_effects(node, effects);
        let elapsed = clock.tick_us().saturating_sub(slice_start);
        state.stats.expire_cycle_us += elapsed;
        spent += elapsed;
        keys += examined as u64;
        // A slice that stopped with keys still due either spent its time or reached the key
        // bound, so every slice but the last moves `spent` or `keys` on.
        let capped = more && (spent >= budget || keys >= max_keys);
        if capped {
            state.stats.expired_time_cap_reached_count += 1;
        }
        if !more || capped {
            record_cycle_latency(&mut state, node, spent);
            return more;
        }
        drop(state);
        // Let the clients that queued for the lock run before the next slice.
        tokio::task::yield_now().await;
    }
}

/// The latency monitor's `expire-cycle` event, as Redis's `activeExpireCycle` adds it: the
/// cycle's `spent_us` under the state lock (its slices together; the clients served in between
/// are not the cycle's latency), when it reaches `latency-monitor-threshold`.
fn record_cycle_latency(state: &mut crate::node::State, node: &Node, spent_us: u64) {
    let threshold_ms = node.config.latency_monitor_threshold_ms();
    let ms = spent_us / 1000;
    if threshold_ms > 0 && ms >= threshold_ms {
        let now_s = node.clock.now_us() / 1_000_000;
        state.latency.add("expire-cycle", now_s, ms);
    }
}

/// A running node. Dropping it asks the node to stop; [`ServerHandle::shutdown`] also waits.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    node: Arc<Node>,
    shutdown_tx: broadcast::Sender<()>,
    /// Held for connections served later ([`ServerHandle::serve_stream`]); dropped at
    /// shutdown so that waiting for `done_rx` ends.
    done_tx: Option<mpsc::Sender<()>>,
    done_rx: Option<mpsc::Receiver<()>>,
    tasks: Vec<JoinHandle<()>>,
    /// The runtime the node's tasks run on (the in-process client blocks on it).
    runtime: tokio::runtime::Handle,
}

impl ServerHandle {
    /// The address the node listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `redis://host:port/` for clients.
    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    /// The node's control surface (replica links, pauses, an admin hook; see
    /// [`crate::control`]).
    pub fn control(&self) -> crate::control::NodeControl {
        crate::control::NodeControl {
            node: self.node.clone(),
        }
    }

    /// An in-process client of this node (benchmarks; not for async contexts).
    #[doc(hidden)]
    pub fn local_client(&self) -> crate::local_client::LocalClient {
        crate::local_client::LocalClient::new(
            self.node.clone(),
            self.runtime.clone(),
            self.shutdown_tx.subscribe(),
        )
    }

    /// Serves one client over `stream` (anything tokio reads and writes, such as one end of
    /// [`tokio::io::duplex`]) as a connection from `peer` would be served: counted against
    /// `maxclients`, listed by `CLIENT LIST`, closed at shutdown. A simulation links its clients
    /// to a node this way, without sockets; scripts of such a client run inline on its task,
    /// so a current-thread runtime stays deterministic (no blocking pool).
    pub fn serve_stream(&self, stream: impl ClientStream, peer: SocketAddr) {
        self.acceptor().serve_stream(stream, peer);
    }

    /// A cloneable handle that serves streams for this node (see
    /// [`ServerHandle::serve_stream`]); once the node stopped it drops what it is given.
    pub fn acceptor(&self) -> StreamAcceptor {
        StreamAcceptor {
            node: self.node.clone(),
            addr: self.addr,
            shutdown: self.shutdown_tx.clone(),
            done: self.done_tx.as_ref().map(mpsc::Sender::downgrade),
        }
    }

    /// The node's clock (shift it to simulate a clock jump).
    pub fn clock(&self) -> &Clock {
        &self.node.clock
    }

    /// Number of clients blocked on keys (`BLPOP` and friends) right now.
    pub async fn blocked_clients(&self) -> usize {
        self.node.state.lock().await.blocked_clients()
    }

    /// Resolves when a client asked the node to stop (`SHUTDOWN`); the node is then already
    /// closing. Call [`ServerHandle::shutdown`] to wait for it.
    pub async fn stopped(&self) {
        self.node.live.stopped().await;
    }

    /// Stops accepting, closes every connection and waits (at most 5 s) for them to finish. A
    /// running script is stopped (as `SCRIPT KILL` does, also when it wrote) and `DEBUG SLEEP`
    /// ends early.
    pub async fn shutdown(mut self) {
        self.stop_and_wait().await;
    }

    /// [`ServerHandle::shutdown`] without consuming the handle.
    async fn stop_and_wait(&mut self) {
        self.stop_node();
        self.done_tx = None;
        for task in self.tasks.drain(..) {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
        if let Some(mut done) = self.done_rx.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), done.recv()).await;
        }
    }
}

impl ServerHandle {
    /// Tells every task of the node to stop: the listener, the connections, a running script
    /// and `DEBUG SLEEP`.
    fn stop_node(&self) {
        self.node.live.request_stop();
        if self.node.script.running.load(Ordering::Acquire) {
            self.node.script.kill.store(true, Ordering::Release);
        }
        let _ = self.shutdown_tx.send(());
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_node();
    }
}

/// Serves in-memory streams for a node ([`ServerHandle::acceptor`]); cheap to clone.
#[derive(Debug, Clone)]
pub struct StreamAcceptor {
    node: Arc<Node>,
    addr: SocketAddr,
    shutdown: broadcast::Sender<()>,
    /// Weak: an acceptor kept somewhere does not hold the node's shutdown open.
    done: Option<mpsc::WeakSender<()>>,
}

impl StreamAcceptor {
    /// [`ServerHandle::serve_stream`].
    pub fn serve_stream(&self, stream: impl ClientStream, peer: SocketAddr) {
        let Some(done) = self.done.as_ref().and_then(mpsc::WeakSender::upgrade) else {
            return;
        };
        if self.node.live.stop_requested() {
            return;
        }
        admit(
            &self.node,
            Socket::Stream(Box::new(stream)),
            Endpoints::tcp(peer, self.addr),
            None,
            &self.shutdown,
            &done,
        );
    }
}

/// A node running on a runtime of its own, for synchronous code: a plain `#[test]` starts a
/// fresh server in one line with [`BlockingServer::start`] (or a configured one with
/// [`ServerBuilder::start_blocking`]), and dropping it shuts the node down (bounded, 5 s) and
/// its runtime. Usable from async code too (dropped there, the node is told to stop and its
/// runtime shut down in the background).
#[derive(Debug)]
pub struct BlockingServer {
    handle: ServerHandle,
    runtime: Option<tokio::runtime::Runtime>,
}

impl BlockingServer {
    /// A fresh node with Redis's defaults on a free loopback port.
    ///
    /// ```
    /// let server = locksmith_server::BlockingServer::start()?;
    /// let mut con = redis::Client::open(server.url())?.get_connection()?;
    /// let pong: String = redis::cmd("PING").query(&mut con)?;
    /// assert_eq!(pong, "PONG");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// When the runtime cannot be built or the listener cannot be bound.
    pub fn start() -> io::Result<BlockingServer> {
        Server::builder().start_blocking()
    }

    /// The running node's handle (address, clock, control surface).
    pub fn handle(&self) -> &ServerHandle {
        &self.handle
    }

    /// The address the node listens on.
    pub fn addr(&self) -> SocketAddr {
        self.handle().addr()
    }

    /// The port the node listens on.
    pub fn port(&self) -> u16 {
        self.addr().port()
    }

    /// `redis://host:port/` for clients.
    pub fn url(&self) -> String {
        self.handle().url()
    }

    /// An in-process client of the node (see [`crate::LocalClient`]).
    #[doc(hidden)]
    pub fn local_client(&self) -> crate::local_client::LocalClient {
        self.handle().local_client()
    }

    /// Shuts the node down and waits for it (at most 5 s), then its runtime.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            // Inside a runtime a thread may not block on another: the node is told to stop,
            // and its runtime ends in the background.
            self.handle.stop_node();
        } else {
            let handle = &mut self.handle;
            runtime.block_on(async {
                let _ = tokio::time::timeout(Duration::from_secs(5), handle.stop_and_wait()).await;
            });
        }
        runtime.shutdown_background();
    }
}

impl Drop for BlockingServer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// Redis's cycle stops at its time budget; under tokio's paused clock no time passes, so
    /// one cycle takes every due key up to its budget in keys (1.6 million for 25 ms; the old
    /// cycle took 1000 a pass).
    #[tokio::test(start_paused = true)]
    async fn one_cycle_reclaims_a_whole_wave_of_due_keys() {
        let node = Node::for_tests();
        let now = node.clock.now_ms();
        {
            let mut state = node.state.lock().await;
            for i in 0..50_000 {
                let key = Bytes::from(format!("k{i}"));
                let value = crate::db::Value::String(Bytes::from_static(b"v").into());
                state.dbs[0].insert(&key, value, Some(now + 100), now);
            }
            state.dbs[0].insert(
                &Bytes::from_static(b"stays"),
                crate::db::Value::String(Bytes::new().into()),
                None,
                now,
            );
        }
        let mut effects = Effects::default();
        // Nothing is due yet: the cycle ends at once.
        assert!(!expire_cycle(&node, &mut effects, 25_000).await);
        assert_eq!(node.state.lock().await.dbs[0].len(), 50_001);
        tokio::time::advance(Duration::from_millis(100)).await;
        assert!(!expire_cycle(&node, &mut effects, 25_000).await);
        let state = node.state.lock().await;
        assert_eq!((state.dbs[0].len(), state.dbs[0].volatile_len()), (1, 0));
        assert_eq!(state.stats.expired_keys, 50_000);
        assert_eq!(state.stats.expired_time_cap_reached_count, 0);
    }

    /// With the clock standing still a cycle ends at its budget counted in keys, and reports
    /// the cap as a cycle that ran out of time does.
    #[tokio::test(start_paused = true)]
    async fn the_budget_bounds_a_cycle_when_the_clock_stands_still() {
        let node = Node::for_tests();
        let now = node.clock.now_ms();
        {
            let mut state = node.state.lock().await;
            for i in 0..10_000 {
                let key = Bytes::from(format!("k{i}"));
                let value = crate::db::Value::String(Bytes::from_static(b"v").into());
                state.dbs[0].insert(&key, value, Some(now), now);
            }
        }
        tokio::time::advance(Duration::from_millis(1)).await;
        let mut effects = Effects::default();
        // 100 µs: 6400 keys.
        assert!(expire_cycle(&node, &mut effects, 100).await);
        {
            let state = node.state.lock().await;
            assert_eq!(state.dbs[0].len(), 3600);
            assert_eq!(state.stats.expired_time_cap_reached_count, 1);
        }
        assert!(!expire_cycle(&node, &mut effects, 100).await);
        let state = node.state.lock().await;
        assert_eq!(state.dbs[0].len(), 0);
        assert_eq!(state.stats.expired_time_cap_reached_count, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_cycle_does_nothing_while_active_expiry_is_off() {
        let node = Node::for_tests();
        let now = node.clock.now_ms();
        node.state.lock().await.dbs[0].insert(
            &Bytes::from_static(b"k"),
            crate::db::Value::String(Bytes::new().into()),
            Some(now),
            now,
        );
        node.live.active_expire.store(false, Ordering::Relaxed);
        tokio::time::advance(Duration::from_millis(10)).await;
        assert!(!expire_cycle(&node, &mut Effects::default(), 25_000).await);
        assert_eq!(node.state.lock().await.dbs[0].len(), 1);
        node.live.active_expire.store(true, Ordering::Relaxed);
        assert!(!expire_cycle(&node, &mut Effects::default(), 25_000).await);
        assert_eq!(node.state.lock().await.dbs[0].len(), 0);
    }
}
