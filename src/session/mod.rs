//! Interactive sessions: REPLs and proof assistants kept alive across calls (README
//! "Sessions").
//!
//! A manifest's `sessions` array declares kinds ([`kind`]); each kind gets the tools
//! `K_start`, `K_send`, `K_interrupt`, `K_stop` and `K_restart` (`tools.rs`, what they do in
//! `ops.rs`). A session's program runs through the process runner
//! ([`crate::process::interactive`]) in its own process group, owned by a thread that lives
//! as long as it (`child.rs`). One input at a time: a send waits for its turn
//! (`registry.rs`, which also stops idle sessions), writes the input, and waits until the
//! answer ends by the kind's rule ([`answer`], `exchange.rs`); cancellation and deadlines
//! interrupt the program and resynchronise, so the session survives them. An answer longer
//! than its cap is kept whole in the output spool (`spill.rs`). A kind's start parameters
//! (`params`) are checked as a tool's arguments and give its program's argv and environment
//! ([`kind::Launch`]).

pub mod answer;
mod child;
pub mod cursor;
mod exchange;
mod feed;
pub mod kind;
mod ops;
mod registry;
mod spill;
mod tools;

use std::path::{Path, PathBuf};

pub use kind::SessionKind;
pub use tools::register;

/// The tool names of kind `name` (with its cursor's when it has one).
pub fn tool_names(name: &str, cursor: bool) -> Vec<String> {
    let extra = if cursor { cursor::TOOLS } else { &[] };
    ["start", "send", "interrupt", "stop", "restart"]
        .iter()
        .chain(extra)
        .map(|s| format!("{name}_{s}"))
        .chain(std::iter::once("sessions".to_owned()))
        .collect()
}

/// `dir` (relative to `root`) as a canonical directory inside `root`.
pub fn confine(root: &Path, dir: &str) -> Result<PathBuf, String> {
    if dir.contains('\0') {
        return Err("a working directory must not contain NUL".into());
    }
    let joined = root.join(dir);
    let c = std::fs::canonicalize(&joined)
        .map_err(|e| format!("cannot use working directory {dir:?}: {e}"))?;
    if !c.starts_with(root) {
        return Err(format!(
            "working directory {dir:?} is outside the root {}",
            root.display()
        ));
    }
    if !c.is_dir() {
        return Err(format!("{} is not a directory", c.display()));
    }
    Ok(c)
}
