//! The CPU time the operating system counts for this process and its main thread
//! (`getrusage`), for `INFO cpu` and Valkey's `os.clock` in scripts.

/// Whose CPU time [`cpu_seconds`] reads.
#[derive(Clone, Copy)]
pub(crate) enum CpuOf {
    /// The whole process (`used_cpu_user`, `used_cpu_sys`).
    Process,
    /// The calling thread, the one serving the connections and running the commands
    /// (`used_cpu_user_main_thread`, `used_cpu_sys_main_thread`; Linux only).
    Thread,
}

/// User and system CPU seconds, as Redis reads them (`getrusage`, microseconds); `None` if the
/// system does not tell.
#[allow(unsafe_code)]
pub(crate) fn cpu_seconds(of: CpuOf) -> Option<(f64, f64)> {
    #[cfg(unix)]
    {
        let who = match of {
            CpuOf::Process => libc::RUSAGE_SELF,
            #[cfg(target_os = "linux")]
            CpuOf::Thread => libc::RUSAGE_THREAD,
            #[cfg(not(target_os = "linux"))]
            CpuOf::Thread => return None,
        };
        // SAFETY: `rusage` is plain data (all-zero bytes are a valid value); getrusage only
        // writes into the struct it is given.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above; `usage` lives for the call.
        if unsafe { libc::getrusage(who, &mut usage) } != 0 {
            return None;
        }
        let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1_000_000.0;
        Some((seconds(usage.ru_utime), seconds(usage.ru_stime)))
    }
    #[cfg(not(unix))]
    {
        let _ = of;
        None
    }
}

/// The process's CPU seconds, user and system together: what C's `clock()` measures (Lua's
/// `os.clock`); 0 if the system does not tell.
pub(crate) fn process_clock() -> f64 {
    cpu_seconds(CpuOf::Process).map_or(0.0, |(user, sys)| user + sys)
}
