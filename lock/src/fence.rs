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

/// Compare-and-set of the highest token seen, with its holder. KEYS: token key (, data key).
/// ARGV: token, holder (empty: unnamed) (, value). The token key holds `token` or
/// `token:holder`. Admits (returns 1, records the token and holder, and with a data key sets
/// it to the value) when the token is newer than the newest recorded, or equal to it and from
/// the same holder; else returns 0 and changes nothing.
const FENCED_WRITE_SRC: &str = "local cur = redis.call('get', KEYS[1]) \
local newest, holder = -1, '' \
if cur then \
local t, h = string.match(cur, '^(%-?%d+):?(.*)$') \
newest = tonumber(t) or -1 \
holder = h or '' \
end \
local token = tonumber(ARGV[1]) \
if token < newest or (token == newest and holder ~= ARGV[2]) then return 0 end \
if ARGV[2] == '' then redis.call('set', KEYS[1], ARGV[1]) \
else redis.call('set', KEYS[1], ARGV[1] .. ':' .. ARGV[2]) end \
if KEYS[2] ~= nil then redis.call('set', KEYS[2], ARGV[3]) end \
return 1";

static FENCED_WRITE: std::sync::LazyLock<redis::Script> =
    std::sync::LazyLock::new(|| redis::Script::new(FENCED_WRITE_SRC));

/// A fencing check on a resource kept in Redis: the newest admitted token (and the holder that
/// wrote with it) lives in the key `token_key`.
///
/// Older tokens are refused. A token equal to the newest is admitted only from the holder that
/// wrote with it ([`admit_as`](Self::admit_as), [`write_as`](Self::write_as) with the lock's
/// [`owner_field`](crate::FencedLock::owner_field)): after a failover without `WAIT` two
/// holders can be handed the same token, and the second must not overwrite the first. The
/// forms without a holder cannot tell holders apart and admit an equal token.
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
        self.admit_as(conn, token, "").await
    }

    /// [`admit`](Self::admit) for `holder` (the fenced lock's owner field): a token equal to
    /// the newest is admitted only when the same holder wrote with it.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn admit_as<C: ConnectionLike>(
        &self,
        conn: &mut C,
        token: i64,
        holder: &str,
    ) -> Result<bool> {
        let r: i64 = FENCED_WRITE
            .key(&self.token_key)
            .arg(token)
            .arg(holder)
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
        self.write_as(conn, token, "", data_key, value).await
    }

    /// [`write`](Self::write) for `holder` (the fenced lock's owner field): a token equal to
    /// the newest is admitted only when the same holder wrote with it.
    ///
    /// # Errors
    /// Redis errors.
    pub async fn write_as<C: ConnectionLike>(
        &self,
        conn: &mut C,
        token: i64,
        holder: &str,
        data_key: &str,
        value: impl redis::ToRedisArgs,
    ) -> Result<bool> {
        let r: i64 = FENCED_WRITE
            .key(&self.token_key)
            .key(data_key)
            .arg(token)
            .arg(holder)
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
        let v: Option<String> = redis::cmd("GET")
            .arg(&self.token_key)
            .query_async(conn)
            .await?;
        // `token` or `token:holder`.
        match v {
            None => Ok(None),
            Some(v) => {
                let token = v.split(':').next().unwrap_or_default();
                token
                    .parse()
                    .map(Some)
                    .map_err(|_| crate::error::LockError::unexpected("fencing gate token", v))
            }
        }
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
