//! Contention (`--busy`): the servers run on one CPU shared with a spinning neighbour.
//!
//! The driver moves itself to the other CPUs; each server (and each floor program) is
//! forked by a thread that is pinned to the busy CPU just for the spawn, so the child
//! inherits that CPU alone; the spinner (`mcp --spin`, a busy loop) is pinned there too. A
//! server's thread hand-offs then wait for the scheduler to take the CPU from the spinner,
//! which is where a busy user machine hurts most.
#![allow(clippy::disallowed_methods)] // the spinner is a bare control process

use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

/// The CPU the servers share with the spinner, once `--busy` set it up.
static BUSY_CPU: OnceLock<usize> = OnceLock::new();

/// CPU ids of an affinity list as `taskset` prints it (`0,1`, `0-3,6`).
pub(crate) fn parse_cpus(list: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let mut ends = part.splitn(2, '-').map(|n| n.trim().parse::<usize>());
        match (ends.next(), ends.next()) {
            (Some(Ok(a)), None) => out.push(a),
            (Some(Ok(a)), Some(Ok(b))) if a <= b => out.extend(a..=b),
            _ => {}
        }
    }
    out
}

/// This process's CPU affinity list as `taskset` prints it (`0,1`, `0-3`).
pub(crate) fn affinity() -> Option<String> {
    let out = std::process::Command::new("taskset")
        .args(["-cp", &std::process::id().to_string()])
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let list = text.rsplit(':').next()?.trim().to_owned();
    (out.status.success() && !list.is_empty()).then_some(list)
}

/// Sets the CPU affinity of every thread of this process (servers spawned later inherit it).
pub(crate) fn set_affinity(cpus: &str) -> bool {
    std::process::Command::new("taskset")
        .args(["-a", "-cp", cpus, &std::process::id().to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The calling thread's CPU set.
#[allow(unsafe_code)]
fn thread_affinity() -> Option<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain data (all zeroes is the empty set); sched_getaffinity
    // writes at most size_of::<cpu_set_t>() bytes into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let r = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
        (r == 0).then_some(set)
    }
}

#[allow(unsafe_code)]
fn set_thread_affinity(set: &libc::cpu_set_t) -> bool {
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) == 0 }
}

#[allow(unsafe_code)]
fn one_cpu(cpu: usize) -> libc::cpu_set_t {
    // SAFETY: as above, an all-zero cpu_set_t is the empty set; CPU_SET only sets a bit
    // (cpu < CPU_SETSIZE is checked by the caller's list, which came from the kernel).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        set
    }
}

/// Runs `spawn` on this thread pinned to the busy CPU (when `--busy` is on), so that the
/// process it forks starts there; the thread's own CPU set is restored afterwards.
pub(crate) fn spawn_pinned<T>(spawn: impl FnOnce() -> T) -> T {
    let Some(&cpu) = BUSY_CPU.get() else {
        return spawn();
    };
    let saved = thread_affinity();
    let pinned = set_thread_affinity(&one_cpu(cpu));
    let out = spawn();
    if pinned {
        if let Some(s) = saved {
            set_thread_affinity(&s);
        }
    }
    out
}

/// The spinning neighbour; killed and reaped when dropped.
pub(crate) struct Spinner {
    child: Child,
    pub cpu: usize,
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sets up contention: moves the driver off the last CPU of `all`, starts the spinner on it,
/// and from now on starts every server there (see [`spawn_pinned`]).
pub(crate) fn start(all: &str) -> Result<Spinner, String> {
    let cpus = parse_cpus(all);
    let &cpu = cpus.last().ok_or_else(|| format!("no CPU in {all:?}"))?;
    let rest: Vec<String> = cpus
        .iter()
        .filter(|&&c| c != cpu)
        .map(ToString::to_string)
        .collect();
    if !rest.is_empty() && !set_affinity(&rest.join(",")) {
        return Err(format!("cannot move the driver to CPUs {}", rest.join(",")));
    }
    BUSY_CPU
        .set(cpu)
        .map_err(|_| "contention was set up twice".to_owned())?;
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let child = spawn_pinned(|| {
        Command::new(exe)
            .args(["--spin", &std::process::id().to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
    })
    .map_err(|e| format!("cannot start the spinner: {e}"))?;
    Ok(Spinner { child, cpu })
}

/// `mcp --spin PID`: spins until killed, or until the driver (`PID`) dies (parent-death
/// signal; checked once after setting it, in case the driver died before).
#[allow(unsafe_code)]
pub(crate) fn spin(parent: Option<u32>) -> ! {
    // SAFETY: prctl(PR_SET_PDEATHSIG) and getppid only read or set this process's state.
    let ppid = unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        libc::getppid()
    };
    if parent != Some(ppid as u32) {
        std::process::exit(1);
    }
    let mut x: u64 = 0;
    loop {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}
