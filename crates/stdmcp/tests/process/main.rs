//! Drives `process::run` against real processes (Linux: uses /proc). A test binary of its
//! own: the runner runs in this process, which it makes a child subreaper (strays of other
//! tests' servers would be reparented to it), and a test opens a descriptor without
//! `O_CLOEXEC` that other tests' children would inherit.
//!
//! By subject: stopping a run (`cancel`), what a run leaves behind (`leftovers`), its streams
//! and status (`streams`), what its program starts with (`start`), resource limits
//! (`limits`) and the watchdog (`watchdog`); the specs and programs they run (`runs`) and
//! what they read of processes (`procs`).
#![cfg(target_os = "linux")]
#![allow(unsafe_code, clippy::unwrap_used)] // FFI to send signals and to open an fd without O_CLOEXEC
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

#[path = "../support/mod.rs"]
mod support;

mod procs;
mod runs;

mod cancel;
mod leftovers;
mod limits;
mod start;
mod streams;
mod watchdog;
