//! An in-process client: runs commands against a node without a socket, through the same
//! pipeline as a connection ([`crate::dispatch`]: MULTI queueing, WATCH, cluster redirects,
//! `BUSY`, `maxmemory`, blocking commands, `CLIENT PAUSE`). Benchmarks use it to time command
//! and script execution alone.

use crate::client::{ClientHandle, ClientState, Endpoints, Outbox, OutboxReceiver};
use crate::dispatch::{Guard, ScriptPlace, Session, Transport};
use crate::node::{Effects, Node};
use bytes::{Bytes, BytesMut};
use locksmith_resp::{encode_with, Frame};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::runtime::Handle;
use tokio::sync::broadcast;

/// A client that executes commands in-process, registered with the node like a connected
/// client (`CLIENT LIST` shows it). For synchronous code: [`LocalClient::execute`] blocks the
/// calling thread on the node's runtime, so it must not be called from an async context (it
/// answers an error there instead of blocking a runtime worker).
///
/// Unlike a socket client, it returns every reply (`CLIENT REPLY OFF` does not drop them);
/// messages pushed to it (pub/sub, MONITOR) are read with [`LocalClient::next_push`].
#[doc(hidden)]
#[derive(Debug)]
pub struct LocalClient {
    session: Session,
    runtime: Handle,
    outbox_rx: OutboxReceiver,
    shutdown: broadcast::Receiver<()>,
}

/// The in-process client's transport: nothing to write, and its peer never goes away.
struct InProcess;

impl Transport for InProcess {
    async fn flush(&mut self, _session: &Session) -> std::io::Result<()> {
        Ok(())
    }

    async fn closed(&mut self) {
        std::future::pending::<()>().await;
    }
}

impl LocalClient {
    /// A new client of `node`, whose tasks run on `runtime`; `shutdown` fires when the node
    /// stops.
    pub(crate) fn new(node: Arc<Node>, runtime: Handle, shutdown: broadcast::Receiver<()>) -> Self {
        let (outbox, outbox_rx) = Outbox::new();
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        let handle = Arc::new(ClientHandle::new(
            node.next_client_id(),
            node.clock.now_ms(),
            Endpoints::tcp(addr, node.addr),
            outbox,
        ));
        node.clients.insert(handle.clone());
        let authenticated = !node.requires_auth();
        LocalClient {
            session: Session::new(
                node,
                ClientState::new(handle, authenticated),
                ScriptPlace::Caller,
            ),
            runtime,
            outbox_rx,
            shutdown,
        }
    }

    /// Runs one command through the pipeline and returns its reply. A blocking command
    /// (`BLPOP`) blocks the calling thread until it is served or times out.
    pub fn execute(&mut self, argv: &[Bytes]) -> Frame {
        if Handle::try_current().is_ok() {
            return Frame::error("ERR the in-process client cannot run inside an async context");
        }
        if self.session.client.handle.is_killed() {
            return Frame::error("ERR the in-process client was killed");
        }
        let LocalClient {
            session,
            runtime,
            shutdown,
            ..
        } = self;
        let reply = runtime.block_on(async {
            let mut guard: Guard = None;
            let mut effects = Effects::default();
            let mut transport = InProcess;
            let reply = if session
                .wait_while_paused(&mut transport, argv, &mut guard, &mut effects, shutdown)
                .await
            {
                let reply = session.process(&mut guard, argv, &mut effects).await;
                match session.client.block.take() {
                    Some(request) => session
                        .wait_blocked(
                            &mut transport,
                            &mut guard,
                            &mut effects,
                            argv,
                            request,
                            shutdown,
                        )
                        .await
                        .unwrap_or_else(|| Frame::error("ERR the server is shutting down")),
                    None => reply,
                }
            } else {
                Frame::error("ERR the server is shutting down")
            };
            if let Some(mut state) = guard {
                state.finish_effects(&session.node, &mut effects);
            }
            reply
        });
        session.count_reply(&reply);
        // Tracking invalidations of this client's own keys follow its reply.
        for (frame, size) in self.outbox_rx.take_deferred() {
            self.outbox_rx.written(size);
            self.session.client.handle.outbox.send(frame, size);
        }
        reply
    }

    /// The next message pushed to this client (a pub/sub message, a MONITOR line), if any.
    pub fn next_push(&mut self) -> Option<Frame> {
        let frame = self.outbox_rx.try_recv()?;
        let mut encoded = BytesMut::new();
        let doubles = self.session.node.config.profile().encodings.doubles;
        encode_with(&frame, self.session.client.resp, doubles, &mut encoded);
        self.outbox_rx.written(encoded.len());
        Some(frame)
    }
}

impl Drop for LocalClient {
    fn drop(&mut self) {
        let node = self.session.node.clone();
        let id = self.session.client.id();
        node.clients.remove(id);
        self.runtime.spawn(async move {
            node.state.lock().await.client_gone(id);
        });
    }
}

#[cfg(test)]
mod tests {
    //! The in-process client against a running node: the pipeline's steps must behave as for
    //! a TCP client (the same steps run, see `crate::dispatch`).

    use super::LocalClient;
    use crate::control::ClusterView;
    use crate::server::{ServerBuilder, ServerHandle};
    use bytes::Bytes;
    use locksmith_resp::Frame;
    use std::net::SocketAddr;
    use std::time::{Duration, Instant};

    fn argv(args: &[&str]) -> Vec<Bytes> {
        args.iter().map(|a| Bytes::from(a.to_string())).collect()
    }

    fn run(client: &mut LocalClient, args: &[&str]) -> Frame {
        client.execute(&argv(args))
    }

    /// Whether `frame` is an error whose line starts with `prefix`.
    fn error_starts(frame: &Frame, prefix: &str) -> bool {
        matches!(frame, Frame::Error(line) if line.starts_with(prefix.as_bytes()))
    }

    fn bulk(s: &str) -> Frame {
        Frame::Bulk(Bytes::from(s.to_string()))
    }

    /// A runtime and a node started on it with `builder`.
    fn start(builder: ServerBuilder) -> (tokio::runtime::Runtime, ServerHandle) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let server = runtime.block_on(builder.start()).unwrap();
        (runtime, server)
    }

    #[test]
    fn multi_queues_and_exec_runs_the_queue() {
        let (_rt, server) = start(ServerBuilder::default());
        let mut client = server.local_client();
        assert_eq!(run(&mut client, &["MULTI"]), Frame::ok());
        assert_eq!(
            run(&mut client, &["SET", "k", "v"]),
            Frame::simple("QUEUED")
        );
        assert_eq!(run(&mut client, &["GET", "k"]), Frame::simple("QUEUED"));
        // Nothing ran yet: another client does not see the key.
        let mut other = server.local_client();
        assert_eq!(run(&mut other, &["EXISTS", "k"]), Frame::Integer(0));
        assert_eq!(
            run(&mut client, &["EXEC"]),
            Frame::Array(vec![Frame::ok(), bulk("v")])
        );
        // A command refused while queueing fails the transaction.
        assert_eq!(run(&mut client, &["MULTI"]), Frame::ok());
        assert!(run(&mut client, &["SET", "k"]).is_error());
        assert_eq!(
            run(&mut client, &["EXEC"]),
            Frame::error("EXECABORT Transaction discarded because of previous errors.")
        );
        // EXEC without MULTI, and commands refused inside a transaction.
        assert_eq!(
            run(&mut client, &["EXEC"]),
            Frame::error("ERR EXEC without MULTI")
        );
        assert_eq!(run(&mut client, &["MULTI"]), Frame::ok());
        assert_eq!(
            run(&mut client, &["WATCH", "k"]),
            Frame::error("ERR WATCH inside MULTI is not allowed")
        );
        assert_eq!(run(&mut client, &["DISCARD"]), Frame::ok());
    }

    #[test]
    fn a_write_to_a_watched_key_aborts_exec() {
        let (_rt, server) = start(ServerBuilder::default());
        let mut client = server.local_client();
        let mut other = server.local_client();
        assert_eq!(run(&mut client, &["WATCH", "k"]), Frame::ok());
        assert_eq!(run(&mut other, &["SET", "k", "theirs"]), Frame::ok());
        assert_eq!(run(&mut client, &["MULTI"]), Frame::ok());
        assert_eq!(
            run(&mut client, &["SET", "k", "mine"]),
            Frame::simple("QUEUED")
        );
        assert_eq!(run(&mut client, &["EXEC"]), Frame::NullArray);
        assert_eq!(run(&mut client, &["GET", "k"]), bulk("theirs"));
        // Untouched since WATCH: EXEC runs.
        assert_eq!(run(&mut client, &["WATCH", "k"]), Frame::ok());
        assert_eq!(run(&mut client, &["MULTI"]), Frame::ok());
        assert_eq!(
            run(&mut client, &["SET", "k", "mine"]),
            Frame::simple("QUEUED")
        );
        assert_eq!(run(&mut client, &["EXEC"]), Frame::Array(vec![Frame::ok()]));
    }

    #[test]
    fn cluster_mode_redirects_and_refuses_cross_slot_commands() {
        // Member 0 (this node) serves slots 0..=8191, member 1 the rest.
        let other: SocketAddr = ([127, 0, 0, 1], 7001).into();
        let me: SocketAddr = ([127, 0, 0, 1], 7000).into();
        let view = ClusterView::even(2, 0, &[me, other], vec!["a".repeat(40), "b".repeat(40)]);
        let (_rt, server) = start(ServerBuilder::default().cluster_member(&view, 0));
        let mut client = server.local_client();
        // "foo" hashes to slot 12182 (member 1), "a" to 15495, "b" to 3300, "c" to 7365.
        assert_eq!(
            run(&mut client, &["GET", "foo"]),
            Frame::error("MOVED 12182 127.0.0.1:7001")
        );
        assert_eq!(run(&mut client, &["SET", "b", "1"]), Frame::ok());
        assert_eq!(
            run(&mut client, &["MSET", "b", "1", "c", "2"]),
            Frame::error("CROSSSLOT Keys in request don't hash to the same slot")
        );
        // Inside MULTI the redirect comes at queueing time and fails the transaction.
        assert_eq!(run(&mut client, &["MULTI"]), Frame::ok());
        assert_eq!(
            run(&mut client, &["GET", "a"]),
            Frame::error("MOVED 15495 127.0.0.1:7001")
        );
        let exec = run(&mut client, &["EXEC"]);
        assert!(error_starts(&exec, "EXECABORT"), "{exec:?}");
    }

    #[test]
    fn a_long_script_makes_other_clients_busy_until_killed() {
        let (_rt, server) = start(ServerBuilder::default());
        let mut client = server.local_client();
        assert_eq!(
            run(
                &mut client,
                &["CONFIG", "SET", "busy-reply-threshold", "50"]
            ),
            Frame::ok()
        );
        let mut runner = server.local_client();
        let script =
            std::thread::spawn(move || run(&mut runner, &["EVAL", "while true do end", "0"]));
        // Bounded: the script is busy after 50 ms.
        let deadline = Instant::now() + Duration::from_secs(10);
        let busy = loop {
            let reply = run(&mut client, &["GET", "k"]);
            if reply.is_error() || Instant::now() > deadline {
                break reply;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(
            busy,
            Frame::error(
                "BUSY Redis is busy running a script. You can only call SCRIPT KILL or \
                 SHUTDOWN NOSAVE."
            )
        );
        // MULTI works while busy; a queued command is refused and fails the transaction.
        assert_eq!(run(&mut client, &["MULTI"]), Frame::ok());
        let queued = run(&mut client, &["GET", "k"]);
        assert!(error_starts(&queued, "BUSY"), "{queued:?}");
        let exec = run(&mut client, &["EXEC"]);
        assert!(error_starts(&exec, "EXECABORT"), "{exec:?}");
        assert_eq!(run(&mut client, &["SCRIPT", "KILL"]), Frame::ok());
        let killed = script.join().unwrap();
        assert!(
            killed.to_string().contains("Script killed by user"),
            "{killed:?}"
        );
        assert_eq!(run(&mut client, &["GET", "k"]), Frame::Null);
    }

    #[test]
    fn blocking_commands_wait_until_served_or_timed_out() {
        let (_rt, server) = start(ServerBuilder::default());
        let mut client = server.local_client();
        assert_eq!(
            run(&mut client, &["BLPOP", "list", "0.05"]),
            Frame::NullArray
        );
        let mut pusher = server.local_client();
        let waiter = std::thread::spawn(move || run(&mut client, &["BLPOP", "list", "10"]));
        // Bounded: push once the waiter is blocked (or after 10 s, which the assertion catches).
        let deadline = Instant::now() + Duration::from_secs(10);
        while run(&mut pusher, &["CLIENT", "LIST"])
            .to_string()
            .matches("flags=b")
            .count()
            == 0
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(run(&mut pusher, &["RPUSH", "list", "x"]), Frame::Integer(1));
        assert_eq!(
            waiter.join().unwrap(),
            Frame::Array(vec![bulk("list"), bulk("x")])
        );
    }

    #[test]
    fn pushed_messages_are_read_in_order_and_errors_are_counted() {
        let (_rt, server) = start(ServerBuilder::default());
        let mut subscriber = server.local_client();
        let mut publisher = server.local_client();
        let confirmation = run(&mut subscriber, &["SUBSCRIBE", "ch"]);
        assert!(
            confirmation.to_string().contains("subscribe"),
            "{confirmation:?}"
        );
        assert_eq!(
            run(&mut publisher, &["PUBLISH", "ch", "hi"]),
            Frame::Integer(1)
        );
        let message = subscriber.next_push();
        assert_eq!(
            message,
            Some(Frame::Push(vec![bulk("message"), bulk("ch"), bulk("hi")]))
        );
        assert_eq!(subscriber.next_push(), None);
        assert!(run(&mut publisher, &["NOSUCH"]).is_error());
        let info = run(&mut publisher, &["INFO", "errorstats"]).to_string();
        assert!(info.contains("errorstat_ERR:count=1"), "{info}");
    }

    #[test]
    fn a_write_pause_holds_writing_scripts_but_not_no_writes_scripts() {
        let (_rt, server) = start(ServerBuilder::default());
        let mut admin = server.local_client();
        let mut reader = server.local_client();
        assert_eq!(run(&mut admin, &["SET", "x", "y"]), Frame::ok());
        let ro_function = "#!lua name=lib\nredis.register_function{function_name='f1', \
                           callback=function() return 'hello' end, flags={'no-writes'}}";
        assert_eq!(
            run(&mut admin, &["FUNCTION", "LOAD", ro_function]),
            bulk("lib")
        );
        let ro_script = "#!lua flags=no-writes\nreturn redis.call('get', 'x')";
        let sha = run(&mut admin, &["SCRIPT", "LOAD", ro_script]);
        let Frame::Bulk(sha) = sha else {
            panic!("{sha:?}")
        };
        let sha = String::from_utf8_lossy(&sha).into_owned();
        assert_eq!(
            run(&mut admin, &["CLIENT", "PAUSE", "100000", "WRITE"]),
            Frame::ok()
        );
        // Scripts declaring no-writes run at once, by body, by SHA1 and as functions.
        assert_eq!(run(&mut reader, &["EVAL", ro_script, "0"]), bulk("y"));
        assert_eq!(run(&mut reader, &["EVALSHA", &sha, "0"]), bulk("y"));
        assert_eq!(run(&mut reader, &["FCALL", "f1", "0"]), bulk("hello"));
        // A script without flags may write: held, and counted as blocked, until UNPAUSE.
        let mut writer = server.local_client();
        let held = std::thread::spawn(move || run(&mut writer, &["EVAL", "return 1", "0"]));
        let blocked = |admin: &mut LocalClient| {
            run(admin, &["INFO", "clients"])
                .to_string()
                .contains("blocked_clients:1")
        };
        // Bounded: the writer is held within 10 s (or the assertion below fails).
        let deadline = Instant::now() + Duration::from_secs(10);
        while !blocked(&mut admin) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(blocked(&mut admin));
        assert_eq!(run(&mut admin, &["CLIENT", "UNPAUSE"]), Frame::ok());
        assert_eq!(held.join().unwrap(), Frame::Integer(1));
    }

    #[test]
    fn expired_keys_read_as_missing_but_stay_during_a_pause() {
        let (_rt, server) = start(ServerBuilder::default());
        let mut client = server.local_client();
        let expired = |client: &mut LocalClient| {
            run(client, &["INFO", "stats"])
                .to_string()
                .lines()
                .find_map(|l| l.strip_prefix("expired_keys:").map(str::to_string))
        };
        // The active expiry cycle is off during a pause too, so only lookups could reclaim.
        let before = expired(&mut client);
        assert_eq!(run(&mut client, &["SET", "k", "v", "PX", "1"]), Frame::ok());
        assert_eq!(
            run(&mut client, &["CLIENT", "PAUSE", "100000", "WRITE"]),
            Frame::ok()
        );
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(run(&mut client, &["GET", "k"]), Frame::Null);
        assert_eq!(expired(&mut client), before, "nothing deleted while paused");
        assert_eq!(run(&mut client, &["CLIENT", "UNPAUSE"]), Frame::ok());
        assert_eq!(run(&mut client, &["GET", "k"]), Frame::Null);
        assert_ne!(expired(&mut client), before, "reclaimed once unpaused");
    }

    #[test]
    fn inside_an_async_context_it_answers_an_error_instead_of_blocking() {
        let (rt, server) = start(ServerBuilder::default());
        let mut client = server.local_client();
        let reply = rt.block_on(async { run(&mut client, &["PING"]) });
        assert!(reply.is_error(), "{reply:?}");
        assert_eq!(run(&mut client, &["PING"]), Frame::simple("PONG"));
    }
}
