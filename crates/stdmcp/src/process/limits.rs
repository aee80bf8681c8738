//! Resource limits applied in the child between fork and exec: `setrlimit` and niceness.

use std::fmt;
use std::io;

/// Resource limits of one child (and everything it starts: they are inherited).
/// `None` leaves the server's own limit in place.
/// Build one from [`Limits::default`] (no limit) and set the fields wanted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Address space in MiB (`RLIMIT_AS`): allocations beyond it fail.
    pub max_memory_mb: Option<u64>,
    /// CPU seconds (`RLIMIT_CPU`): SIGXCPU when used up, SIGKILL a second later.
    pub cpu_seconds: Option<u64>,
    /// Largest file the child may write, in MiB (`RLIMIT_FSIZE`): SIGXFSZ beyond it.
    pub max_file_size_mb: Option<u64>,
    /// Niceness 0-19 (`setpriority`): higher runs at lower priority. A server that already
    /// runs nicer than this keeps its own niceness for the child.
    pub nice: Option<i32>,
}

impl Limits {
    /// With an address-space limit of `mb` MiB.
    pub fn with_max_memory_mb(mut self, mb: u64) -> Limits {
        self.max_memory_mb = Some(mb);
        self
    }

    /// With a CPU-time limit of `s` seconds.
    pub fn with_cpu_seconds(mut self, s: u64) -> Limits {
        self.cpu_seconds = Some(s);
        self
    }

    /// With a largest file of `mb` MiB.
    pub fn with_max_file_size_mb(mut self, mb: u64) -> Limits {
        self.max_file_size_mb = Some(mb);
        self
    }

    /// With niceness `n` (0-19).
    pub fn with_nice(mut self, n: i32) -> Limits {
        self.nice = Some(n);
        self
    }

    /// Each limit of `self`, or `base`'s where `self` sets none.
    pub fn or(self, base: Limits) -> Limits {
        Limits {
            max_memory_mb: self.max_memory_mb.or(base.max_memory_mb),
            cpu_seconds: self.cpu_seconds.or(base.cpu_seconds),
            max_file_size_mb: self.max_file_size_mb.or(base.max_file_size_mb),
            nice: self.nice.or(base.nice),
        }
    }

    /// True when no limit is set.
    pub fn is_empty(&self) -> bool {
        *self == Limits::default()
    }

    /// In the forked child: apply the limits. Only async-signal-safe calls (getrlimit,
    /// setrlimit, setpriority); no allocation. A limit above the inherited hard limit is
    /// lowered to it (an unprivileged process cannot raise a hard limit).
    #[allow(unsafe_code)]
    pub(super) fn apply(&self) -> io::Result<()> {
        const MIB: u64 = 1024 * 1024;
        if let Some(mb) = self.max_memory_mb {
            set(libc::RLIMIT_AS, mb.saturating_mul(MIB), 0)?;
        }
        if let Some(s) = self.cpu_seconds {
            // The hard limit a second later: SIGKILL if SIGXCPU is caught or ignored.
            set(libc::RLIMIT_CPU, s, 1)?;
        }
        if let Some(mb) = self.max_file_size_mb {
            set(libc::RLIMIT_FSIZE, mb.saturating_mul(MIB), 0)?;
        }
        if let Some(n) = self.nice {
            // SAFETY: setpriority with integer arguments only.
            if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, n) } != 0 {
                let err = io::Error::last_os_error();
                // EACCES: the server already runs nicer than `n` and may not lower its
                // niceness; the child keeps the (lower) priority it inherited.
                if err.raw_os_error() != Some(libc::EACCES) {
                    return Err(err);
                }
            }
        }
        Ok(())
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
type RlimitResource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type RlimitResource = libc::c_int;

/// Soft limit `soft`, hard limit `soft + extra`, both capped at the current hard limit.
#[allow(unsafe_code)]
fn set(resource: RlimitResource, soft: u64, extra: u64) -> io::Result<()> {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit struct we own.
    if unsafe { libc::getrlimit(resource, &mut old) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let cap = |v: u64| (v as libc::rlim_t).min(old.rlim_max);
    let new = libc::rlimit {
        rlim_cur: cap(soft),
        rlim_max: cap(soft.saturating_add(extra)),
    };
    // SAFETY: setrlimit reads one rlimit struct we own.
    if unsafe { libc::setrlimit(resource, &new) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl fmt::Display for Limits {
    /// `memory 512 MiB, CPU 60 s, file size 100 MiB, nice 10`, or `none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(m) = self.max_memory_mb {
            parts.push(format!("memory {m} MiB"));
        }
        if let Some(s) = self.cpu_seconds {
            parts.push(format!("CPU {s} s"));
        }
        if let Some(m) = self.max_file_size_mb {
            parts.push(format!("file size {m} MiB"));
        }
        if let Some(n) = self.nice {
            parts.push(format!("nice {n}"));
        }
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn or_and_display() {
        let base = Limits {
            max_memory_mb: Some(512),
            nice: Some(5),
            ..Limits::default()
        };
        let own = Limits {
            nice: Some(10),
            cpu_seconds: Some(3),
            ..Limits::default()
        };
        let l = own.or(base);
        assert_eq!(l.to_string(), "memory 512 MiB, CPU 3 s, nice 10");
        assert_eq!(Limits::default().to_string(), "none");
        assert!(Limits::default().is_empty() && !l.is_empty());
    }
}
