//! Shrinking a failing schedule to a minimal one that still fails: drop faults, shorten
//! them, make them smaller, move them later (less of the run is under faults) — each step
//! kept only if the run (same seed, so the same client behaviour) still fails.

use crate::schedule::Schedule;

/// The smallest schedule this greedy search finds for which `fails` still holds, starting
/// from `schedule` (which must fail); faults are moved later only up to `horizon_ms`. At
/// most `budget` runs of `fails`.
pub fn shrink(
    schedule: &Schedule,
    horizon_ms: u64,
    budget: usize,
    mut fails: impl FnMut(&Schedule) -> bool,
) -> Schedule {
    let mut best = schedule.clone();
    let mut runs = 0usize;
    let mut attempt = |candidate: Schedule, best: &mut Schedule, runs: &mut usize| -> bool {
        if *runs >= budget || candidate == *best {
            return false;
        }
        *runs += 1;
        if fails(&candidate) {
            *best = candidate;
            true
        } else {
            false
        }
    };
    // 1. Drop faults, first the whole tail halves, then one at a time.
    let mut chunk = best.faults.len() / 2;
    while chunk >= 1 {
        let mut i = 0;
        while i < best.faults.len() {
            let mut faults = best.faults.clone();
            let end = (i + chunk).min(faults.len());
            faults.drain(i..end);
            if !attempt(Schedule::new(faults), &mut best, &mut runs) {
                i += chunk;
            }
        }
        chunk /= 2;
    }
    // 2. Shorten, shrink and delay each remaining fault while it still fails.
    for i in 0..best.faults.len() {
        for field in 0..3 {
            loop {
                let mut faults = best.faults.clone();
                let Some(f) = faults.get_mut(i) else { break };
                let changed = match field {
                    0 if f.duration_ms > 0 => {
                        f.duration_ms /= 2;
                        true
                    }
                    1 if f.amount_ms > 0 => {
                        f.amount_ms /= 2;
                        true
                    }
                    2 if f.at_ms + 1 < horizon_ms => {
                        f.at_ms += (horizon_ms - f.at_ms).div_ceil(2);
                        true
                    }
                    _ => false,
                };
                if !changed || !attempt(Schedule::new(faults), &mut best, &mut runs) {
                    break;
                }
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{Fault, FaultKind};

    fn fault(kind: FaultKind, at_ms: u64, duration_ms: u64) -> Fault {
        Fault {
            kind,
            node: 0,
            at_ms,
            duration_ms,
            amount_ms: 0,
        }
    }

    #[test]
    fn one_fault_that_matters_among_ten_is_what_remains() {
        let mut faults: Vec<Fault> = (0..10)
            .map(|i| fault(FaultKind::LinkLatency, 100 * i, 500))
            .collect();
        faults[6] = fault(FaultKind::Pause, 600, 4000);
        let schedule = Schedule::new(faults);
        // "Fails" while a pause of at least 1 s is in the schedule.
        let fails = |s: &Schedule| {
            s.faults
                .iter()
                .any(|f| f.kind == FaultKind::Pause && f.duration_ms >= 1000)
        };
        let minimal = shrink(&schedule, 10_000, 1000, fails);
        assert_eq!(minimal.faults.len(), 1, "{minimal}");
        let f = minimal.faults[0];
        assert_eq!(f.kind, FaultKind::Pause);
        // Shortened as far as it still fails, moved as late as the horizon allows.
        assert!(f.duration_ms >= 1000 && f.duration_ms < 2000, "{f}");
        assert!(f.at_ms > 9000 && f.at_ms <= 10_000, "{f}");
    }

    #[test]
    fn the_budget_bounds_the_runs() {
        let schedule = Schedule::new((0..10).map(|i| fault(FaultKind::Pause, i, 10)).collect());
        let mut runs = 0;
        // Nothing smaller fails: every candidate is tried until the budget runs out.
        let minimal = shrink(&schedule, 10_000, 5, |_| {
            runs += 1;
            false
        });
        assert_eq!(minimal, schedule);
        assert_eq!(runs, 5);
    }
}
