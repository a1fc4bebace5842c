//! The resource side of fencing: a [`FencedLock`](crate::FencedLock) hands each acquisition a
//! token greater than every earlier one; the protected resource must reject a write whose token
//! is older than the newest it has accepted, so a holder that lost its lock (paused past its
//! lease, cut off by a failover) cannot overwrite the work of the next holder.
//!
//! [`FencingGate`] does this for data kept in Redis (the check, the record of the token and the
//! write are one script, so atomic); [`TokenFence`] does it in process, for a resource this
//! program owns (a file, a table behind a service).

use std::sync::Mutex;

use redis::aio::ConnectionLike;

use crate::error::Result;

/// Compare-and-set of the highest token seen. KEYS: token key (, data key). ARGV: token
/// (, value). Admits (returns 1, records the token, and with a data key sets it to the value)
/// when the token is at least the newest recorded; else returns 0 and changes nothing.
const FENCED_WRITE_SRC: &str = "local newest = tonumber(redis.call('get', KEYS[1]) or '-1') \
if tonumber(ARGV[1]) < newest then return 0 end \
redis.call('set', KEYS[1], ARGV[1]) \
if KEYS[2] ~= nil then redis.call('set', KEYS[2], ARGV[2]) end \
return 1";

static FENCED_WRITE: std::sync::LazyLock<redis::Script> =
    std::sync::LazyLock::new(|| redis::Script::new(FENCED_WRITE_SRC));

/// A fencing check on a resource kept in Redis: the newest admitted token lives in the key
/// `token_key`.
///
/// Equal tokens are admitted (the same holder writing again); older ones are refused.
///
/// # Examples
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let server = locksmith_server::Server::builder().start().await?;
/// # let url = server.url();
/// use locksmith_lock::{Client, FencingGate};
///
/// let client = Client::open(&url).await?;
/// let lock = client.fenced_lock("invoice-42");
/// let gate = FencingGate::new("invoice-42:token");
/// let mut conn = client.connection();
/// let stale = lock.with_token(|token| async move { token }).await?;
/// let newer = lock
///     .with_token(|token| {
///         let (gate, mut conn) = (&gate, conn.clone());
///         async move {
///             assert!(gate.write(&mut conn, token, "invoice-42", "paid").await?);
///             Ok::<_, locksmith_lock::LockError>(token)
///         }
///     })
///     .await??;
/// assert!(newer > stale);
/// // A writer still holding the older token is refused, and the data is left alone.
/// assert!(!gate.write(&mut conn, stale, "invoice-42", "void").await?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct FencingGate {
    token_key: String,
}

impl FencingGate {
    /// A gate recording the newest admitted token in `token_key`.
    pub fn new(token_key: impl Into<String>) -> Self {
        FencingGate {
            token_key: token_key.into(),
        }
    }

    /// The key holding the newest admitted token.
    pub fn token_key(&self) -> &str {
        &self.token_key
    }

    /// Admits `token` if it is at least the newest admitted one, and records it; `false` (and
    /// nothing changed) for an older token. The caller's own write must then be ordered after
    /// this check by the resource itself; use [`write`](Self::write) to do both atomically.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn admit<C: ConnectionLike>(&self, conn: &mut C, token: i64) -> Result<bool> {
        let r: i64 = FENCED_WRITE
            .key(&self.token_key)
            .arg(token)
            .invoke_async(conn)
            .await?;
        Ok(r == 1)
    }

    /// Atomically admits `token` (as [`admit`](Self::admit)) and, when admitted, sets
    /// `data_key` to `value`; `false` when the token was stale (nothing written).
    ///
    /// In a Redis Cluster both keys must share a hash slot (a `{tag}`).
    ///
    /// # Errors
    /// Redis errors.
    pub async fn write<C: ConnectionLike>(
        &self,
        conn: &mut C,
        token: i64,
        data_key: &str,
        value: impl redis::ToRedisArgs,
    ) -> Result<bool> {
        let r: i64 = FENCED_WRITE
            .key(&self.token_key)
            .key(data_key)
            .arg(token)
            .arg(value)
            .invoke_async(conn)
            .await?;
        Ok(r == 1)
    }

    /// The newest admitted token, `None` before the first.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn newest<C: ConnectionLike>(&self, conn: &mut C) -> Result<Option<i64>> {
        Ok(redis::cmd("GET")
            .arg(&self.token_key)
            .query_async(conn)
            .await?)
    }
}

/// The fencing check for a resource in this process: remembers the newest admitted token.
///
/// # Examples
/// ```
/// use locksmith_lock::TokenFence;
///
/// let fence = TokenFence::new();
/// assert_eq!(fence.write_with(7, || "written with 7"), Some("written with 7"));
/// assert_eq!(fence.write_with(5, || "written with 5"), None); // stale: not run
/// assert!(fence.admit(7));
/// assert_eq!(fence.newest(), Some(7));
/// ```
#[derive(Debug, Default)]
pub struct TokenFence {
    // std Mutex: held only around the check and the caller's synchronous write.
    newest: Mutex<Option<i64>>,
}

impl TokenFence {
    /// A fence that has admitted nothing yet.
    pub fn new() -> Self {
        TokenFence::default()
    }

    /// Admits `token` if it is at least the newest admitted one, and records it.
    pub fn admit(&self, token: i64) -> bool {
        self.write_with(token, || ()).is_some()
    }

    /// Runs `write` if `token` is admitted, with the check, the record and the write under one
    /// lock (so a stale writer cannot slip in between); `None` (and `write` not run) when the
    /// token is stale.
    pub fn write_with<T>(&self, token: i64, write: impl FnOnce() -> T) -> Option<T> {
        let mut newest = self.newest.lock().unwrap_or_else(|p| p.into_inner());
        if newest.is_some_and(|n| token < n) {
            return None;
        }
        *newest = Some(token);
        Some(write())
    }

    /// The newest admitted token.
    pub fn newest(&self) -> Option<i64> {
        *self.newest.lock().unwrap_or_else(|p| p.into_inner())
    }
}
