//! The proof cursor of a session kind (README "Proof files"): a proof file cut into blocks
//! by the manifest's rules (`scan`, `outline`), loaded block by block into the kind's
//! session inside one turn (`engine`, through the session's [`crate::session::Link`]), a goal
//! entered and proved step by step, the recorded steps joined into a proof and written over
//! the placeholder (`splice`, through `file`), and the tools `K_cursor_*`, `K_state_at`,
//! `K_check` (`tools`, what they do in `ops` and `check`).
//!
//! Everything a proof assistant needs is data in [`CursorSpec`]: the lexicon, the block
//! rules, the placeholder, and the inputs that enter a goal, apply a step, undo, show the
//! goals, drop the proof; the patterns of an error and of a proved goal; how steps join.

mod attempt;
mod breaks;
mod build;
mod check;
mod engine;
mod env;
mod file;
mod input;
pub(crate) mod invariants;
mod ops;
mod outline;
mod project;
mod reply;
mod report;
mod scan;
mod search;
mod split;
mod state_at;
mod steps;
mod store;
mod tools;
mod trust;
mod write_proof;

pub(crate) use store::CursorStore;
pub(crate) use tools::tools;
