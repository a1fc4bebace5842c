//! Redis Cluster support, as Redisson's `ClusterConnectionManager` does it: commands go through
//! the redis crate's cluster connection (every lock script's keys share Redisson's `{name}`
//! hash tag, so a script runs on the node owning that slot and follows `MOVED`), and a waiter
//! subscribes on the node owning its channel's slot (plain `SUBSCRIBE`, not sharded pub/sub).

use redis::aio::{ConnectionLike, ConnectionManager};

use crate::connector::StreamConnection;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// A connection for raw commands: to one server, or to a whole Redis Cluster (commands are
/// routed by their keys' slot), or to one server over streams of a
/// [`Connector`](crate::Connector).
#[derive(Clone)]
#[non_exhaustive]
pub enum Connection {
    /// One server (standalone, a replicated master, a Sentinel-monitored master).
    Single(ConnectionManager),
    /// A Redis Cluster.
    Cluster(ClusterConnection),
    /// One server over streams of a connector ([`Client::open_over`](crate::Client::open_over)).
    Stream(StreamConnection),
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Connection::Single(_) => "Connection::Single",
            Connection::Cluster(_) => "Connection::Cluster",
            Connection::Stream(_) => "Connection::Stream",
        })
    }
}

impl Connection {
    /// Sends `cmd` to the master serving `slot` on a cluster connection (a `WAIT` for the write
    /// that went there), and as any command otherwise.
    pub(crate) async fn on_slot_master(
        &mut self,
        cmd: Cmd,
        slot: u16,
    ) -> redis::RedisResult<Value> {
        use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
        match self {
            Connection::Cluster(c) => {
                let to = SingleNodeRoutingInfo::SpecificNode(Route::new(slot, SlotAddr::Master));
                c.route_command(cmd, RoutingInfo::SingleNode(to)).await
            }
            other => other.req_packed_command(&cmd).await,
        }
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
            Connection::Stream(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Connection::Stream(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
            Connection::Stream(c) => c.get_db(),
        }
    }
}

/// The hash slot of a key (Redis's `keyHashSlot`), the one copy the server routes by.
pub(crate) use locksmith_resp::slot::key_slot;

/// Which master serves which slots, and how many replicas it has (from `CLUSTER SLOTS`).
#[derive(Debug, Clone, Default)]
pub(crate) struct SlotMap {
    /// (start, end, "host:port", replicas), sorted by start.
    ranges: Vec<(u16, u16, String, usize)>,
}

impl SlotMap {
    /// Reads the map from any node.
    pub(crate) async fn fetch(conn: &mut ClusterConnection) -> redis::RedisResult<SlotMap> {
        let reply: Vec<Value> = redis::cmd("CLUSTER").arg("SLOTS").query_async(conn).await?;
        let mut ranges = Vec::new();
        for entry in reply {
            let Value::Array(parts) = entry else { continue };
            let (Some(Value::Int(start)), Some(Value::Int(end)), Some(Value::Array(node))) =
                (parts.first(), parts.get(1), parts.get(2))
            else {
                continue;
            };
            let host = match node.first() {
                Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                Some(Value::SimpleString(s)) => s.clone(),
                _ => continue,
            };
            let Some(Value::Int(port)) = node.get(1) else {
                continue;
            };
            let (Ok(start), Ok(end)) = (u16::try_from(*start), u16::try_from(*end)) else {
                continue;
            };
            // Every node after the master is one of its replicas.
            let replicas = parts.len().saturating_sub(3);
            ranges.push((start, end, format!("{host}:{port}"), replicas));
        }
        ranges.sort();
        Ok(SlotMap { ranges })
    }

    /// The `host:port` of the master serving `slot`.
    pub(crate) fn node(&self, slot: u16) -> Option<&str> {
        self.ranges
            .iter()
            .find(|(s, e, _, _)| (*s..=*e).contains(&slot))
            .map(|(_, _, n, _)| n.as_str())
    }

    /// How many replicas the master serving `slot` has (0 for a slot no master serves).
    pub(crate) fn replicas(&self, slot: u16) -> usize {
        self.ranges
            .iter()
            .find(|(s, e, _, _)| (*s..=*e).contains(&slot))
            .map_or(0, |r| r.3)
    }
}
