//! Redisson-compatible distributed locks (skeleton; filled in by the lock-library issue).
