//! What the operating system and the allocator say about this process's memory, for `INFO
//! memory` and `MEMORY STATS` beside the keyspace's own estimate (`used_memory`): the resident
//! set size (`used_memory_rss`), the machine's memory (`total_system_memory`) and the
//! allocator's name (`mem_allocator`), which the binary sets ([`set_allocator_name`]) since the
//! library does not choose the allocator.

use std::sync::OnceLock;

static ALLOCATOR: OnceLock<&'static str> = OnceLock::new();

/// Names the process's allocator for `INFO`'s `mem_allocator` (`mimalloc-3.3.2`); once per
/// process, later calls are ignored. Without it the library reports `libc`.
pub fn set_allocator_name(name: &'static str) {
    let _ = ALLOCATOR.set(name);
}

/// The allocator's name, `libc` unless the binary named another.
pub(crate) fn allocator_name() -> &'static str {
    ALLOCATOR.get().copied().unwrap_or("libc")
}

/// The process's resident set size in bytes (`VmRSS`, Linux), as Redis's `zmalloc_get_rss`.
pub(crate) fn rss() -> Option<u64> {
    proc_kib("/proc/self/status", "VmRSS:")
}

/// The machine's memory in bytes (`MemTotal`, Linux), as Redis's `zmalloc_get_memory_size`.
pub(crate) fn total_system_memory() -> Option<u64> {
    proc_kib("/proc/meminfo", "MemTotal:")
}

/// The `field` line of a `/proc` file that counts in kB, in bytes.
fn proc_kib(path: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix(field))?;
    let kib: u64 = line.split_whitespace().next()?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_and_the_machine_report_their_memory() {
        if cfg!(target_os = "linux") {
            let rss = rss().expect("VmRSS");
            let total = total_system_memory().expect("MemTotal");
            assert!(rss > 0 && rss < total, "rss {rss}, total {total}");
        }
        assert_eq!(proc_kib("/nonexistent", "VmRSS:"), None);
    }
}
