//! Fault schedules: the fault vocabulary, the one-line text form and the seeded generator live
//! in the harness ([`locksmith_harness::schedule`]), so `locksmith-harness --schedule` and
//! `--chaos` run the same schedules the explorer draws and replays; a run applies them with
//! [`locksmith_harness::schedule::apply`].

pub use locksmith_harness::schedule::{Fault, FaultClass, FaultKind, Schedule, ScheduleError};
