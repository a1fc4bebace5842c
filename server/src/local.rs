//! An in-process client: runs commands against a node without a socket, through the same
//! dispatch as a connection (used by benchmarks to time command and script execution alone).

use crate::client::{ClientHandle, ClientInfo, ClientState, Outbox};
use crate::cmd;
use crate::shared::{Effects, Node};
use bytes::Bytes;
use locksmith_resp::Frame;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// A client that executes commands in-process. Not for use inside an async context (it takes
/// the node's state lock with `blocking_lock`).
#[doc(hidden)]
#[derive(Debug)]
pub struct LocalClient {
    node: Arc<Node>,
    client: ClientState,
    effects: Effects,
}

impl LocalClient {
    pub(crate) fn new(node: Arc<Node>) -> Self {
        let (outbox, _rx) = Outbox::new();
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        let handle = Arc::new(ClientHandle {
            id: node.next_client_id(),
            addr,
            laddr: node.addr,
            created_ms: node.clock.now_ms(),
            info: Mutex::new(ClientInfo::default()),
            outbox,
            killed: Default::default(),
            kill_notify: Default::default(),
        });
        LocalClient {
            client: ClientState::new(handle, true),
            node,
            effects: Effects::default(),
        }
    }

    /// Runs one command and returns its reply.
    pub fn execute(&mut self, argv: &[Bytes]) -> Frame {
        let mut state = self.node.state.blocking_lock();
        let now = self.node.clock.now_ms();
        let reply = cmd::execute(
            &mut state,
            &self.node,
            &mut self.client,
            argv,
            now,
            &mut self.effects,
        );
        state.finish_effects(&self.node, &mut self.effects);
        reply
    }
}
