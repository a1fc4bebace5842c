//! The count-down latch's workload and its checks: clients count down (two counts each) and
//! wait for zero; a wait that ends open before every count was sent is unsafe, a wait refused
//! while the count had been zero for a think time is a lost wake-up, and at the end the count
//! must be what the acknowledged count-downs left.

use crate::checks::{in_window, longest_clear};
use crate::workload::{think, Round, Workload, COUNTS_PER_CLIENT, RESOURCE, RESPONSE_TIMEOUT_MS};
use locksmith_harness::LivenessIssue;
use locksmith_lock::Client;
use rand::rngs::StdRng;
use rand::Rng;
use std::time::Duration;
use tokio::time::Instant;

/// One latch call of a client (a plain data record).
#[derive(Debug, Clone)]
pub(crate) struct LatchOp {
    pub(crate) client: String,
    pub(crate) start_ms: u64,
    pub(crate) end_ms: u64,
    pub(crate) call: LatchCall,
}

/// What a latch call was and what it answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LatchCall {
    /// `count_down`: whether it answered `Ok`.
    CountDown { ok: bool },
    /// `wait_for`: whether it saw the latch open (`None`: an error).
    Wait { open: Option<bool> },
}

/// The latch's count at the start of a run.
pub(crate) fn initial_count(w: Workload) -> u64 {
    COUNTS_PER_CLIENT * w.clients as u64
}

/// Runs one latch client until `deadline`: a round counts down (while it has counts left, one
/// round in three) or waits up to the workload's wait for zero, then thinks.
pub(crate) async fn latch_rounds(
    round: &mut Round<'_>,
    client: &Client,
    rng: &mut StdRng,
    w: Workload,
    deadline: Instant,
) -> Vec<LatchOp> {
    let latch = client.count_down_latch(RESOURCE);
    let mut counts = COUNTS_PER_CLIENT;
    let mut ops = Vec::new();
    while Instant::now() < deadline {
        let start_ms = round.history.now_ms();
        let call = if counts > 0 && rng.random_ratio(1, 3) {
            counts -= 1;
            LatchCall::CountDown {
                ok: latch.count_down().await.is_ok(),
            }
        } else {
            LatchCall::Wait {
                open: latch.wait_for(Duration::from_millis(w.wait_ms)).await.ok(),
            }
        };
        ops.push(LatchOp {
            client: round.name.to_owned(),
            start_ms,
            end_ms: round.history.now_ms(),
            call,
        });
        think(rng, w).await;
    }
    ops
}

/// What the latch checks found: unsafe openings, liveness issues.
pub(crate) struct LatchFindings {
    pub(crate) early: Vec<String>,
    pub(crate) liveness: Vec<LivenessIssue>,
}

/// Checks the latch calls of a run against its fault windows (`windows`, every fault with its
/// grace): a wait that saw the latch open before the last count-down was sent (unsafe); a wait
/// refused although every count-down had been acknowledged a think time before its end, or
/// one that returned later than its wait plus a response timeout (outside faults).
pub(crate) fn check(ops: &[LatchOp], w: Workload, windows: &[(u64, u64)]) -> LatchFindings {
    let count = initial_count(w);
    let mut sent: Vec<u64> = ops
        .iter()
        .filter(|o| matches!(o.call, LatchCall::CountDown { .. }))
        .map(|o| o.start_ms)
        .collect();
    sent.sort_unstable();
    let mut acked: Vec<u64> = ops
        .iter()
        .filter(|o| o.call == LatchCall::CountDown { ok: true })
        .map(|o| o.end_ms)
        .collect();
    acked.sort_unstable();
    // When the count was known to be zero: the last acknowledged count-down of all of them.
    let zero_at = (acked.len() as u64 >= count)
        .then(|| acked.get(count as usize - 1).copied())
        .flatten();
    let mut early = Vec::new();
    let mut liveness = Vec::new();
    for o in ops {
        let LatchCall::Wait { open } = o.call else {
            continue;
        };
        if open == Some(true) {
            let before = sent.iter().filter(|&&t| t <= o.end_ms).count() as u64;
            if before < count {
                early.push(format!(
                    "{RESOURCE}: {}'s wait saw the latch open at {} ms after {before} of its {count} count-downs were sent",
                    o.client, o.end_ms
                ));
            }
        }
        if open == Some(false) {
            if let Some(zero) = zero_at {
                let from = zero.max(o.start_ms);
                if from < o.end_ms && longest_clear(from, o.end_ms, windows) >= w.think_ms {
                    liveness.push(LivenessIssue::LostWakeUp {
                        client: o.client.clone(),
                        resource: RESOURCE.to_owned(),
                        free_from_ms: from,
                        still_waiting_ms: o.end_ms,
                    });
                }
            }
        }
        if !in_window(windows, o.start_ms, o.end_ms)
            && o.end_ms.saturating_sub(o.start_ms) > w.wait_ms + RESPONSE_TIMEOUT_MS
        {
            liveness.push(LivenessIssue::WaitOverrun {
                client: o.client.clone(),
                resource: RESOURCE.to_owned(),
                from_ms: o.start_ms,
                to_ms: o.end_ms,
                wait_ms: w.wait_ms,
            });
        }
    }
    LatchFindings { early, liveness }
}

/// The count the acknowledged count-downs leave, and how many more the failed ones may have
/// taken off (a count-down whose reply was lost may have run).
pub(crate) fn expected_count(ops: &[LatchOp], w: Workload) -> (u64, u64) {
    let ok = ops
        .iter()
        .filter(|o| o.call == LatchCall::CountDown { ok: true })
        .count() as u64;
    let failed = ops
        .iter()
        .filter(|o| o.call == LatchCall::CountDown { ok: false })
        .count() as u64;
    (initial_count(w).saturating_sub(ok), failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LockKind;

    fn op(client: &str, start_ms: u64, end_ms: u64, call: LatchCall) -> LatchOp {
        LatchOp {
            client: client.into(),
            start_ms,
            end_ms,
            call,
        }
    }

    #[test]
    fn an_early_opening_and_a_refusal_after_zero_are_found() {
        let mut w = Workload::new(LockKind::CountDownLatch);
        w.clients = 1;
        let down = LatchCall::CountDown { ok: true };
        let ops = vec![
            op("c0", 0, 1, down),
            // Open after one of two count-downs: unsafe.
            op("c0", 5, 6, LatchCall::Wait { open: Some(true) }),
            op("c0", 10, 11, down),
            // Refused well after zero: a lost wake-up; refused just before: nothing.
            op("c0", 100, 2100, LatchCall::Wait { open: Some(false) }),
            op("c0", 0, 50, LatchCall::Wait { open: Some(false) }),
        ];
        let found = check(&ops, w, &[]);
        assert_eq!(found.early.len(), 1, "{:?}", found.early);
        assert_eq!(
            found.liveness,
            vec![LivenessIssue::LostWakeUp {
                client: "c0".into(),
                resource: RESOURCE.into(),
                free_from_ms: 100,
                still_waiting_ms: 2100,
            }]
        );
        // Inside a fault window neither the refusal nor an overrun counts.
        assert!(check(&ops, w, &[(0, 5000)]).liveness.is_empty());
        assert_eq!(expected_count(&ops, w), (0, 0));
    }
}
