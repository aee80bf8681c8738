//! `stdmcp serve` with manifests of command tools, through the real binary over pipes: what
//! runs and how it ends (`serve`), `stdmcp check`, missing programs, what the server says about
//! itself, calls queued behind `maxConcurrentCalls`, flow control to a slow reader, and long
//! runs (logs and the output spool, jobs, resource subscriptions).

#[path = "../common/mod.rs"]
mod common;

mod check;
mod flow;
mod honest_words;
mod jobs;
mod long_runs;
mod missing_programs;
mod queued_deadlines;
mod serve;
mod subscriptions;
