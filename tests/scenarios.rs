//! The scenarios (one file per claim: lock x server x faults), one test binary: each shows
//! what really happens to a lock when Redis breaks, and writes its timeline.

mod support;

mod scenarios {
    mod lock_time_scenarios;
    mod paused_holder_overlaps_and_fencing_rejects_it;
    mod plain_lock_double_grants_after_failover;
    mod redlock_clock_jump_breaks_mutual_exclusion;
    mod redlock_restart_without_fsync_breaks_mutual_exclusion;
    mod redlock_survives_minority_loss;
    mod wait_synced_lock_survives_failover;
    mod watchdog_holder_loses_lock_when_node_restarts_empty;
}
