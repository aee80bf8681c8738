//! The proof cursor (README "Proof files") through `stdmcp serve`, with a real HOL4 and a real
//! coqtop.

#[path = "../common/mod.rs"]
mod common;

mod forms;
mod hol4;
mod projects;
mod rocq;
mod rocq_runs;
mod tools;
