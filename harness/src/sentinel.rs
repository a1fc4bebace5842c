//! A Sentinel endpoint for a topology: enough of Redis Sentinel's protocol (`SENTINEL
//! get-master-addr-by-name|masters|master|replicas|slaves|sentinels|ckquorum|failover|myid`,
//! `ROLE`, `INFO`, pub/sub with `+switch-master`, `+sdown`, `-sdown`, `+slave`) for the
//! Sentinel modes of redis-rs, redis-py and Redisson to find the master and follow a failover.
//! It reports what the topology knows; failover happens when the harness (or `SENTINEL
//! FAILOVER`) does it, never on its own.

use super::admin::lossy;
use super::{Inner, NodeRole};
use bytes::{Bytes, BytesMut};
use locksmith_resp::{encode, Frame, Limits, RequestDecoder, Version};
use locksmith_server::{glob_match, CommandError};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

#[derive(Debug, Default)]
struct Sub {
    channels: BTreeSet<Bytes>,
    patterns: BTreeSet<Bytes>,
}

struct Shared {
    topology: Weak<Inner>,
    /// The endpoint's `requirepass` (the topology's).
    requirepass: Option<String>,
    subs: Mutex<BTreeMap<u64, (mpsc::UnboundedSender<Frame>, Sub)>>,
    next: AtomicU64,
    id: String,
}

/// A running Sentinel endpoint.
pub(crate) struct Sentinel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Sentinel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sentinel")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        self.task.abort();
        if let Ok(mut subs) = self.shared.subs.lock() {
            subs.clear();
        }
    }
}

impl Sentinel {
    /// Listens on `ip:port` for the topology behind `topology`.
    pub(crate) async fn start(ip: IpAddr, port: u16, topology: Weak<Inner>) -> io::Result<Self> {
        let listener = locksmith_server::control::listen(std::net::SocketAddr::new(ip, port), 511)?;
        let addr = listener.local_addr()?;
        let (seed, requirepass) = topology
            .upgrade()
            .map_or((0, None), |t| (t.seed, t.requirepass.clone()));
        let shared = Arc::new(Shared {
            topology,
            requirepass,
            subs: Mutex::default(),
            next: AtomicU64::new(1),
            id: format!("{:040x}", u128::from(seed) * 0x9e37_79b9_7f4a_7c15),
        });
        let task = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(Sentinel { addr, shared, task })
    }

    /// The endpoint's address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Publishes `message` on `channel` to every subscriber.
    pub(crate) fn publish(&self, channel: &str, message: &str) {
        let channel = Bytes::copy_from_slice(channel.as_bytes());
        let message = Bytes::copy_from_slice(message.as_bytes());
        if let Ok(subs) = self.shared.subs.lock() {
            for (tx, sub) in subs.values() {
                if sub.channels.contains(&channel) {
                    let _ = tx.send(Frame::Push(vec![
                        Frame::bulk("message"),
                        Frame::Bulk(channel.clone()),
                        Frame::Bulk(message.clone()),
                    ]));
                }
                for p in &sub.patterns {
                    if glob_match(p, &channel, false) {
                        let _ = tx.send(Frame::Push(vec![
                            Frame::bulk("pmessage"),
                            Frame::Bulk(p.clone()),
                            Frame::Bulk(channel.clone()),
                            Frame::Bulk(message.clone()),
                        ]));
                    }
                }
            }
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((socket, _)) => {
                tokio::spawn(serve(socket, shared.clone()));
            }
            Err(e) => {
                tracing::warn!(error = %e, "sentinel accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    }
}

struct Conn {
    id: u64,
    /// AUTH done, or no password configured.
    authenticated: bool,
    version: Version,
    rx: mpsc::UnboundedReceiver<Frame>,
    subscribed: bool,
    quit: bool,
}

async fn serve(mut socket: TcpStream, shared: Arc<Shared>) {
    let _ = socket.set_nodelay(true);
    let id = shared.next.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = mpsc::unbounded_channel();
    if let Ok(mut subs) = shared.subs.lock() {
        subs.insert(id, (tx, Sub::default()));
    }
    let mut conn = Conn {
        id,
        authenticated: shared.requirepass.is_none(),
        version: Version::Resp2,
        rx,
        subscribed: false,
        quit: false,
    };
    let mut decoder = RequestDecoder::new(Limits::default());
    let mut rbuf = BytesMut::with_capacity(4096);
    let mut wbuf = BytesMut::new();
    loop {
        tokio::select! {
            Some(frame) = conn.rx.recv() => {
                push(&frame, conn.version, &mut wbuf);
                if socket.write_all(&wbuf).await.is_err() { break; }
                wbuf.clear();
            }
            read = socket.read_buf(&mut rbuf) => {
                match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                loop {
                    match decoder.decode(&mut rbuf) {
                        Ok(Some(argv)) => {
                            for reply in command(&shared, &mut conn, &argv).await {
                                push(&reply, conn.version, &mut wbuf);
                            }
                            if conn.quit { break; }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            encode(&Frame::error(format!("ERR Protocol error: {e}")), conn.version, &mut wbuf);
                            conn.quit = true;
                            break;
                        }
                    }
                }
                if socket.write_all(&wbuf).await.is_err() { break; }
                wbuf.clear();
                if conn.quit { break; }
            }
        }
    }
    if let Ok(mut subs) = shared.subs.lock() {
        subs.remove(&id);
    }
}

/// Encodes a pub/sub frame: a push in RESP3, an array in RESP2.
fn push(frame: &Frame, version: Version, out: &mut BytesMut) {
    match (frame, version) {
        (Frame::Push(items), Version::Resp2) => encode(&Frame::Array(items.clone()), version, out),
        _ => encode(frame, version, out),
    }
}

fn pairs(fields: Vec<(&str, String)>) -> Frame {
    Frame::Array(
        fields
            .into_iter()
            .flat_map(|(k, v)| [Frame::bulk(k.to_string()), Frame::bulk(v)])
            .collect(),
    )
}

fn master_fields(t: &Inner) -> Vec<(&'static str, String)> {
    let m = t.master_index();
    let addr = t.slots.get(m).map(|s| s.addr);
    let up = t.is_up(m);
    let run_id = t
        .live_node(m)
        .map(|n| n.run_id().to_string())
        .unwrap_or_default();
    let replicas = (0..t.slots.len()).filter(|&i| i != m).count();
    vec![
        ("name", t.master_name.clone()),
        ("ip", addr.map(|a| a.ip().to_string()).unwrap_or_default()),
        (
            "port",
            addr.map(|a| a.port().to_string()).unwrap_or_default(),
        ),
        ("runid", run_id),
        (
            "flags",
            if up { "master" } else { "master,s_down,o_down" }.into(),
        ),
        ("link-pending-commands", "0".into()),
        ("link-refcount", "1".into()),
        ("last-ping-sent", "0".into()),
        ("last-ok-ping-reply", "0".into()),
        ("last-ping-reply", "0".into()),
        ("down-after-milliseconds", "30000".into()),
        ("info-refresh", "0".into()),
        ("role-reported", "master".into()),
        ("role-reported-time", "0".into()),
        ("config-epoch", "0".into()),
        ("num-slaves", replicas.to_string()),
        ("num-other-sentinels", "0".into()),
        ("quorum", "1".into()),
        ("failover-timeout", "180000".into()),
        ("parallel-syncs", "1".into()),
    ]
}

fn replica_frames(t: &Inner) -> Frame {
    let m = t.master_index();
    let maddr = t.slots.get(m).map(|s| s.addr);
    Frame::Array(
        (0..t.slots.len())
            .filter(|&i| i != m)
            .filter_map(|i| {
                let slot = t.slots.get(i)?;
                let role = t.role(i);
                let link_ok =
                    matches!(role, NodeRole::Replica(x) if x.index() == m) && t.links_up(m, i);
                let run_id = t
                    .live_node(i)
                    .map(|n| n.run_id().to_string())
                    .unwrap_or_default();
                let flags = match role {
                    NodeRole::Down => "slave,s_down",
                    _ => "slave",
                };
                Some(pairs(vec![
                    ("name", slot.addr.to_string()),
                    ("ip", slot.addr.ip().to_string()),
                    ("port", slot.addr.port().to_string()),
                    ("runid", run_id),
                    ("flags", flags.into()),
                    ("link-pending-commands", "0".into()),
                    ("link-refcount", "1".into()),
                    ("last-ping-sent", "0".into()),
                    ("last-ok-ping-reply", "0".into()),
                    ("last-ping-reply", "0".into()),
                    ("down-after-milliseconds", "30000".into()),
                    ("info-refresh", "0".into()),
                    ("role-reported", "slave".into()),
                    ("role-reported-time", "0".into()),
                    ("master-link-down-time", "0".into()),
                    (
                        "master-link-status",
                        if link_ok { "ok" } else { "err" }.into(),
                    ),
                    (
                        "master-host",
                        maddr.map(|a| a.ip().to_string()).unwrap_or_default(),
                    ),
                    (
                        "master-port",
                        maddr.map(|a| a.port().to_string()).unwrap_or_default(),
                    ),
                    ("slave-priority", "100".into()),
                    ("slave-repl-offset", t.offset_of(i).to_string()),
                    ("replica-announced", "1".into()),
                ]))
            })
            .collect(),
    )
}

fn no_such_master() -> Frame {
    Frame::error("IDONTKNOW No such master with that name")
}

/// Replies to one command (several for `SUBSCRIBE` with several channels).
/// AUTH, HELLO's AUTH option, and Redis's `NOAUTH` for anything else before them (QUIT
/// excepted). `None` lets the command run.
fn authenticate(shared: &Shared, conn: &mut Conn, name: &[u8], argv: &[Bytes]) -> Option<Frame> {
    let check = |conn: &mut Conn, user: Option<&Bytes>, pass: &Bytes| -> Result<(), Frame> {
        let Some(expected) = &shared.requirepass else {
            return Err(Frame::error(
                "ERR AUTH <password> called without any password configured for the default \
                 user. Are you sure your configuration is correct?",
            ));
        };
        let user_ok = user.is_none_or(|u| u.as_ref() == b"default");
        if user_ok && pass.as_ref() == expected.as_bytes() {
            conn.authenticated = true;
            Ok(())
        } else {
            Err(Frame::error(
                "WRONGPASS invalid username-password pair or user is disabled.",
            ))
        }
    };
    match name {
        b"auth" => Some(match argv.get(1..).unwrap_or_default() {
            [pass] => check(conn, None, pass).map_or_else(|e| e, |()| Frame::ok()),
            [user, pass] => check(conn, Some(user), pass).map_or_else(|e| e, |()| Frame::ok()),
            _ => CommandError::Syntax.into(),
        }),
        b"hello" => {
            let auth = argv
                .iter()
                .position(|a| a.eq_ignore_ascii_case(b"auth"))
                .map(|i| (argv.get(i + 1), argv.get(i + 2)));
            match auth {
                Some((Some(user), Some(pass))) => check(conn, Some(user), pass).err(),
                Some(_) => Some(CommandError::Syntax.into()),
                None if conn.authenticated => None,
                None => Some(Frame::error(
                    "NOAUTH HELLO must be called with the client already authenticated, \
                     otherwise the HELLO <proto> AUTH <user> <pass> option can be used to \
                     authenticate the client and select the RESP protocol version at the same \
                     time",
                )),
            }
        }
        b"quit" => None,
        _ if conn.authenticated => None,
        _ => Some(CommandError::NoAuth.into()),
    }
}

async fn command(shared: &Shared, conn: &mut Conn, argv: &[Bytes]) -> Vec<Frame> {
    let Some(name) = argv.first().map(|n| n.to_ascii_lowercase()) else {
        return vec![];
    };
    let Some(t) = shared.topology.upgrade() else {
        return vec![Frame::error("ERR the topology is gone")];
    };
    let sub = |i: usize| {
        argv.get(i)
            .map(|a| a.to_ascii_lowercase())
            .unwrap_or_default()
    };
    let is_master = |i: usize| {
        argv.get(i)
            .is_some_and(|n| n[..] == *t.master_name.as_bytes())
    };
    if let Some(reply) = authenticate(shared, conn, &name, argv) {
        return vec![reply];
    }
    vec![match name.as_slice() {
        b"ping" if conn.subscribed && conn.version == Version::Resp2 => {
            Frame::bulk_array(["pong", ""])
        }
        b"ping" => Frame::simple("PONG"),
        b"quit" => {
            conn.quit = true;
            Frame::ok()
        }
        b"hello" => {
            match argv.get(1).map(|v| v.as_ref()) {
                Some(b"3") => conn.version = Version::Resp3,
                Some(b"2") => conn.version = Version::Resp2,
                None => {}
                Some(_) => return vec![Frame::error("NOPROTO unsupported protocol version")],
            }
            Frame::Map(vec![
                (Frame::bulk("server"), Frame::bulk("redis")),
                (Frame::bulk("version"), Frame::bulk("7.0.15")),
                (
                    Frame::bulk("proto"),
                    Frame::Integer(if conn.version == Version::Resp3 { 3 } else { 2 }),
                ),
                (Frame::bulk("id"), Frame::Integer(conn.id as i64)),
                (Frame::bulk("mode"), Frame::bulk("sentinel")),
                (Frame::bulk("role"), Frame::bulk("sentinel")),
                (Frame::bulk("modules"), Frame::Array(vec![])),
            ])
        }
        b"client" => match sub(1).as_slice() {
            b"setname" | b"setinfo" => Frame::ok(),
            b"getname" => Frame::Null,
            b"id" => Frame::Integer(conn.id as i64),
            _ => CommandError::UnknownSubcommand {
                container: "CLIENT".into(),
                sub: lossy(argv.get(1).map(|b| &b[..]).unwrap_or_default(), 128),
            }
            .into(),
        },
        b"role" => Frame::Array(vec![
            Frame::bulk("sentinel"),
            Frame::bulk_array([t.master_name.clone()]),
        ]),
        b"info" => {
            let m = t.master_index();
            let addr = t
                .slots
                .get(m)
                .map(|s| s.addr.to_string())
                .unwrap_or_default();
            let status = if t.is_up(m) { "ok" } else { "odown" };
            Frame::Bulk(Bytes::from(format!(
                "# Server\r\nredis_version:7.0.15\r\nredis_mode:sentinel\r\n\r\n# Sentinel\r\n\
                 sentinel_masters:1\r\nsentinel_tilt:0\r\nsentinel_running_scripts:0\r\n\
                 sentinel_scripts_queue_length:0\r\nsentinel_simulate_failure_flags:0\r\n\
                 master0:name={},status={status},address={addr},slaves={},sentinels=1\r\n",
                t.master_name,
                t.slots.len().saturating_sub(1)
            )))
        }
        b"subscribe" | b"psubscribe" => {
            let pattern = name.as_slice() == b"psubscribe";
            if argv.len() < 2 {
                return vec![CommandError::WrongArity(lossy(&name, 64)).into()];
            }
            let mut out = Vec::new();
            if let Ok(mut subs) = shared.subs.lock() {
                if let Some((_, s)) = subs.get_mut(&conn.id) {
                    for ch in argv.iter().skip(1) {
                        if pattern {
                            s.patterns.insert(ch.clone());
                        } else {
                            s.channels.insert(ch.clone());
                        }
                        let count = (s.channels.len() + s.patterns.len()) as i64;
                        out.push(Frame::Push(vec![
                            Frame::bulk(if pattern { "psubscribe" } else { "subscribe" }),
                            Frame::Bulk(ch.clone()),
                            Frame::Integer(count),
                        ]));
                    }
                }
            }
            conn.subscribed = true;
            return out;
        }
        b"unsubscribe" | b"punsubscribe" => {
            let pattern = name.as_slice() == b"punsubscribe";
            let mut out = Vec::new();
            if let Ok(mut subs) = shared.subs.lock() {
                if let Some((_, s)) = subs.get_mut(&conn.id) {
                    let set = if pattern {
                        &mut s.patterns
                    } else {
                        &mut s.channels
                    };
                    let names: Vec<Bytes> = if argv.len() > 1 {
                        argv.iter().skip(1).cloned().collect()
                    } else {
                        set.iter().cloned().collect()
                    };
                    for ch in &names {
                        set.remove(ch);
                    }
                    let kind = if pattern {
                        "punsubscribe"
                    } else {
                        "unsubscribe"
                    };
                    let total = s.channels.len() + s.patterns.len();
                    if names.is_empty() {
                        out.push(Frame::Push(vec![
                            Frame::bulk(kind),
                            Frame::Null,
                            Frame::Integer(total as i64),
                        ]));
                    }
                    for ch in names {
                        out.push(Frame::Push(vec![
                            Frame::bulk(kind),
                            Frame::Bulk(ch),
                            Frame::Integer(total as i64),
                        ]));
                    }
                    conn.subscribed = total > 0;
                }
            }
            return out;
        }
        b"sentinel" => match sub(1).as_slice() {
            b"get-master-addr-by-name" => {
                if !is_master(2) {
                    Frame::NullArray
                } else {
                    let a = t.slots.get(t.master_index()).map(|s| s.addr);
                    match a {
                        Some(a) => Frame::bulk_array([a.ip().to_string(), a.port().to_string()]),
                        None => Frame::NullArray,
                    }
                }
            }
            b"masters" => Frame::Array(vec![pairs(master_fields(&t))]),
            b"master" if is_master(2) => pairs(master_fields(&t)),
            b"replicas" | b"slaves" if is_master(2) => replica_frames(&t),
            b"sentinels" if is_master(2) => Frame::Array(vec![]),
            b"ckquorum" if is_master(2) => Frame::Simple(Bytes::from_static(
                b"OK 1 usable Sentinels. Quorum and failover authorization can be reached",
            )),
            b"failover" if is_master(2) => {
                let topology = super::Topology { inner: t.clone() };
                match topology.switch_master(None).await {
                    Ok(_) => Frame::ok(),
                    Err(_) => Frame::error("NOGOODSLAVE No suitable replica to promote"),
                }
            }
            b"myid" => Frame::bulk(shared.id.clone()),
            b"master" | b"replicas" | b"slaves" | b"sentinels" | b"ckquorum" | b"failover" => {
                no_such_master()
            }
            _ => CommandError::UnknownSubcommand {
                container: "SENTINEL".into(),
                sub: lossy(argv.get(1).map(|b| &b[..]).unwrap_or_default(), 128),
            }
            .into(),
        },
        n if super::admin::is_admin_command(n) => {
            super::admin::execute(t, argv.to_vec(), None).await
        }
        _ => CommandError::unknown_command(argv).into(),
    }]
}
