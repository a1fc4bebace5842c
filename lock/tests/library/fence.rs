//! The fencing helpers on the resource side: tokens from `FencedLock` acquisitions, a stale
//! holder's write refused by `FencingGate` (in Redis) and `TokenFence` (in process).

use crate::support;

use std::time::Duration;

use locksmith_lock::{FencingGate, LostReason, TokenFence};
use support::{backends, name};

#[tokio::test]
async fn a_stale_holders_write_is_refused_and_the_newer_one_stays() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("fence");
        let a = c.fenced_lock(&n);
        let other = c.fenced_lock(&n);
        let gate = FencingGate::new(format!("{n}:token"));
        let data = format!("{n}:data");
        let mut conn = c.connection();
        assert_eq!(gate.newest(&mut conn).await.unwrap(), None);

        // A holds with a short lease and "pauses" past it; B takes over with a newer token.
        let guard_a = a
            .acquire_with_lease(Duration::from_millis(200))
            .await
            .unwrap();
        let token_a = guard_a.token().unwrap();
        assert!(gate.write(&mut conn, token_a, &data, "a1").await.unwrap());
        let mut lost = guard_a.lost_signal().unwrap();
        assert_eq!(lost.lost().await, Some(LostReason::LeaseExpired));
        let guard_b = other
            .try_acquire_for(Duration::from_secs(5), None)
            .await
            .unwrap()
            .expect("free once A's lease ran out");
        let token_b = guard_b.token().unwrap();
        assert!(token_b > token_a);
        assert!(gate.write(&mut conn, token_b, &data, "b1").await.unwrap());
        // The same holder may write again; the stale one may not.
        assert!(gate.write(&mut conn, token_b, &data, "b2").await.unwrap());
        assert!(!gate.write(&mut conn, token_a, &data, "a2").await.unwrap());
        assert!(!gate.admit(&mut conn, token_a).await.unwrap());
        let stored: String = redis::cmd("GET")
            .arg(&data)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(stored, "b2", "{}", b.name);
        assert_eq!(gate.newest(&mut conn).await.unwrap(), Some(token_b));
        guard_b.unlock().await.unwrap();
        assert!(guard_a.unlock().await.unwrap_err().is_not_owner());

        // The in-process fence takes the same decisions.
        let fence = TokenFence::new();
        assert!(fence.admit(token_a));
        assert_eq!(fence.write_with(token_b, || "b"), Some("b"));
        assert_eq!(fence.write_with(token_a, || "a"), None);
        assert_eq!(fence.newest(), Some(token_b));
    }
}

// Issue 36, item 12: after a failover without WAIT two holders can be handed the same token;
// the gate admits a token equal to the newest only from the holder that wrote with it.
#[tokio::test]
async fn a_fencing_gate_admits_an_equal_token_only_from_its_holder() {
    for b in backends().await {
        let c = b.client().await;
        let n = name("fence-holder");
        let gate = FencingGate::new(format!("{n}:token"));
        let data = format!("{n}:data");
        let mut conn = c.connection();
        let (first, second) = (c.fenced_lock(&n), c.fenced_lock(&n));
        let (a, b_holder) = (first.owner_field(), second.owner_field());
        assert!(gate.write_as(&mut conn, 7, a, &data, "a1").await.unwrap());
        assert!(gate.write_as(&mut conn, 7, a, &data, "a2").await.unwrap());
        assert!(!gate
            .write_as(&mut conn, 7, b_holder, &data, "b")
            .await
            .unwrap());
        assert!(!gate.admit_as(&mut conn, 7, b_holder).await.unwrap());
        assert!(!gate.admit_as(&mut conn, 6, a).await.unwrap());
        assert_eq!(gate.newest(&mut conn).await.unwrap(), Some(7));
        let stored: String = redis::cmd("GET")
            .arg(&data)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(stored, "a2", "{}", b.name);
        assert!(gate
            .write_as(&mut conn, 8, b_holder, &data, "b1")
            .await
            .unwrap());
        assert_eq!(gate.newest(&mut conn).await.unwrap(), Some(8));
        // The forms without a holder read the same key.
        assert!(!gate.admit(&mut conn, 7).await.unwrap());
        assert!(gate.admit(&mut conn, 9).await.unwrap());
        assert!(gate.admit(&mut conn, 9).await.unwrap());
        assert_eq!(gate.newest(&mut conn).await.unwrap(), Some(9));
    }
}
