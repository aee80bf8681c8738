//! A cursor's state in one session and the sequences it runs there: load the file's
//! segments one by one (a failed block is reported and loaded again with its proof
//! replaced by the placeholder), enter a block's goal, replay recorded steps.

use super::input::{answer, enter_input, fill, Halt};
use super::outline::{with_proof, Block, Outline, Segment};
use crate::session::{Identity, Link};
use crate::spec::cursor::{CursorSpec, Lexicon};

/// A failed command or definition that a later block may fail because of.
#[derive(Clone, Debug)]
pub(super) struct Cause {
    /// `command` or `definition`.
    pub kind: &'static str,
    pub name: String,
    pub line: usize,
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} (line {})", self.kind, self.name, self.line)
    }
}

/// A block, or a command outside blocks, that failed to load.
#[derive(Clone, Debug)]
pub(super) struct Failure {
    /// The block's name, or the command's first line.
    pub name: String,
    /// A command outside blocks, not a block.
    pub command: bool,
    /// Later blocks may fail because of it: a command, or a block that defines rather than
    /// proves (a failed `Definition` leaves its constant unbound).
    pub cause: bool,
    /// The first such failure before it, when it is a block: it may fail only because of
    /// that one (a failed `Require` leaves later names unbound).
    pub after: Option<Cause>,
    pub lines: (usize, usize),
    /// The first line of the error.
    pub error: String,
    /// The answer around the error (the failing goal, when the program shows it).
    pub detail: String,
    /// It failed again with its proof replaced by the placeholder (so its name is unbound).
    pub admit_failed: bool,
    /// Where its proof breaks: the first step that fails, and the goals it faced.
    pub broken: Option<serde_json::Value>,
}

/// The cursor of one session.
#[derive(Clone, Debug, Default)]
pub(super) struct Cursor {
    /// The file, relative to the root.
    pub file: String,
    /// The file's text as last read (what the loaded prefix was loaded from).
    pub text: String,
    pub outline: Outline,
    /// Segments loaded into the program, from the first.
    pub loaded: usize,
    pub failed: Vec<Failure>,
    /// The program the state lives in.
    pub identity: Option<Identity>,
    /// The block whose goal is entered (a segment index).
    pub current: Option<usize>,
    /// The text of the current block when it was entered.
    pub current_text: String,
    /// Steps applied and accepted since the goal was entered.
    pub steps: Vec<String>,
    /// The last step proved the goal.
    pub proved: bool,
    /// A load that stopped early: what to say when the next call resumes it.
    pub resume: Option<String>,
    /// The segment a cancel or deadline interrupted while it loaded: what it left is taken
    /// back before the next call loads it again.
    pub interrupted: Option<usize>,
    /// The names loaded into the program for the imports of what it was given (each once).
    pub imported: std::collections::BTreeSet<String>,
}

impl Cursor {
    /// A cursor for `file` with text `text`, nothing loaded.
    pub(super) fn new(file: &str, text: String, spec: &CursorSpec) -> Cursor {
        let outline = Outline::of(&text, spec);
        Cursor {
            file: file.to_owned(),
            text,
            outline,
            ..Cursor::default()
        }
    }

    /// Forgets what was loaded (the program is fresh); the current theorem and its steps
    /// stay, to be entered again.
    pub(super) fn reset(&mut self) {
        self.loaded = 0;
        self.failed.clear();
        self.proved = false;
        self.resume = None;
        self.interrupted = None;
        self.imported.clear();
    }

    /// Where the loaded prefix ends.
    pub(super) fn loaded_end(&self) -> usize {
        self.loaded
            .checked_sub(1)
            .map_or(0, |i| self.outline.segments[i].end)
    }

    /// Takes the file's text from disk. `Err(line)`: the loaded prefix changed there (the
    /// state must be reloaded); the text is taken anyway.
    pub(super) fn sync(&mut self, disk: String, spec: &CursorSpec) -> Result<(), usize> {
        let name = self
            .current
            .and_then(|i| self.block(i))
            .map(|(_, b)| b.name.clone());
        let end = self.loaded_end();
        let same = disk.len() >= end && disk.as_bytes()[..end] == self.text.as_bytes()[..end];
        let first_diff = self
            .text
            .bytes()
            .zip(disk.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(self.text.len().min(disk.len()));
        if disk != self.text {
            self.outline = Outline::of(&disk, spec);
        }
        let line = self.outline.line(first_diff);
        self.text = disk;
        // The current theorem may have moved: follow it by name.
        if let Some(n) = name {
            self.current = self.outline.find(&n);
            if self.current.is_none() {
                self.steps.clear();
            }
        }
        if same {
            self.loaded = self.outline.count_before(end);
            Ok(())
        } else {
            Err(line)
        }
    }

    /// The block of segment `i`.
    pub(super) fn block(&self, i: usize) -> Option<(&Segment, &Block)> {
        self.outline.block(i)
    }

    /// "block k/n: name" for segment `i`.
    pub(super) fn progress(&self, i: usize) -> String {
        let total = self.outline.blocks().count();
        let k = self.outline.blocks().take_while(|(j, _, _)| *j < i).count() + 1;
        match self.block(i) {
            Some((_, b)) => format!("block {k}/{total}: {}", b.name),
            None => {
                let (a, b) = self.outline.lines_of(&self.outline.segments[i]);
                format!("block {}/{total}: text at lines {a}-{b}", k - 1)
            }
        }
    }

    /// Loads segments up to (not including) `target`.
    pub(super) fn load_to(
        &mut self,
        link: &Link<'_>,
        spec: &CursorSpec,
        target: usize,
    ) -> Result<(), Halt> {
        while self.loaded < target.min(self.outline.segments.len()) {
            if let Some(why) = link.stopped() {
                return Err(Halt::Stopped(why));
            }
            link.status(&self.progress(self.loaded));
            if let Err(h) = self.load_one(link, spec, self.loaded) {
                if matches!(h, Halt::Stopped(_)) {
                    self.interrupted = Some(self.loaded);
                }
                return Err(h);
            }
            self.loaded += 1;
        }
        Ok(())
    }

    fn load_one(&mut self, link: &Link<'_>, spec: &CursorSpec, i: usize) -> Result<(), Halt> {
        let seg = self.outline.segments[i].clone();
        let text = &self.text[seg.start..seg.end];
        if text.trim().is_empty() {
            return Ok(());
        }
        // A BOM at the start of the file is no part of its first command.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let rewritten;
        let mut input = text;
        if seg.block.is_none() {
            if let Some(r) = rewrite(spec, text) {
                rewritten = r;
                input = &rewritten;
            }
        }
        // The names it imports, loaded first (their failures show in its own answer: an
        // unknown structure, a missing file).
        if let Some(load) = super::project::loads(spec, input, &mut self.imported) {
            answer(link.say(&load, spec.timeout))?;
        }
        if input.trim().is_empty() {
            return Ok(());
        }
        let said = answer(link.say(input, spec.timeout))?;
        let Some(error) = spec.error_line(&said) else {
            return Ok(());
        };
        if let Some(b) = &seg.block {
            return self.block_failed(link, spec, (i, &seg, b), (error, said));
        }
        let lines = self.outline.lines_of(&seg);
        // Named by its first line of code, not a comment before it.
        let code = first_code(text, &spec.lexicon);
        let at = seg.end - text.len() + code;
        self.failed.push(Failure {
            name: first_line(&text[code..]),
            command: true,
            cause: true,
            after: None,
            lines: (self.outline.line(at).max(lines.0), lines.1),
            error,
            detail: excerpt(&said),
            admit_failed: false,
            broken: None,
        });
        Ok(())
    }

    /// Block `i` failed with `error` (its answer `said`): taken back, where its proof breaks
    /// found, then loaded again with its proof left to later (the placeholder).
    fn block_failed(
        &mut self,
        link: &Link<'_>,
        spec: &CursorSpec,
        (i, seg, b): (usize, &Segment, &Block),
        (error, said): (String, String),
    ) -> Result<(), Halt> {
        let lines = self.outline.lines_of(seg);
        let after = self.failed.iter().find(|f| f.cause).map(|f| Cause {
            kind: if f.command { "command" } else { "definition" },
            name: f.name.clone(),
            line: f.lines.0,
        });
        let mut f = Failure {
            name: b.name.clone(),
            command: false,
            cause: !spec.rules[b.rule].goal,
            after,
            lines,
            error,
            detail: excerpt(&said),
            admit_failed: true,
            broken: None,
        };
        take_back(link, spec, &b.name)?;
        // Where its proof breaks, unless an earlier failed command may be why it failed.
        if f.after.is_none() {
            if let Some((fields, text)) =
                super::breaks::locate((&self.text, &self.outline), link, spec, i)?
            {
                let faced = fields["goalsFaced"].as_str().unwrap_or_default();
                f.detail = format!(
                    "{}\n{text}; the goals it faced:\n{}",
                    f.detail,
                    excerpt(faced)
                );
                f.broken = Some(fields);
            }
        }
        if let Some(admitted) = with_proof(&self.text, seg, b, &spec.rules[b.rule].admit) {
            let again = answer(link.say(&admitted, spec.timeout))?;
            f.admit_failed = spec.error_line(&again).is_some();
            if f.admit_failed {
                answer(link.say(&spec.drop, spec.timeout))?;
            }
        }
        self.failed.push(f);
        Ok(())
    }

    /// Drops any proof and enters the goal of block `i`, then replays the recorded steps.
    /// Returns the goal (the answer to the last input).
    pub(super) fn enter(
        &mut self,
        link: &Link<'_>,
        spec: &CursorSpec,
        i: usize,
    ) -> Result<String, Halt> {
        let (seg, b) = self
            .block(i)
            .ok_or_else(|| Halt::Failed("not a block".into()))?;
        let input = enter_input(&self.text, (seg, b), spec).map_err(|bad| {
            Halt::Failed(format!(
                "the statement of {} contains {bad:?}, which the cursor cannot quote; prove it with {}_send",
                b.name,
                link.kind_name()
            ))
        })?;
        let name = b.name.clone();
        self.current_text = self.text[seg.start..seg.end].to_owned();
        self.current = Some(i);
        self.proved = false;
        answer(link.say(&spec.drop, spec.timeout))?;
        let mut goal = answer(link.say(&input, spec.timeout))?;
        if let Some(e) = spec.error_line(&goal) {
            self.current = None;
            return Err(Halt::Failed(format!(
                "entering the goal of {name} failed: {e}\n{goal}"
            )));
        }
        let steps = std::mem::take(&mut self.steps);
        for (n, s) in steps.iter().enumerate() {
            let a = answer(link.say(&fill(&spec.step, &[("tactic", s)]), spec.timeout))?;
            if let Some(e) = spec.error_line(&a) {
                return Err(Halt::Failed(format!(
                    "replaying step {} ({s}) failed: {e}; the {} steps before it are applied",
                    n + 1,
                    n
                )));
            }
            self.proved = spec.proved.is_match(&a);
            self.steps.push(s.clone());
            goal = a;
        }
        Ok(goal)
    }

    /// The first block at or after segment `from` that can be entered and holds a
    /// placeholder.
    pub(super) fn next_placeholder(&self, spec: &CursorSpec, from: usize) -> Option<usize> {
        self.outline
            .blocks()
            .find(|(i, _, b)| *i >= from && b.placeholder && spec.rules[b.rule].goal)
            .map(|(i, _, _)| i)
    }
}

/// The command `text` as the kind's `rewrite` sends it, if a rule matches it whole.
fn rewrite(spec: &CursorSpec, text: &str) -> Option<String> {
    let t = text.trim();
    spec.rewrite.iter().find_map(|(re, send)| {
        let c = re.captures(t)?;
        let groups: Vec<(String, String)> = (1..c.len())
            .map(|i| {
                (
                    i.to_string(),
                    c.get(i).map_or("", |m| m.as_str()).to_owned(),
                )
            })
            .collect();
        let vars: Vec<(&str, &str)> = groups
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        Some(fill(send, &vars))
    })
}

/// Takes back what a failed block `name` left: its proof, and (with the kind's `rollback`
/// inputs, errors ignored) anything it defined anyway (Rocq runs the sentences after the one
/// that failed: a `Qed` at the end may still define the theorem).
fn take_back(link: &Link<'_>, spec: &CursorSpec, name: &str) -> Result<(), Halt> {
    if spec.rollback.is_empty() {
        return answer(link.say(&spec.drop, spec.timeout)).map(drop);
    }
    for r in &spec.rollback {
        answer(link.say(&fill(r, &[("name", name)]), spec.timeout))?;
    }
    Ok(())
}

/// Where the code of `text` starts: its first byte outside comments, strings' quotes and
/// blanks (0 when it has none).
fn first_code(text: &str, lex: &Lexicon) -> usize {
    let mask = super::scan::code_mask(text, lex);
    text.char_indices()
        .find(|&(i, c)| mask[i] && !c.is_whitespace())
        .map_or(0, |(i, _)| i)
}

/// The first line of a command, at most 60 characters.
fn first_line(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or_default();
    match line.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// At most 40 lines of an answer.
fn excerpt(answer: &str) -> String {
    let lines: Vec<&str> = answer.lines().collect();
    let mut out = lines[..lines.len().min(40)].join("\n");
    if lines.len() > 40 {
        out.push_str(&format!("\n[… {} more lines]", lines.len() - 40));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(super) mod tests {
    use crate::spec::cursor::{CursorSpec, Lexicon, StateAt};
    use regex_lite::Regex;

    /// A cursor of no kind in particular: `lex` and `state_at`, and inputs that are their
    /// own names.
    pub(crate) fn spec_with(lexicon: Lexicon, state_at: StateAt) -> CursorSpec {
        let re = |s: &str| Regex::new(s).unwrap();
        CursorSpec {
            write: false,
            lexicon,
            rules: Vec::new(),
            placeholder: re("PLACEHOLDER"),
            enter: "enter {statement}".into(),
            statement_forbids: Vec::new(),
            step: "step {tactic}".into(),
            step_pattern: None,
            undo: "undo".into(),
            goals: "goals".into(),
            drop: "drop".into(),
            noise: None,
            error: re("^Error"),
            proved: re("^Proved"),
            join_step: "{step}".into(),
            join_separator: "\n".into(),
            state_at,
            commands: None,
            goal_count: None,
            trust: None,
            search: Vec::new(),
            rewrite: Vec::new(),
            rollback: Vec::new(),
            project: None,
            imports: crate::spec::project::Imports::default(),
            build: None,
            background: None,
            timeout: std::time::Duration::from_secs(1),
        }
    }
}
