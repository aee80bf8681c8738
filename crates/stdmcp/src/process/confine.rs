//! Kernel-enforced confinement of a started program with Landlock (Linux 5.13 and later): what
//! the program and everything it starts may read, write, execute and connect to, enforced by
//! the kernel on every `open`, `execve`, `connect` and `kill`, whatever paths the program
//! follows or is handed later.
//!
//! A [`Confinement`] says what a program may reach beyond the system's own directories; the
//! runner builds its ruleset in the parent before the spawn (the descriptors of the places and
//! the ruleset's, all close-on-exec) and applies it to the child before it runs a single
//! instruction of the program:
//!
//! * started with `fork` (resource limits, sessions, no watchdog): between fork and exec, where
//!   the hook only calls `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self` on the
//!   ruleset's descriptor (both async-signal-safe system calls);
//! * started with `posix_spawn` (no code runs between fork and exec): by a short-lived thread,
//!   `stdmcp-confine`, which restricts itself and then spawns, so that the child inherits the
//!   domain from the thread that made it; the thread ends at once, and the server's other
//!   threads were never restricted (a Landlock domain belongs to the thread that enters it).
//!
//! What each program may do ([`SYSTEM_READ_EXEC`], [`SYSTEM_READ`], [`DEVICES`] and the
//! spec's places):
//!
//! | where | rights |
//! |---|---|
//! | [`SYSTEM_READ_EXEC`], the program's own directory, [`Confinement::read_exec`] | read files, list directories, execute |
//! | [`SYSTEM_READ`] (`/proc`, `/sys`), [`Confinement::read`] | read files, list directories |
//! | [`DEVICES`] (`/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom`) | read and write, `ioctl` |
//! | [`Confinement::write`], the held places of [`Confinement::write_held`], the run's private `TMPDIR` | every file-system right (create, remove, rename, link, truncate, execute…) |
//! | TCP (ABI 4) | no `connect` nor `bind` unless [`Network::Any`], or only the ports of [`Network::Ports`] |
//! | signals and abstract Unix sockets (ABI 6) | only to processes of the same run (its own domain) |
//!
//! Anything else is refused by the kernel (`EACCES`, `EPERM` for a signal). What Landlock does
//! not cover is in the README ("Security model"): UDP and other protocols, Unix sockets
//! named by a path, files readable in the system directories.
//!
//! The kernel's Landlock ABI decides what can be enforced ([`kernel`]); the rules never ask
//! for more than ABI 6, the newest this code was written and tested against. Each run's
//! [`Report`] says what was enforced, and [`Mode::Require`] refuses to start a program whose
//! rules the kernel cannot enforce in full. `STDMCP_LANDLOCK_ABI=N` makes the server act as on
//! a kernel of ABI `N` (at most the real one; `0`: no Landlock), to test the degraded paths.

use std::fmt;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// Directories every confined program may read and execute from: the system's programs,
/// libraries and configuration (those that exist).
pub const SYSTEM_READ_EXEC: [&str; 10] = [
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
];

/// Directories every confined program may read (not execute from): the kernel's views of
/// processes and devices, which many programs consult (CPU count, memory, their own
/// executable). Other processes' secrets there (`/proc/PID/environ`, `mem`) stay closed:
/// Landlock forbids ptrace-like access to processes outside the program's own domain.
pub const SYSTEM_READ: [&str; 2] = ["/proc", "/sys"];

/// Devices every confined program may read and write (none is a terminal).
pub const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The newest Landlock ABI the rules use (Linux 6.12: signal and abstract socket scoping).
pub const NEWEST_ABI: u32 = 6;

/// Whether and how strictly a program is confined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Not confined: the program runs with the user's rights (as without Landlock).
    Off,
    /// Confined as far as the kernel can: what it cannot enforce is said in the run's
    /// [`Report`] and in the log, never dropped silently.
    #[default]
    On,
    /// Confined in full, or not started at all.
    Require,
}

impl Mode {
    /// `off`, `on`, `require`: the manifest's words.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::On => "on",
            Mode::Require => "require",
        }
    }
}

/// What TCP a confined program may use (Landlock ABI 4).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Network {
    /// No TCP `connect` or `bind` at all.
    #[default]
    Denied,
    /// TCP is not restricted.
    Any,
    /// `connect` and `bind` only on these TCP ports.
    Ports(Vec<u16>),
}

/// What one program may reach beyond the system's directories (see the module docs for the
/// rights of each): start from [`Confinement::new`] and fill in the places.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Confinement {
    /// Off, best effort, or required.
    pub mode: Mode,
    /// Read and execute (trees a program runs from: a HOL4 build, a library).
    pub read_exec: Vec<PathBuf>,
    /// Read only (roots, a working directory).
    pub read: Vec<PathBuf>,
    /// Read, write, create, remove (writable roots).
    pub write: Vec<PathBuf>,
    /// Places opened by the caller (beneath a root, so that a name swapped since the check
    /// changes nothing), writable as [`Confinement::write`]: a directory and what is beneath
    /// it, or a single file.
    pub write_held: Vec<Arc<OwnedFd>>,
    /// TCP.
    pub network: Network,
    /// Give the program a `TMPDIR` of its own (inside the server's private directory), made
    /// before it starts (or left empty by an earlier run) and removed with its contents after
    /// its end (kept for the next run when still empty): the only temporary directory it may
    /// write in.
    pub private_tmp: bool,
}

impl Confinement {
    /// A confinement in `mode` with no place beyond the system's, no network, and a private
    /// `TMPDIR`.
    pub fn new(mode: Mode) -> Confinement {
        Confinement {
            mode,
            private_tmp: true,
            ..Confinement::default()
        }
    }

    /// The parts of confinement these rules ask the kernel for.
    pub fn asked(&self) -> Vec<Part> {
        let mut parts = vec![Part::Filesystem, Part::Truncate, Part::DeviceIoctl];
        if self.network != Network::Any {
            parts.push(Part::Network);
        }
        parts.extend([Part::Signals, Part::AbstractUnixSockets]);
        parts
    }
}

/// A part of confinement, enforced from a Landlock ABI on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    /// Reading, writing and executing files and directories (ABI 1).
    Filesystem,
    /// Truncating files (ABI 3: before it, a file that may be read may be truncated).
    Truncate,
    /// `ioctl` on devices (ABI 5).
    DeviceIoctl,
    /// TCP connect and bind (ABI 4).
    Network,
    /// Signals to processes outside the program's own (ABI 6).
    Signals,
    /// Abstract Unix sockets made outside the program's own (ABI 6).
    AbstractUnixSockets,
}

impl Part {
    /// The ABI from which the kernel enforces it.
    pub fn abi(self) -> u32 {
        match self {
            Part::Filesystem => 1,
            Part::Truncate => 3,
            Part::Network => 4,
            Part::DeviceIoctl => 5,
            Part::Signals | Part::AbstractUnixSockets => 6,
        }
    }

    /// Its name in results (`structuredContent.notConfined`).
    pub fn name(self) -> &'static str {
        match self {
            Part::Filesystem => "filesystem",
            Part::Truncate => "truncate",
            Part::DeviceIoctl => "ioctl",
            Part::Network => "network",
            Part::Signals => "signals",
            Part::AbstractUnixSockets => "abstractUnixSockets",
        }
    }
}

/// What the kernel enforced for one started program.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// The mode the program was started in.
    pub mode: Mode,
    /// The Landlock ABI its rules were built for (0: none).
    pub abi: u32,
    /// The parts its rules ask for that were not enforced (empty: confined in full).
    pub missing: Vec<Part>,
    /// Why confinement was not applied, when something other than the kernel's ABI stopped
    /// it (a ruleset that could not be built).
    pub problem: Option<String>,
}

impl Report {
    /// Everything the rules ask for was enforced.
    pub fn confined(&self) -> bool {
        self.mode != Mode::Off && self.missing.is_empty()
    }

    /// The report of a program started with `c`'s rules on a kernel of ABI `abi`.
    pub(super) fn of(c: &Confinement, abi: u32) -> Report {
        let asked = c.asked();
        let missing = match c.mode {
            Mode::Off => asked,
            _ => asked.into_iter().filter(|p| p.abi() > abi).collect(),
        };
        Report {
            mode: c.mode,
            abi: if c.mode == Mode::Off { 0 } else { abi },
            missing,
            problem: None,
        }
    }

    /// The sentence a refused `require` says: what is missing, and why.
    pub fn shortfall(&self) -> String {
        let names: Vec<&str> = self.missing.iter().map(|p| p.name()).collect();
        match &self.problem {
            Some(p) => format!("its confinement could not be built ({p})"),
            None if self.abi == 0 => format!(
                "this kernel has no Landlock ({}), so nothing of it can be enforced",
                kernel().describe()
            ),
            None => format!(
                "this kernel's Landlock (ABI {}) cannot enforce {}",
                self.abi,
                names.join(", ")
            ),
        }
    }
}

/// The kernel's Landlock, as the runner uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The ABI the kernel offers (0: no Landlock: not built in, or not enabled at boot).
    pub real: u32,
    /// The ABI the rules are built for: the kernel's, at most [`NEWEST_ABI`], lowered by
    /// `STDMCP_LANDLOCK_ABI`.
    pub used: u32,
    /// `STDMCP_LANDLOCK_ABI` lowered it.
    pub simulated: bool,
}

impl Kernel {
    /// What can be enforced, in a sentence: `Landlock ABI 6 (kernel ABI 7): filesystem, TCP,
    /// signals and abstract Unix sockets`.
    pub fn describe(&self) -> String {
        let mut s = match (self.used, self.simulated) {
            (0, true) => "no Landlock (STDMCP_LANDLOCK_ABI=0 simulates a kernel without it)".into(),
            (0, false) => "no Landlock in this kernel (not built in or not enabled at boot)".into(),
            (n, true) => format!(
                "Landlock ABI {n} (simulated with STDMCP_LANDLOCK_ABI; the kernel has {})",
                self.real
            ),
            (n, false) if n == self.real => format!("Landlock ABI {n}"),
            (n, false) => format!("Landlock ABI {n} (the kernel's is {})", self.real),
        };
        if self.used > 0 {
            let all = Confinement::new(Mode::On).asked();
            let (on, off): (Vec<Part>, Vec<Part>) = all.iter().partition(|p| p.abi() <= self.used);
            let names = |v: &[Part]| v.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ");
            s.push_str(&format!(": enforces {}", names(&on)));
            if !off.is_empty() {
                s.push_str(&format!("; cannot enforce {}", names(&off)));
            }
        }
        s
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// The kernel's Landlock, looked at once; the first look logs what it can enforce (a warning
/// when it cannot enforce everything).
pub fn kernel() -> Kernel {
    static KERNEL: OnceLock<Kernel> = OnceLock::new();
    *KERNEL.get_or_init(|| {
        let real = kernel_abi();
        let asked = std::env::var("STDMCP_LANDLOCK_ABI")
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok());
        let used = real.min(NEWEST_ABI).min(asked.unwrap_or(u32::MAX));
        let k = Kernel {
            real,
            used,
            simulated: asked.is_some_and(|a| a < real.min(NEWEST_ABI)),
        };
        if k.used < NEWEST_ABI {
            log::warn!("confinement: {k}; programs run with what it enforces (results say `confined: false` and what is not enforced), and tools with `confine: require` are refused");
        } else {
            log::info!("confinement: {k}");
        }
        k
    })
}

/// The Landlock ABI of the running kernel (0: none).
#[allow(unsafe_code)]
fn kernel_abi() -> u32 {
    #[cfg(target_os = "linux")]
    {
        // LANDLOCK_CREATE_RULESET_VERSION: with no attribute, the call returns the ABI.
        const VERSION: u32 = 1;
        // SAFETY: a null attribute of size 0 with the VERSION flag reads and writes no memory.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                VERSION,
            )
        };
        u32::try_from(v).unwrap_or(0)
    }
    #[cfg(not(target_os = "linux"))]
    0
}
