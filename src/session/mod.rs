//! Interactive sessions: REPLs and proof assistants kept alive across calls (README
//! "Sessions").
//!
//! A manifest's `sessions` array declares kinds ([`kind`]); each kind gets the tools
//! `K_start`, `K_send`, `K_interrupt`, `K_stop` and `K_restart` (`tools.rs`, what they do in
//! `ops.rs`). A session's program runs through the process runner
//! ([`stdmcp::process::interactive`]) in its own process group, owned by a thread that lives
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
mod tool_parts;
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
pub fn confine(root: &Path, dir: &str) -> Result<PathBuf, Unconfined> {
    if dir.contains('\0') {
        return Err(Unconfined::Nul);
    }
    let joined = root.join(dir);
    let c = std::fs::canonicalize(&joined).map_err(|error| Unconfined::Unusable {
        dir: dir.to_owned(),
        error,
    })?;
    if !c.starts_with(root) {
        return Err(Unconfined::Outside {
            dir: dir.to_owned(),
            root: root.to_owned(),
        });
    }
    if !c.is_dir() {
        return Err(Unconfined::NotADirectory(c));
    }
    Ok(c)
}

/// Why a working directory asked for is not one [`confine`] gives.
#[derive(Debug)]
pub enum Unconfined {
    /// The name holds a NUL byte.
    Nul,
    /// It cannot be resolved (it does not exist, or is not searchable).
    Unusable {
        /// As asked.
        dir: String,
        /// Why.
        error: std::io::Error,
    },
    /// It resolves outside the root.
    Outside {
        /// As asked.
        dir: String,
        /// The root.
        root: PathBuf,
    },
    /// It resolves to this, which is not a directory.
    NotADirectory(PathBuf),
}

impl std::fmt::Display for Unconfined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unconfined::Nul => f.write_str("a working directory must not contain NUL"),
            Unconfined::Unusable { dir, error } => {
                write!(f, "cannot use working directory {dir:?}: {error}")
            }
            Unconfined::Outside { dir, root } => write!(
                f,
                "working directory {dir:?} is outside the root {}",
                root.display()
            ),
            Unconfined::NotADirectory(c) => write!(f, "{} is not a directory", c.display()),
        }
    }
}

impl std::error::Error for Unconfined {}
