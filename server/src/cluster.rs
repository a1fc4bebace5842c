//! Redis Cluster mode: hash slots (CRC16 with `{hash tags}`), the cluster view a node serves
//! (`CLUSTER SLOTS|SHARDS|NODES`), the redirections Redis's `getNodeByQuery` decides
//! (`MOVED`, `CROSSSLOT`, `CLUSTERDOWN Hash slot not served`), the per-call check scripts make
//! (`Script attempted to access a non local key in a cluster node`), and the cluster bus's one
//! job here: `PUBLISH` reaching every node, as Redis Cluster broadcasts it.
//!
//! A node started with `cluster_enabled` alone is a one-node cluster serving all 16384 slots;
//! a harness topology (`Topology::builder().cluster(n)`) gives every node a shared [`View`] of
//! all members with their real (proxy) addresses. Who serves which slots (the [`Layout`])
//! changes when the harness fails a shard over to one of its replicas ([`View::promote`]) and
//! through `CLUSTER ADDSLOTS|DELSLOTS|FLUSHSLOTS|RESET` ([`View::change`]), seen by every
//! member at once (the shared view stands for a cluster bus that has converged); there is no
//! migration of slots between nodes, no `ASK`, and no automatic failover.

use crate::command_meta::CommandMeta;
use crate::error::CommandError;
use crate::flags;
use crate::node::{Effects, Node};
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use tokio::sync::mpsc;

/// Number of hash slots, and the slot of a key (Redis's `keyHashSlot`): one copy, in `resp`,
/// shared with the lock library's cluster client.
pub(crate) use locksmith_resp::slot::{key_slot as key_hash_slot, SLOTS};

/// `CROSSSLOT` reply text.
pub(crate) const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";

/// One node of the cluster as every member sees it (its role is in the [`Layout`]).
#[derive(Debug)]
pub(crate) struct Member {
    /// 40 hex characters (`CLUSTER MYID`); a new one after `CLUSTER RESET HARD`.
    id: RwLock<String>,
    /// Its shard's id (Valkey's `CLUSTER MYSHARDID`): 40 hex characters shared by a master
    /// and its replicas, kept by the replica a failover promotes; a new one with a new node id.
    shard_id: RwLock<String>,
    /// The address clients reach it at (what `MOVED` and `CLUSTER SLOTS` report).
    pub(crate) addr: SocketAddr,
    /// The running node, while it runs.
    running: Mutex<Running>,
}

/// A member's place in the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Role {
    /// Index of its master when it is a replica.
    pub(crate) replica_of: Option<usize>,
    /// The slot ranges it serves (masters only), inclusive.
    pub(crate) ranges: Vec<(u16, u16)>,
    /// Its config epoch (a replica reports its master's).
    pub(crate) epoch: u64,
}

#[derive(Debug, Default)]
struct Running {
    node: Weak<Node>,
    /// Its replication offset, mirrored out of its state.
    offset: Option<Arc<AtomicU64>>,
    /// Where other members send the messages published on them.
    bus: Option<mpsc::UnboundedSender<Vec<(Bytes, Bytes)>>>,
}

impl Member {
    /// The member `id` at `addr`, in the shard whose first master is named `master_id`.
    pub(crate) fn new(id: String, addr: SocketAddr, master_id: &str) -> Member {
        Member {
            id: RwLock::new(id),
            shard_id: RwLock::new(shard_id_of(master_id)),
            addr,
            running: Mutex::new(Running::default()),
        }
    }

    /// Its shard's id.
    pub(crate) fn shard_id(&self) -> String {
        match self.shard_id.read() {
            Ok(id) => id.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Its node id.
    pub(crate) fn id(&self) -> String {
        match self.id.read() {
            Ok(id) => id.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The member's node, if it runs.
    fn node(&self) -> Option<Arc<Node>> {
        self.running.lock().ok()?.node.upgrade()
    }

    /// Whether the member's node runs.
    pub(crate) fn is_up(&self) -> bool {
        self.node().is_some()
    }

    /// Its replication offset (0 while down).
    pub(crate) fn offset(&self) -> u64 {
        self.running
            .lock()
            .ok()
            .filter(|r| r.node.strong_count() > 0)
            .and_then(|r| r.offset.clone())
            .map_or(0, |o| o.load(Ordering::Acquire))
    }
}

/// Who is master or replica of whom and which master serves each slot, at one moment.
#[derive(Debug)]
pub(crate) struct Layout {
    /// Each member's role, by member index.
    roles: Vec<Role>,
    /// Slot -> index of the serving master (`None` = unassigned).
    owner: Vec<Option<u16>>,
}

impl Layout {
    fn new(roles: Vec<Role>) -> Layout {
        let mut owner = vec![None; SLOTS];
        for (i, role) in roles.iter().enumerate() {
            for &(start, end) in &role.ranges {
                for slot in start..=end.min(SLOTS as u16 - 1) {
                    if let Some(o) = owner.get_mut(usize::from(slot)) {
                        *o = Some(i as u16);
                    }
                }
            }
        }
        Layout { roles, owner }
    }

    /// A layout where `owner` decides who serves each slot and `epochs` are the members'
    /// config epochs: every role's ranges are recomputed from `owner`.
    fn with_owner(mut roles: Vec<Role>, owner: Vec<Option<u16>>, epochs: &[u64]) -> Layout {
        for (i, role) in roles.iter_mut().enumerate() {
            role.ranges.clear();
            let mut start = None;
            for slot in 0..=SLOTS {
                let mine = owner.get(slot).copied().flatten() == u16::try_from(i).ok();
                match (mine, start) {
                    (true, None) => start = Some(slot),
                    (false, Some(first)) => {
                        role.ranges.push((first as u16, (slot - 1) as u16));
                        start = None;
                    }
                    _ => {}
                }
            }
            if let Some(&epoch) = epochs.get(i) {
                role.epoch = epoch;
            }
        }
        Layout { roles, owner }
    }

    /// The role of member `i`.
    pub(crate) fn role(&self, i: usize) -> Option<&Role> {
        self.roles.get(i)
    }

    /// The master of member `i` (`None` for a master).
    pub(crate) fn replica_of(&self, i: usize) -> Option<usize> {
        self.role(i).and_then(|r| r.replica_of)
    }

    /// The member serving `slot`.
    pub(crate) fn owner(&self, slot: u16) -> Option<usize> {
        self.owner
            .get(usize::from(slot))
            .copied()
            .flatten()
            .map(usize::from)
    }

    /// Number of assigned slots.
    pub(crate) fn slots_assigned(&self) -> usize {
        self.owner.iter().filter(|o| o.is_some()).count()
    }

    /// Indexes of the replicas of master `m`.
    pub(crate) fn replicas_of(&self, m: usize) -> impl Iterator<Item = usize> + '_ {
        self.roles
            .iter()
            .enumerate()
            .filter(move |(_, r)| r.replica_of == Some(m))
            .map(|(i, _)| i)
    }

    /// The (master, replica) pairs of every shard.
    pub(crate) fn links(&self) -> Vec<(usize, usize)> {
        self.roles
            .iter()
            .enumerate()
            .filter_map(|(r, role)| Some((role.replica_of?, r)))
            .collect()
    }

    /// The highest config epoch.
    pub(crate) fn current_epoch(&self) -> u64 {
        self.roles.iter().map(|r| r.epoch).max().unwrap_or(0)
    }
}

/// The whole cluster: every member, and the current [`Layout`].
#[derive(Debug)]
pub(crate) struct View {
    /// The members, in a fixed order.
    pub(crate) members: Vec<Member>,
    layout: RwLock<Arc<Layout>>,
}

impl View {
    /// A view of `members` with their `roles` (same order); slot ownership comes from the
    /// masters' ranges.
    pub(crate) fn new(members: Vec<Member>, roles: Vec<Role>) -> View {
        View {
            members,
            layout: RwLock::new(Arc::new(Layout::new(roles))),
        }
    }

    /// The current layout (a snapshot: a failover replaces it, never changes it).
    pub(crate) fn layout(&self) -> Arc<Layout> {
        match self.layout.read() {
            Ok(l) => l.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The member serving `slot`.
    pub(crate) fn owner(&self, slot: u16) -> Option<usize> {
        self.layout().owner(slot)
    }

    /// Changes who serves which slot and the members' config epochs in one step, as the
    /// cluster bus would spread a node's change to every member (here at once): `change`
    /// edits the owner of every slot and every member's epoch; when it fails the layout
    /// stays as it was.
    pub(crate) fn change<E>(
        &self,
        change: impl FnOnce(&mut [Option<u16>], &mut [u64]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut guard = match self.layout.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut owner = guard.owner.clone();
        let mut epochs: Vec<u64> = guard.roles.iter().map(|r| r.epoch).collect();
        change(&mut owner, &mut epochs)?;
        *guard = Arc::new(Layout::with_owner(guard.roles.clone(), owner, &epochs));
        Ok(())
    }

    /// Gives member `i` a new node id (`CLUSTER RESET HARD`), and a new shard id with it.
    pub(crate) fn rename(&self, i: usize, id: String) {
        if let Some(member) = self.members.get(i) {
            let shard = shard_id_of(&id);
            match member.shard_id.write() {
                Ok(mut old) => *old = shard,
                Err(poisoned) => *poisoned.into_inner() = shard,
            }
            match member.id.write() {
                Ok(mut old) => *old = id,
                Err(poisoned) => *poisoned.into_inner() = id,
            }
        }
    }

    /// Redis Cluster's failover of a shard to its replica `new`: `new` takes its master's
    /// slots with a config epoch above every other, the old master and the shard's other
    /// replicas become its replicas. Returns the old master.
    ///
    /// # Errors
    /// When `new` is not a replica.
    pub(crate) fn promote(&self, new: usize) -> Result<usize, String> {
        let mut guard = match self.layout.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut roles = guard.roles.clone();
        let Some(old) = roles.get(new).and_then(|r| r.replica_of) else {
            return Err(format!("n{new} is not a replica"));
        };
        let epoch = guard.current_epoch() + 1;
        let ranges = roles.get_mut(old).map(|r| std::mem::take(&mut r.ranges));
        for (i, role) in roles.iter_mut().enumerate() {
            if i == new {
                role.replica_of = None;
                role.ranges = ranges.clone().unwrap_or_default();
                role.epoch = epoch;
            } else if i == old || role.replica_of == Some(old) {
                role.replica_of = Some(new);
                role.epoch = epoch;
            }
        }
        *guard = Arc::new(Layout::new(roles));
        Ok(old)
    }

    /// `n` masters splitting the slots as `redis-cli --cluster create` does, each followed by
    /// `replicas` replicas: member `i` is at `addrs[i]`, named `ids[i]`.
    pub(crate) fn even(
        masters: usize,
        replicas: usize,
        addrs: &[SocketAddr],
        ids: Vec<String>,
    ) -> View {
        let per_node = SLOTS as f64 / masters.max(1) as f64;
        let mut ranges = Vec::with_capacity(masters);
        let (mut first, mut cursor) = (0i64, 0f64);
        for i in 0..masters {
            let mut last = (cursor + per_node - 1.0).round() as i64;
            if last > SLOTS as i64 - 1 || i == masters - 1 {
                last = SLOTS as i64 - 1;
            }
            last = last.max(first);
            ranges.push((first as u16, last as u16));
            first = last + 1;
            cursor += per_node;
        }
        let group = replicas + 1;
        let master_ids: Vec<String> = ids.iter().step_by(group).cloned().collect();
        let (members, roles) = ids
            .into_iter()
            .zip(addrs)
            .enumerate()
            .map(|(i, (id, &addr))| {
                let shard = i / group;
                let master = shard * group;
                let master_id = master_ids.get(shard).map_or(id.as_str(), String::as_str);
                let member = Member::new(id.clone(), addr, master_id);
                let is_master = i == master;
                let role = Role {
                    replica_of: (!is_master).then_some(master),
                    ranges: if is_master {
                        ranges.get(shard).copied().into_iter().collect()
                    } else {
                        Vec::new()
                    },
                    epoch: shard as u64 + 1,
                };
                (member, role)
            })
            .unzip();
        View::new(members, roles)
    }
}

/// A node's membership in a cluster (kept in [`Node::cluster`]).
#[derive(Debug, Clone)]
pub(crate) struct Cluster {
    /// The whole cluster.
    pub(crate) view: Arc<View>,
    /// This node's index in the view.
    pub(crate) me: usize,
}

impl Cluster {
    /// A one-node cluster serving every slot, at `addr`, named `id`, with config epoch 0 (as a
    /// Redis node's after `CLUSTER ADDSLOTSRANGE 0 16383`).
    pub(crate) fn single(id: String, addr: SocketAddr) -> Cluster {
        let role = Role {
            replica_of: None,
            ranges: vec![(0, SLOTS as u16 - 1)],
            epoch: 0,
        };
        Cluster {
            view: Arc::new(View::new(
                vec![Member::new(id.clone(), addr, &id)],
                vec![role],
            )),
            me: 0,
        }
    }

    /// This node's member entry.
    pub(crate) fn myself(&self) -> Option<&Member> {
        self.view.members.get(self.me)
    }

    /// The master whose slots this node serves (itself, or its master).
    fn my_master(&self) -> usize {
        self.view.layout().replica_of(self.me).unwrap_or(self.me)
    }

    /// Registers the running `node` as this member: other members find it, and the messages
    /// they publish reach its subscribers, in the order each member published them.
    pub(crate) fn attach(&self, node: &Arc<Node>, offset: Arc<AtomicU64>) {
        let Some(member) = self.myself() else {
            return;
        };
        let bus = if self.view.members.len() > 1 {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(bus_receiver(Arc::downgrade(node), rx));
            Some(tx)
        } else {
            None
        };
        if let Ok(mut running) = member.running.lock() {
            running.node = Arc::downgrade(node);
            running.offset = Some(offset);
            running.bus = bus;
        }
    }
}

/// Delivers what other members published to this node's subscribers.
async fn bus_receiver(node: Weak<Node>, mut rx: mpsc::UnboundedReceiver<Vec<(Bytes, Bytes)>>) {
    while let Some(batch) = rx.recv().await {
        let Some(node) = node.upgrade() else {
            return;
        };
        let mut state = node.state.lock().await;
        let mut effects = Effects {
            publishes: batch,
            ..Effects::default()
        };
        let now = node.clock.now_ms();
        crate::pubsub::deliver(&mut state, &mut effects, now);
    }
}

/// Sends the messages `PUBLISH`ed on this node to every other member (Redis Cluster's
/// `clusterPropagatePublish`); called with the effects of a command before local delivery.
pub(crate) fn broadcast(node: &Node, publishes: &[(Bytes, Bytes)]) {
    if publishes.is_empty() {
        return;
    }
    let Some(cluster) = node.cluster.get() else {
        return;
    };
    for (i, member) in cluster.view.members.iter().enumerate() {
        if i == cluster.me {
            continue;
        }
        let bus = member.running.lock().ok().and_then(|r| r.bus.clone());
        if let Some(bus) = bus {
            let _ = bus.send(publishes.to_vec());
        }
    }
}

/// Why a command may not run on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Redirect {
    /// Its keys span several slots.
    CrossSlot,
    /// The slot is served by the member at the address.
    Moved(u16, SocketAddr),
    /// Nobody serves the slot.
    Unbound,
}

impl Redirect {
    /// The error reply Redis sends.
    pub(crate) fn error(&self) -> CommandError {
        CommandError::Raw(match self {
            Redirect::CrossSlot => CROSSSLOT.into(),
            Redirect::Moved(slot, addr) => format!("MOVED {slot} {}:{}", addr.ip(), addr.port()),
            Redirect::Unbound => "CLUSTERDOWN Hash slot not served".into(),
        })
    }
}

/// Redis's `getNodeByQuery` for `commands` run together (one command, or an `EXEC`'s queue):
/// the slot their keys hash to (`None` without keys), or where to send them instead.
/// `readonly` is the client's `READONLY` mode, which lets a replica serve reads of its
/// master's slots.
pub(crate) fn route<'a>(
    cluster: &Cluster,
    readonly: bool,
    commands: impl IntoIterator<Item = (&'a CommandMeta, &'a [Bytes])>,
) -> Result<Option<u16>, Redirect> {
    let mut slot = None;
    let mut owner = None;
    let mut writes = false;
    let mut shard_pubsub = false;
    for (spec, argv) in commands {
        writes |= spec.has(flags::WRITE);
        shard_pubsub |= matches!(spec.name, "ssubscribe" | "sunsubscribe" | "spublish");
        for key in spec.keys_of(argv) {
            let s = key_hash_slot(key);
            match slot {
                None => {
                    slot = Some(s);
                    owner = Some(cluster.view.owner(s).ok_or(Redirect::Unbound)?);
                }
                Some(first) if first != s => return Err(Redirect::CrossSlot),
                Some(_) => {}
            }
        }
    }
    let (Some(slot), Some(owner)) = (slot, owner) else {
        return Ok(None);
    };
    if owner == cluster.me {
        return Ok(Some(slot));
    }
    let my_master = cluster.my_master();
    if (readonly || shard_pubsub) && !writes && my_master == owner && my_master != cluster.me {
        return Ok(Some(slot));
    }
    let addr = cluster
        .view
        .members
        .get(owner)
        .map(|m| m.addr)
        .ok_or(Redirect::Unbound)?;
    Err(Redirect::Moved(slot, addr))
}

/// The check before a client's command runs (after `AUTH`, before `MULTI` queues it):
/// `Some(error)` when the command belongs elsewhere. A command refused inside `MULTI`
/// aborts the transaction (`EXECABORT`), as Redis's `flagTransaction`. `EXEC` checks its
/// whole queue when it runs ([`check_exec`]).
pub(crate) fn check_command(
    node: &Node,
    client: &mut crate::client::ClientState,
    spec: &'static CommandMeta,
    argv: &[Bytes],
) -> Option<CommandError> {
    let cluster = node.cluster.get()?;
    if !client.authenticated || spec.name == "exec" {
        return None;
    }
    match route(cluster, client.modes.cluster_readonly, [(spec, argv)]) {
        Ok(_) => None,
        Err(redirect) => {
            crate::transaction::flag_error(client);
            Some(redirect.error())
        }
    }
}

/// `EXEC`'s check of its queued commands together (all keys in one slot this node serves).
pub(crate) fn check_exec(
    node: &Node,
    readonly: bool,
    queue: &[(crate::command_meta::Resolved, Vec<Bytes>)],
) -> Result<(), CommandError> {
    let Some(cluster) = node.cluster.get() else {
        return Ok(());
    };
    route(
        cluster,
        readonly,
        queue.iter().map(|(r, argv)| (r.spec, argv.as_slice())),
    )
    .map(|_| ())
    .map_err(|r| r.error())
}

/// What a script may touch in cluster mode (Redis 7's `scriptVerifyClusterState`).
#[derive(Debug, Default)]
pub(crate) struct ScriptSlots {
    /// The slot the script's keys so far hash to.
    slot: Option<u16>,
    /// Keys of several (local) slots are allowed: scripts without a shebang, and those
    /// flagged `allow-cross-slot-keys`.
    cross_slot_ok: bool,
}

impl ScriptSlots {
    /// The state for a script run with `declared` keys.
    pub(crate) fn new(declared: &[Bytes], cross_slot_ok: bool) -> ScriptSlots {
        ScriptSlots {
            slot: declared.first().map(|k| key_hash_slot(k)),
            cross_slot_ok,
        }
    }

    /// Checks one `redis.call` of the script: `Err` holds the error text.
    pub(crate) fn check(
        &mut self,
        node: &Node,
        readonly: bool,
        spec: &'static CommandMeta,
        argv: &[Bytes],
    ) -> Result<(), String> {
        let Some(cluster) = node.cluster.get() else {
            return Ok(());
        };
        let slot = route(cluster, readonly, [(spec, argv)]).map_err(|_| {
            "ERR Script attempted to access a non local key in a cluster node".to_string()
        })?;
        if let (Some(slot), false) = (slot, self.cross_slot_ok) {
            match self.slot {
                None => self.slot = Some(slot),
                Some(first) if first != slot => {
                    return Err(
                        "ERR Script attempted to access keys that do not hash to the same slot"
                            .into(),
                    )
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

/// A node id: 40 lowercase hex characters from `rng`.
/// The shard id of a shard whose first master is named `master_id`: as random-looking as a
/// node id (40 hex characters) and the same for every member of the shard.
fn shard_id_of(master_id: &str) -> String {
    crate::script::sha1hex(format!("shard of {master_id}").as_bytes())
}

pub(crate) fn node_id(rng: &mut impl rand::Rng) -> String {
    (0..40)
        .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
        .collect()
}

/// Keys of `db` in `slot`, including expired ones not yet reclaimed (as Redis's slot index).
pub(crate) fn keys_in_slot(
    db: &crate::db::Db,
    slot: u16,
) -> impl Iterator<Item = &crate::db::Key> + '_ {
    db.keys().filter(move |k| key_hash_slot(k) == slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_split_as_redis_cli_does() {
        let addrs: Vec<SocketAddr> = (0..3)
            .map(|i| SocketAddr::from(([127, 0, 0, 1], 7000 + i)))
            .collect();
        let view = View::even(3, 0, &addrs, vec!["a".into(), "b".into(), "c".into()]);
        let layout = view.layout();
        let ranges: Vec<_> = (0..3)
            .map(|i| layout.role(i).map(|r| r.ranges.clone()).unwrap_or_default())
            .collect();
        assert_eq!(
            ranges,
            vec![vec![(0, 5460)], vec![(5461, 10922)], vec![(10923, 16383)]]
        );
        assert_eq!(layout.slots_assigned(), SLOTS);
        assert_eq!(view.owner(5461), Some(1));
    }

    #[test]
    fn a_promoted_replica_takes_its_masters_slots_and_shard() {
        let addrs: Vec<SocketAddr> = (0..4)
            .map(|i| SocketAddr::from(([127, 0, 0, 1], 7000 + i)))
            .collect();
        let ids = (0..4).map(|i| i.to_string()).collect();
        let view = View::even(2, 1, &addrs, ids);
        assert_eq!(view.owner(0), Some(0));
        assert_eq!(view.promote(1), Ok(0));
        let layout = view.layout();
        assert_eq!(layout.owner(0), Some(1));
        assert_eq!(layout.owner(16383), Some(2));
        assert_eq!(layout.replica_of(0), Some(1));
        assert_eq!(layout.replica_of(1), None);
        assert_eq!(layout.role(1).map(|r| r.epoch), Some(3));
        assert_eq!(layout.links(), vec![(1, 0), (2, 3)]);
        assert!(view.promote(2).is_err());
    }

    #[test]
    fn a_shard_has_one_id_for_its_master_and_replicas_kept_across_a_failover() {
        let addrs: Vec<SocketAddr> = (0..4)
            .map(|i| SocketAddr::from(([127, 0, 0, 1], 7000 + i)))
            .collect();
        let ids = (0..4).map(|i| format!("{i:040}")).collect();
        let view = View::even(2, 1, &addrs, ids);
        let shard = |i: usize| view.members[i].shard_id();
        assert_eq!(shard(0), shard(1));
        assert_eq!(shard(2), shard(3));
        assert_ne!(shard(0), shard(2));
        assert_eq!(shard(0).len(), 40);
        assert!(shard(0).bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(shard(0), view.members[0].id());
        let before = shard(0);
        assert_eq!(view.promote(1), Ok(0));
        assert_eq!(shard(1), before);
        // CLUSTER RESET HARD: a new node id and a new shard.
        view.rename(1, "f".repeat(40));
        assert_ne!(shard(1), before);
        assert_eq!(shard(0), before);
    }
}
