//! Interactive sessions: REPLs and proof assistants kept alive across calls (README
//! "Sessions").
//!
//! A manifest's `sessions` array declares kinds (`crate::spec::session`); each kind gets the
//! tools `K_start`, `K_send`, `K_interrupt`, `K_stop` and `K_restart` (`tools.rs`, what they do
//! in `ops.rs`). A session's program runs through the process runner
//! ([`stdmcp::process::interactive`]) in its own process group, owned by a thread that lives
//! as long as it (`child.rs`). One input at a time: a send waits for its turn
//! (`registry.rs`, which also stops idle sessions), writes the input, and waits until the
//! answer ends by the kind's rule (`answer.rs`, `exchange.rs`); cancellation and deadlines
//! interrupt the program and resynchronise, so the session survives them. An answer longer
//! than its cap is kept whole in the output spool (`spill.rs`). A kind's start parameters
//! (`params`) are checked as a tool's arguments and give its program's argv and environment
//! (`launch.rs`).
//!
//! The proof cursor (`crate::cursor`) drives a session through one small API, exported here:
//! a [`Link`] takes the session's turn for a whole sequence of inputs (starting or restarting
//! its program in a directory), sends an input and reads its answer ([`Link::say`], which
//! interrupts the program on cancel or deadline), and restarts it; the tool parts
//! (`tool_parts.rs`) are shared by both kinds of tools.

mod answer;
mod child;
mod exchange;
mod feed;
mod launch;
mod ops;
mod registry;
mod spill;
mod tool_parts;
mod tools;
mod turn;

pub(crate) use exchange::{Caller, StopReason};
pub(crate) use launch::ProjectLaunch;
pub(crate) use ops::OpResult;
pub(crate) use registry::{Key, Registry};
pub(crate) use tool_parts::{annotations, name_of, object, reply, session_param, with_call};
pub(crate) use tools::{add_kind, finish, registry};
pub(crate) use turn::{Identity, Link, Said};
