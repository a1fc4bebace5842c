//! A connection that became a replica link (`SYNC`/`PSYNC`, see
//! [`crate::replication::serve`]): it sends the dataset as an RDB payload (`$<len>\r\n` and
//! the file, no trailing CRLF) or the backlog from the replica's offset, then the stream's
//! bytes as they are written, and reads the replica's `REPLCONF ACK <offset>`, which `WAIT`,
//! `min-replicas-to-write` and `INFO` count.

use crate::client::ClientHandle;
use crate::connection::Socket;
use crate::node::Node;
use crate::replication::serve::{Handoff, Start};
use crate::replication::Remote;
use bytes::{Bytes, BytesMut};
use locksmith_resp::{Limits, RequestDecoder};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::broadcast;

/// Most stream bytes gathered into one write.
const WRITE_GATHER: usize = 256 * 1024;

/// Runs a replica link on the connection whose client sent `SYNC`/`PSYNC` (its reply is
/// written already): the dataset or the backlog, then the stream, until the replica leaves,
/// is killed (`CLIENT KILL TYPE replica`), is dropped for its output buffer limit, or the
/// server shuts down. `rbuf` holds what the replica sent after its `PSYNC`.
pub(crate) async fn run(
    node: &Arc<Node>,
    socket: &mut Socket,
    rbuf: &mut BytesMut,
    handle: &ClientHandle,
    handoff: Handoff,
    shutdown: &mut broadcast::Receiver<()>,
) -> std::io::Result<()> {
    let Handoff {
        link,
        mut rx,
        cut,
        ack,
        remote,
        acked,
        start,
    } = handoff;
    let result = async {
        match start {
            Start::Full {
                dbs,
                functions,
                encoding,
                now_ms,
            } => {
                let rdb = tokio::task::spawn_blocking(move || {
                    crate::rdb::file::encode_dataset(&dbs, &functions, now_ms, encoding)
                })
                .await
                .map_err(std::io::Error::other)?;
                remote.phase.store(Remote::SEND_BULK, Ordering::Release);
                socket
                    .write_all(format!("${}\r\n", rdb.len()).as_bytes())
                    .await?;
                socket.write_all(&rdb).await?;
                tracing::info!(replica = %handle.addr_text(), bytes = rdb.len(), "Synchronization with replica succeeded");
            }
            Start::Partial(stream) => socket.write_all(&stream).await?,
        }
        remote.phase.store(Remote::ONLINE, Ordering::Release);
        let mut decoder = RequestDecoder::new(Limits::default());
        let mut out = Vec::new();
        let killed = handle.kill_notify.notified();
        tokio::pin!(killed);
        loop {
            if handle.is_killed() || cut.load(Ordering::Acquire) {
                return Ok(());
            }
            tokio::select! {
                biased;
                _ = &mut killed => return Ok(()),
                _ = shutdown.recv() => return Ok(()),
                batch = rx.recv() => {
                    let Some(batch) = batch else { return Ok(()) };
                    out.clear();
                    out.extend_from_slice(batch.bytes());
                    while out.len() < WRITE_GATHER {
                        match rx.try_recv() {
                            Ok(batch) => out.extend_from_slice(batch.bytes()),
                            Err(_) => break,
                        }
                    }
                    node.live.net_repl_output.fetch_add(out.len() as u64, Ordering::Relaxed);
                    socket.write_all(&out).await?;
                }
                read = socket.read_buf(rbuf) => {
                    if read? == 0 {
                        return Ok(());
                    }
                    while let Some(argv) = decoder.decode(rbuf).map_err(std::io::Error::other)? {
                        if let Some(offset) = ack_offset(&argv) {
                            ack.fetch_max(offset, Ordering::AcqRel);
                            remote.acked_at.store(node.clock.now_ms(), Ordering::Release);
                            acked.send_modify(|n| *n = n.wrapping_add(1));
                        }
                    }
                }
            }
        }
    }
    .await;
    node.state.lock().await.repl.remove_feed(link);
    tracing::info!(replica = %handle.addr_text(), "Connection with replica lost.");
    result
}

/// The offset of a replica's `REPLCONF ACK <offset> [FACK <offset>]`; other commands from a
/// replica are ignored (Redis runs them and sends no reply; a replica sends none but this).
fn ack_offset(argv: &[Bytes]) -> Option<u64> {
    match argv {
        [name, sub, offset, ..]
            if name.eq_ignore_ascii_case(b"replconf") && sub.eq_ignore_ascii_case(b"ack") =>
        {
            std::str::from_utf8(offset).ok()?.parse().ok()
        }
        _ => None,
    }
}
