//! The proof cursor of a session kind (README "Proof files"): a proof file cut into blocks
//! by the manifest's rules (`scan`, `outline`), loaded block by block into the kind's
//! session inside one turn (`link`, `engine`), a goal entered and proved step by step, the
//! recorded steps joined into a proof and spliced over the placeholder (`file`), and the
//! tools `K_cursor_*`, `K_state_at`, `K_check` (`tools`, what they do in `actions`).
//!
//! Everything a proof assistant needs is data in [`CursorSpec`]: the lexicon, the block
//! rules, the placeholder, and the inputs that enter a goal, apply a step, undo, show the
//! goals, drop the proof; the patterns of an error and of a proved goal; how steps join.

mod actions;
mod check;
mod engine;
pub mod file;
mod link;
pub mod outline;
pub mod scan;
mod splice;
mod tools;

use std::time::Duration;

use regex_lite::Regex;

pub use actions::CursorStore;
pub use outline::BlockRule;
pub use scan::Lexicon;
pub use tools::tools;

/// How `K_state_at` turns a proof's text up to a line into steps.
#[derive(Clone, Debug)]
pub enum StateAt {
    /// The proof up to the end of the line is one step, after removing trailing text that
    /// matches `trim` (a dangling `>>` or `\\`): HOL4.
    Prefix {
        /// Trailing text removed from the prefix, anchored at its end.
        trim: Regex,
    },
    /// Each sentence ended by `end` (in code) before the end of the line is a step: Rocq.
    Sentences {
        /// What ends a sentence.
        end: Regex,
    },
}

/// A kind's proof cursor, as declared by the manifest's `cursor` object.
#[derive(Clone, Debug)]
pub struct CursorSpec {
    /// The cursor may write proofs into files (`write`).
    pub write: bool,
    /// Comments and strings of the files.
    pub lexicon: Lexicon,
    /// The kinds of blocks.
    pub rules: Vec<BlockRule>,
    /// What marks an unfinished proof (`cheat`, `Admitted.`), found in a block's proof part.
    pub placeholder: Regex,
    /// Input that enters a block's goal: `{name}`, `{statement}` (trimmed), `{header}` (the
    /// block up to and including its proof start).
    pub enter: String,
    /// Text a statement may not contain (it would end the quotation `enter` puts it in).
    pub statement_forbids: Vec<String>,
    /// Input that applies one step: `{tactic}`.
    pub step: String,
    /// A step must match this (Rocq: end with a period), else it is refused unsent: a step
    /// that leaves a sentence open would swallow the answer's end.
    pub step_pattern: Option<Regex>,
    /// Input that takes back the last step.
    pub undo: String,
    /// Input that shows the goals.
    pub goals: String,
    /// Input that drops every proof under way (harmless when there is none).
    pub drop: String,
    /// Text removed from every answer the cursor reads (coqtop's prompts on stderr).
    pub noise: Option<Regex>,
    /// An answer that matches is an error.
    pub error: Regex,
    /// An answer to a step that matches says the goal is proved.
    pub proved: Regex,
    /// Each step in a joined proof: `{step}`.
    pub join_step: String,
    /// Between two steps in a joined proof.
    pub join_separator: String,
    /// How `K_state_at` finds the steps up to a line.
    pub state_at: StateAt,
    /// A call still loading after this long is answered with a job.
    pub background: Option<Duration>,
    /// Limit of one whole cursor call that loads blocks.
    pub timeout: Duration,
}

impl CursorSpec {
    /// The steps joined into one proof.
    pub fn join(&self, steps: &[String]) -> String {
        steps
            .iter()
            .map(|s| self.join_step.replace("{step}", s.trim()))
            .collect::<Vec<_>>()
            .join(&self.join_separator)
    }

    /// The error in `answer`, if the error pattern matches: from the start of the line it
    /// matches in up to the next blank line, on one line, at most 300 characters (HOL4's
    /// `Exception-` is followed by the exception over several lines).
    pub fn error_line(&self, answer: &str) -> Option<String> {
        let m = self.error.find(answer)?;
        let start = answer[..m.start()].rfind('\n').map_or(0, |i| i + 1);
        let end = answer[m.start()..]
            .find("\n\n")
            .map_or(answer.len(), |i| m.start() + i);
        let words: Vec<&str> = answer[start..end].split_whitespace().collect();
        let mut line = words.join(" ");
        if let Some((cut, _)) = line.char_indices().nth(300) {
            line.truncate(cut);
            line.push('…');
        }
        Some(line)
    }
}

/// The tool name suffixes a kind with a cursor adds.
pub const TOOLS: &[&str] = &[
    "cursor_init",
    "cursor_step",
    "cursor_undo",
    "cursor_complete",
    "cursor_goto",
    "cursor_reenter",
    "cursor_status",
    "state_at",
    "check",
];

/// What `stdmcp check` prints about a kind's cursor.
pub fn describe(kind: &crate::session::SessionKind, c: &CursorSpec) -> String {
    use std::fmt::Write;
    let k = &kind.name;
    let root = match &kind.workdir {
        crate::session::kind::Workdir::Param { root_name, .. } => root_name.as_str(),
        _ => "?",
    };
    let mut out = String::new();
    let tools: Vec<String> = TOOLS.iter().map(|t| format!("{k}_{t}")).collect();
    let _ = writeln!(out, "    cursor: tools {}", tools.join(", "));
    let _ = writeln!(
        out,
        "      files under root {root}, {}; placeholder /{}/",
        if c.write {
            "proofs written into them"
        } else {
            "read only (proofs returned, not written)"
        },
        pattern(&c.placeholder)
    );
    for r in &c.rules {
        let proof = r
            .proof
            .as_ref()
            .map_or_else(|| "none".to_owned(), |p| format!("/{}/", pattern(p)));
        let _ = writeln!(
            out,
            "      block /{}/ proof {proof} end /{}/{}",
            pattern(&r.start),
            pattern(&r.end),
            if r.goal { "" } else { " (not a goal)" }
        );
    }
    let _ = writeln!(
        out,
        "      enter {:?}, step {:?}, undo {:?}, goals {:?}, drop {:?}",
        c.enter, c.step, c.undo, c.goals, c.drop
    );
    let _ = writeln!(
        out,
        "      error /{}/, proved /{}/; steps join as {:?} separated by {:?}",
        pattern(&c.error),
        pattern(&c.proved),
        c.join_step,
        c.join_separator
    );
    let state_at = match &c.state_at {
        StateAt::Prefix { .. } => "the proof's prefix as one step",
        StateAt::Sentences { .. } => "the proof's sentences as steps",
    };
    let _ = writeln!(
        out,
        "      state_at: {state_at}; loads time out after {:.0} s{}",
        c.timeout.as_secs_f64(),
        c.background
            .map(|d| format!(", become jobs after {:.0} s", d.as_secs_f64()))
            .unwrap_or_default()
    );
    out
}

/// A pattern as the manifest wrote it (without the multi-line flag the loader adds).
fn pattern(r: &Regex) -> &str {
    r.as_str().trim_start_matches("(?m)")
}
