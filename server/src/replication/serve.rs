//! The master's side of a replica connected over the network: `SYNC` or `PSYNC` registers
//! the client connection as a replica link ([`attach`]): a full synchronisation's dataset is
//! copied in the same critical section as the link's registration, so the stream that
//! follows starts exactly after it; a partial one (`+CONTINUE`) takes the backlog from the
//! replica's offset. The connection then runs the link ([`crate::replica_link`]).

use super::{Batch, Feed, LinkControl, Remote};
use crate::client::ClientState;
use crate::db::Db;
use crate::node::{Node, State};
use bytes::Bytes;
use locksmith_resp::Frame;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// What a connection that became a replica link sends first.
pub(crate) enum Start {
    /// The dataset, copied when the link was registered, and the node-clock time then.
    Full {
        /// The databases.
        dbs: Vec<Db>,
        /// The function libraries' code.
        functions: Vec<Bytes>,
        /// Keys expired by then are left out.
        now_ms: u64,
        /// How values are written (the master's `rdbcompression` and list limits).
        encoding: crate::rdb::Encoding,
    },
    /// The stream from the replica's offset on, out of the backlog.
    Partial(Vec<u8>),
}

/// A replica link registered by `SYNC`/`PSYNC`, handed from the command to its connection.
pub(crate) struct Handoff {
    /// The link's id, to remove its feed when it ends.
    pub(crate) link: u64,
    /// The stream's batches.
    pub(crate) rx: mpsc::UnboundedReceiver<Batch>,
    /// Raised when the master drops the link (output buffer limit, `REPLICAOF`).
    pub(crate) cut: Arc<AtomicBool>,
    /// The replica's acknowledged offset.
    pub(crate) ack: Arc<AtomicU64>,
    /// Its acknowledgements and synchronisation, as `INFO` reads them.
    pub(crate) remote: Arc<Remote>,
    /// Notified on every acknowledgement (`WAIT`).
    pub(crate) acked: Arc<watch::Sender<u64>>,
    /// What the link sends first.
    pub(crate) start: Start,
}

impl Batch {
    /// The batch's commands as the stream's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl std::fmt::Debug for Handoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handoff").field("link", &self.link).finish()
    }
}

/// Why `SYNC`/`PSYNC` was refused.
pub(crate) const NOMASTERLINK: &str = "NOMASTERLINK Can't SYNC while not connected with my master";

/// Registers `client` as a replica: `psync` is `PSYNC`'s replication id and offset (`None`
/// for `SYNC`). Returns the reply (`+CONTINUE`, `+FULLRESYNC`, nothing for `SYNC`) and the
/// link for the connection to run once the reply is written.
pub(crate) fn attach(
    state: &mut State,
    node: &Node,
    client: &ClientState,
    psync: Option<(&[u8], i64)>,
) -> (Option<Frame>, Handoff) {
    let (tx, rx) = mpsc::unbounded_channel();
    let link = super::NEXT_LINK.fetch_add(1, Ordering::Relaxed);
    let now = node.clock.now_ms();
    let ack = Arc::new(AtomicU64::new(0));
    let remote = Arc::new(Remote {
        acked_at: AtomicU64::new(now),
        phase: AtomicU8::new(Remote::WAIT_BGSAVE),
    });
    let cut = Arc::new(AtomicBool::new(false));
    let continuation = psync
        .filter(|_| !client.replica.rdb_only)
        .and_then(|(replid, offset)| {
            let from = u64::try_from(offset).ok()?;
            state.repl.continuation(replid, from)
        });
    match (&continuation, psync) {
        (Some(_), _) => state.stats.sync_partial_ok += 1,
        // `PSYNC ? -1` asks for a full synchronisation; any other id was a failed attempt.
        (None, Some((replid, _))) if replid != b"?" => state.stats.sync_partial_err += 1,
        _ => {}
    }
    state.repl.network_replica_attaching(now);
    let handle = &client.handle;
    let addr = SocketAddr::new(
        handle.addr.ip(),
        client.replica.listening_port.unwrap_or(handle.addr.port()),
    );
    // `REPLCONF rdb-only 1` (`redis-cli --rdb`): the dataset, no stream (the link's sender
    // is dropped at once, so the connection ends after the payload).
    let (offset, replid, acked) = if client.replica.rdb_only {
        let acked = Arc::new(watch::channel(0).0);
        (state.repl.offset(), state.repl.replid().to_string(), acked)
    } else {
        state.repl.add_feed(
            Feed {
                link,
                addr,
                tx,
                ack: ack.clone(),
                cut: cut.clone(),
                soft_since: None,
                ctl: Arc::new(LinkControl::new(Duration::ZERO, Duration::ZERO, false)),
                remote: Some(remote.clone()),
            },
            &state.config,
        )
    };
    handle.update(|info| info.flags = "S".into());
    let (reply, start) = match continuation {
        Some(stream) => (
            Some(Frame::Simple(format!("CONTINUE {replid}").into())),
            Start::Partial(stream),
        ),
        None => {
            state.stats.sync_full += 1;
            let functions = state
                .functions
                .libraries()
                .map(|l| l.code.clone())
                .collect();
            let packed = node.live.quicklist_packed_threshold.load(Ordering::Relaxed);
            let start = Start::Full {
                dbs: state.dbs.clone(),
                functions,
                encoding: crate::rdb::Encoding::of(&state.config, packed),
                now_ms: now,
            };
            let reply =
                psync.map(|_| Frame::Simple(format!("FULLRESYNC {replid} {offset}").into()));
            (reply, start)
        }
    };
    let handoff = Handoff {
        link,
        rx,
        cut,
        ack,
        remote,
        acked,
        start,
    };
    (reply, handoff)
}
