//! A session kind's proof cursor as the manifest declares it (README "Proof files"): the
//! lexicon and block rules of its proof files, the placeholder, the inputs that drive the
//! program, and the patterns of an error and of a proved goal. Running it is `crate::cursor`.

use std::time::Duration;

use regex_lite::Regex;

/// A block comment's delimiters.
#[derive(Clone, Debug, PartialEq)]
pub struct Comment {
    /// What opens it.
    pub open: String,
    /// What closes it.
    pub close: String,
    /// Comments nest (SML, OCaml, Rocq: `(* (* *) *)` is one comment).
    pub nested: bool,
}

/// A string literal's delimiters and escape character.
#[derive(Clone, Debug, PartialEq)]
pub struct Quote {
    /// What opens it.
    pub open: String,
    /// What closes it.
    pub close: String,
    /// The character that makes the next one literal (`\` in SML); none in Rocq, where `""`
    /// inside a string is two strings back to back, which scans the same.
    pub escape: Option<char>,
}

/// The lexical rules of a proof file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lexicon {
    /// Block comments.
    pub comments: Vec<Comment>,
    /// Line comments: from the opener to the end of the line (Lean `--`).
    pub line_comments: Vec<String>,
    /// String literals.
    pub strings: Vec<Quote>,
}

/// One kind of block (HOL4 `Theorem … Proof … QED`, `Definition … Termination … End`).
#[derive(Clone, Debug)]
pub struct BlockRule {
    /// Where a block starts; its `name` group names it.
    pub start: Regex,
    /// Where its proof starts (the part a placeholder or a proof replaces), if it has one.
    pub proof: Option<Regex>,
    /// Where it ends (the match is the block's last text).
    pub end: Regex,
    /// The cursor can enter its statement as a goal.
    pub goal: bool,
    /// The proof part of a block proved by the steps, `{proof}` replaced by them.
    pub template: String,
    /// The proof part of a block whose proof is left to later (`cheat`, `Admitted.`).
    pub admit: String,
    /// The block ends where the bracket its start opened closes (`store_thm (…)`); `end`
    /// then only extends it when it matches right there (`;`), and what follows the
    /// bracket is kept when its proof is written.
    pub close: bool,
    /// The input that enters its goal, if not the cursor's `enter`.
    pub enter: Option<String>,
    /// What of the statement text `{statement}` is: this pattern's group `statement` (a
    /// quotation's inside); none: the whole text, trimmed.
    pub statement: Option<Regex>,
}

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
    /// What ends one command in the text outside blocks (Rocq's sentence end, ML's `;`):
    /// each command is loaded, and a failure reported, on its own. None: the text between
    /// two blocks is one command.
    pub commands: Option<Regex>,
    /// Inputs that take back what an interrupted block left (`Reset {name}.`), sent before
    /// the next call loads it again; their errors are ignored. None: the program is
    /// restarted and the file loaded again.
    pub rollback: Vec<String>,
    /// The project a file belongs to, if the kind declares how to find one.
    pub project: Option<super::project::Project>,
    /// The names a file imports, and what loads them.
    pub imports: super::project::Imports,
    /// How a file's dependencies are built before it is loaded.
    pub build: Option<super::project::Build>,
    /// A call still loading after this long is answered with a job.
    pub background: Option<Duration>,
    /// Limit of one whole cursor call that loads blocks.
    pub timeout: Duration,
}

impl CursorSpec {
    /// The steps joined into one proof; a proof of one step is that step as typed (HOL4's
    /// `({step})` would only add brackets).
    pub fn join(&self, steps: &[String]) -> String {
        if let [one] = steps {
            return one.trim().to_owned();
        }
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
pub(crate) const TOOLS: &[&str] = &[
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
