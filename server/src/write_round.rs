//! Replies written at the end of a round of the scheduler, as Redis writes every client's
//! replies in `beforeSleep`, after it has processed the whole batch of ready sockets.
//!
//! A connection that has processed its input hands its replies to the listener's
//! [`WriteRound`] and yields to tokio's deferred queue, which runs again only after the tasks
//! ready in this round have run and the I/O driver has been polled. The first of the deferred
//! connections to run writes the replies of all that were handed over up to its own; the rest
//! find theirs written. Without the shared write, tokio runs the tasks the driver just woke
//! before the deferred ones, so a round's replies waited behind the next round's processing
//! and the client slept, woken once per reply batch (7 times as often as against Redis, in
//! the pipelined Redisson acquire).
//!
//! Only writes that do not block happen here: what a socket does not take stays with its
//! connection, which writes it itself under its output limits.

use crate::net_stream::NetStream;
use bytes::{Buf, BytesMut};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The replies of one socket's connection that wait for the end of the round.
pub(crate) struct PendingReplies {
    socket: Arc<NetStream>,
    out: Mutex<BytesMut>,
}

impl PendingReplies {
    /// Pending replies for `socket`, none yet.
    pub(crate) fn new(socket: Arc<NetStream>) -> Self {
        Self {
            socket,
            out: Mutex::new(BytesMut::new()),
        }
    }

    fn out(&self) -> MutexGuard<'_, BytesMut> {
        // A panic while holding the buffer cannot leave it half-updated in a way that matters:
        // its bytes are either written or not.
        self.out.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes what the socket takes without blocking; the rest stays.
    fn write_ready(&self) {
        let mut out = self.out();
        while !out.is_empty() {
            match self.socket.try_write(&out) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.advance(n),
            }
        }
    }

    /// Moves what was not written back into `wbuf` (empty when called), with its room.
    pub(crate) fn take_unwritten(&self, wbuf: &mut BytesMut) {
        std::mem::swap(&mut *self.out(), wbuf);
    }
}

/// The connections of one listener whose replies wait for the end of the round, in the
/// order they were handed over.
#[derive(Default)]
pub(crate) struct WriteRound {
    pending: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    /// The number the next hand-over gets.
    next: u64,
    waiting: VecDeque<(u64, Arc<PendingReplies>)>,
}

/// A connection's place among the hand-overs: [`WriteRound::write_through`] writes the
/// replies handed over up to it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Turn(u64);

impl WriteRound {
    fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands the replies in `wbuf` to the round (leaving `wbuf` empty, with the room of the
    /// connection's other buffer).
    pub(crate) fn defer(&self, replies: &Arc<PendingReplies>, wbuf: &mut BytesMut) -> Turn {
        {
            let mut out = replies.out();
            if out.is_empty() {
                std::mem::swap(&mut *out, wbuf);
            } else {
                out.extend_from_slice(wbuf);
                wbuf.clear();
            }
        }
        let mut pending = self.pending();
        let turn = pending.next;
        pending.next += 1;
        pending.waiting.push_back((turn, replies.clone()));
        Turn(turn)
    }

    /// Writes the replies handed over up to `turn`, as far as their sockets take them.
    ///
    /// A connection calls it when it runs again after yielding, so everything up to its own
    /// turn was handed over before the scheduler's last poll of the I/O driver: that is the
    /// previous round. Replies handed over since, by connections that ran before this one in
    /// the new round, wait for their own round's end.
    pub(crate) fn write_through(&self, turn: Turn) {
        // One at a time, the lock not held while writing.
        loop {
            let replies = {
                let mut pending = self.pending();
                match pending.waiting.front() {
                    Some((t, _)) if *t <= turn.0 => pending.waiting.pop_front(),
                    _ => None,
                }
            };
            let Some((_, replies)) = replies else {
                return;
            };
            replies.write_ready();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;
    use tokio::net::{TcpListener, TcpStream};

    async fn pair() -> (Arc<NetStream>, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let client = TcpStream::connect(addr).await.expect("connect");
        let (server, _) = listener.accept().await.expect("accept");
        (Arc::new(NetStream::Tcp(server)), client)
    }

    #[tokio::test]
    async fn one_write_sends_every_connections_replies_in_order() {
        let round = WriteRound::default();
        let (s1, mut c1) = pair().await;
        let (s2, mut c2) = pair().await;
        let p1 = Arc::new(PendingReplies::new(s1));
        let p2 = Arc::new(PendingReplies::new(s2));
        let mut w1 = BytesMut::from(&b"+OK\r\n"[..]);
        let mut w2 = BytesMut::from(&b":1\r\n"[..]);
        round.defer(&p1, &mut w1);
        let second = round.defer(&p2, &mut w2);
        assert!(w1.is_empty() && w2.is_empty());
        round.write_through(second);
        let mut got = [0u8; 5];
        c1.read_exact(&mut got).await.expect("read c1");
        assert_eq!(&got, b"+OK\r\n");
        let mut got = [0u8; 4];
        c2.read_exact(&mut got).await.expect("read c2");
        assert_eq!(&got, b":1\r\n");
        let mut back = BytesMut::new();
        p1.take_unwritten(&mut back);
        assert!(back.is_empty(), "everything was written");
        assert!(round.pending().waiting.is_empty());
    }

    #[tokio::test]
    async fn replies_handed_over_after_a_turn_wait_for_their_own() {
        let round = WriteRound::default();
        let (s1, mut c1) = pair().await;
        let (s2, _c2) = pair().await;
        let p1 = Arc::new(PendingReplies::new(s1));
        let p2 = Arc::new(PendingReplies::new(s2));
        let first = round.defer(&p1, &mut BytesMut::from(&b"+first\r\n"[..]));
        let second = round.defer(&p2, &mut BytesMut::from(&b"+second\r\n"[..]));
        round.write_through(first);
        let mut got = [0u8; 8];
        c1.read_exact(&mut got).await.expect("read c1");
        assert_eq!(&got, b"+first\r\n");
        assert_eq!(round.pending().waiting.len(), 1);
        assert_eq!(&p2.out()[..], b"+second\r\n", "not written before its turn");
        round.write_through(second);
        assert!(p2.out().is_empty());
        assert!(round.pending().waiting.is_empty());
    }

    #[tokio::test]
    async fn what_the_socket_does_not_take_goes_back_to_its_connection() {
        let round = WriteRound::default();
        let (s, mut c) = pair().await;
        let p = Arc::new(PendingReplies::new(s));
        // Far more than the loopback socket buffers hold while the client does not read.
        let big = vec![b'x'; 32 << 20];
        let mut wbuf = BytesMut::from(&big[..]);
        let turn = round.defer(&p, &mut wbuf);
        round.write_through(turn);
        p.take_unwritten(&mut wbuf);
        assert!(!wbuf.is_empty() && wbuf.len() < big.len(), "{}", wbuf.len());
        let written = big.len() - wbuf.len();
        // The bytes written and the bytes left are the reply, in order, once each.
        let mut got = vec![0u8; written];
        c.read_exact(&mut got).await.expect("read");
        assert!(got.iter().all(|&b| b == b'x'));
        assert!(wbuf.iter().all(|&b| b == b'x'));
    }
}
