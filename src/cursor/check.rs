//! `K_check`: every block (or one) loaded from disk and reported OK, FAILED or placeholder.

use super::engine::{Cursor, Failure};
use super::env::Env;
use super::input::answer;
use super::ops::{begin, Run};
use super::reply::Answer;
use super::reply::{self, Reply};
use super::report::{failure, theorem};
use super::trust;
use serde_json::{json, Value};

/// `K_check {file, theorem?}`.
pub(super) fn check(env: &Env<'_>, file: &str, name: Option<&str>) -> Answer {
    let mut run = begin(env, Some(file))?;
    let reply = check_in(&mut run, name);
    run.end(reply)
}

fn check_in(run: &mut Run<'_>, name: Option<&str>) -> Result<Reply, Reply> {
    let spec = run.env.spec;
    run.cur.steps.clear();
    run.cur.current = None;
    answer(run.link.say(&spec.drop, spec.timeout)).map_err(|h| run.halted(h, "check"))?;
    let (from, to) = match name {
        Some(n) => {
            let i = run
                .cur
                .outline
                .find(n)
                .ok_or_else(|| theorem(&run.cur, spec, n).err().unwrap_or_default())?;
            run.rollback_to(i)?;
            (i, i + 1)
        }
        // The whole file: the commands after its last block too.
        None => (run.cur.loaded, run.cur.outline.segments.len()),
    };
    let mut v = Verdicts::default();
    // What was loaded before this check: its failed commands and its blocks, in order.
    let before = from.min(run.cur.loaded);
    if name.is_none() {
        earlier(run, &mut v, before)?;
    }
    v.failed = name.is_none()
        && run
            .cur
            .failed
            .iter()
            .any(|f| f.lines.0 <= line_of(&run.cur, before));
    let mut j = run.cur.loaded;
    while j < to {
        let known = run.cur.failed.len();
        if let Err(h) = run.cur.load_to(&run.link, spec, j + 1) {
            let why = run.halted(h, "check");
            return Err(
                Reply::from(format!("{}{why}", v.text)).with("theorems", Value::Array(v.theorems))
            );
        }
        let new = run.cur.failed.get(known).cloned();
        // Blocks before `from` are loaded again only to reach it: their failures are not this
        // check's (a failed command is still said, as what may explain the checked block).
        v.failed |= new.is_some() && j >= from;
        let is_block = run.cur.outline.segments[j].block.is_some();
        match (run.cur.block(j).filter(|_| j >= from), new) {
            (Some((s, b)), f) => {
                let (lines, name) = (run.cur.outline.lines_of(s), b.name.clone());
                let mark = Mark::of(b);
                let trusts = match (&f, mark) {
                    (None, Mark::Proved) => match trust::of(&run.link, spec, &name) {
                        Ok(t) => t,
                        Err(h) => return Err(Reply::from(run.halted(h, "check"))),
                    },
                    _ => None,
                };
                v.block(&name, lines, mark, f.as_ref(), trusts);
            }
            // A failed command outside blocks: reported where it is, first.
            (None, Some(f)) if !is_block => {
                v.text.push_str(&failure(&f));
                v.text.push_str(&indent(&f.detail));
                v.commands.push(reply::failure(&f));
            }
            _ => {}
        }
        j += 1;
    }
    v.finish()
}

/// The segments loaded before this check (`..before`): their failed commands and blocks, in
/// order; a theorem found OK then is asked what it trusts as this check's own are.
fn earlier(run: &mut Run<'_>, v: &mut Verdicts, before: usize) -> Result<(), Reply> {
    for j in 0..before {
        let proved = run
            .cur
            .block(j)
            .is_some_and(|(_, b)| Mark::of(b) == Mark::Proved)
            && !run.cur.failed.iter().any(|f| failed_at(&run.cur, f, j));
        let trusts = match run.cur.block(j).filter(|_| proved) {
            Some((_, b)) => trust::of(&run.link, run.env.spec, &b.name)
                .map_err(|h| Reply::from(run.halted(h, "check")))?,
            None => None,
        };
        v.earlier(&run.cur, j, trusts);
    }
    Ok(())
}

/// What a check found, as text and as fields.
#[derive(Default)]
struct Verdicts {
    text: String,
    theorems: Vec<Value>,
    commands: Vec<Value>,
    failed: bool,
    outright: usize,
    trusting: usize,
    unknown: usize,
    failures: usize,
    placeholders: usize,
    abandoned: usize,
}

/// What a block's own text says of it, before it is loaded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Proved,
    Placeholder,
    Abandoned,
}

impl Mark {
    fn of(b: &super::outline::Block) -> Mark {
        match (b.placeholder, b.abandoned) {
            (true, _) => Mark::Placeholder,
            (false, true) => Mark::Abandoned,
            (false, false) => Mark::Proved,
        }
    }
}

impl Verdicts {
    /// Segment `j`, loaded before this check: said and counted as this check's own are,
    /// marked `(loaded before this check)`.
    fn earlier(&mut self, c: &Cursor, j: usize, trusts: Option<Vec<trust::Trusted>>) {
        let found = c.failed.iter().find(|f| failed_at(c, f, j));
        match (c.block(j), found) {
            (None, Some(f)) => {
                self.text.push_str(&failure(f));
                self.commands.push(reply::failure(f));
            }
            (Some((s, b)), f) => {
                let at = self.text.len();
                self.block(&b.name, c.outline.lines_of(s), Mark::of(b), f, trusts);
                let end = self.text[at..]
                    .find('\n')
                    .map_or(self.text.len(), |n| at + n);
                if f.is_some() {
                    // Its details were the answer of the call that loaded it: one line here.
                    self.text.truncate(end);
                    self.text.push('\n');
                }
                self.text.insert_str(end, " (loaded before this check)");
                if let Some(t) = self.theorems.last_mut() {
                    t["loadedBefore"] = json!(true);
                }
            }
            (None, None) => {}
        }
    }

    /// A block this check loaded: failed, a placeholder, or OK and what it trusts.
    fn block(
        &mut self,
        name: &str,
        (a, z): (usize, usize),
        mark: Mark,
        f: Option<&Failure>,
        trusts: Option<Vec<trust::Trusted>>,
    ) {
        let mut record = json!({"name": name, "lines": [a, z]});
        let line = match f {
            Some(f) => {
                self.failures += 1;
                record["verdict"] = json!("FAILED");
                record["failure"] = reply::failure(f);
                if f.after.is_some() {
                    failure(f).trim_end().to_owned()
                } else {
                    format!(
                        "{name} (lines {a}-{z}): FAILED: {}\n{}",
                        f.error,
                        indent(&f.detail)
                    )
                }
            }
            None if mark == Mark::Placeholder => {
                self.placeholders += 1;
                record["verdict"] = json!("placeholder");
                format!("{name} (lines {a}-{z}): placeholder")
            }
            None if mark == Mark::Abandoned => {
                self.abandoned += 1;
                record["verdict"] = json!("abandoned");
                format!(
                    "{name} (lines {a}-{z}): abandoned (its proof gives it up: nothing is proved)"
                )
            }
            None => {
                record["verdict"] = json!("OK");
                let trust = match &trusts {
                    Some(t) if t.is_empty() => {
                        self.outright += 1;
                        format!(", {}", trust::said(t))
                    }
                    Some(t) => {
                        self.trusting += 1;
                        format!(", but {}", trust::said(t))
                    }
                    None => {
                        self.unknown += 1;
                        String::new()
                    }
                };
                if let Some(t) = &trusts {
                    record["trusts"] = trust::fields(t);
                }
                format!("{name} (lines {a}-{z}): OK{trust}")
            }
        };
        self.text.push_str(line.trim_end());
        self.text.push('\n');
        self.theorems.push(record);
    }

    /// The answer: every verdict, then the counts.
    fn finish(mut self) -> Result<Reply, Reply> {
        if self.text.is_empty() {
            self.text = "No blocks to check after the loaded point.\n".into();
        }
        let ok = self.outright + self.trusting + self.unknown;
        let mut summary = format!("{ok} OK");
        if self.outright + self.trusting > 0 {
            summary.push_str(&format!(
                " ({} proved outright, {} trusting a placeholder, axiom or oracle)",
                self.outright, self.trusting
            ));
        }
        summary.push_str(&format!(
            ", {} failed, {} placeholder{}.",
            self.failures,
            self.placeholders,
            if self.placeholders == 1 { "" } else { "s" }
        ));
        if self.abandoned > 0 {
            summary.insert_str(
                summary.len() - 1,
                &format!(", {} abandoned", self.abandoned),
            );
        }
        let reply = Reply::from(format!("{}{summary}", self.text))
            .with("theorems", Value::Array(self.theorems))
            .with("failedCommands", Value::Array(self.commands))
            .with(
                "summary",
                json!({"ok": ok, "provedOutright": self.outright, "trusting": self.trusting,
                       "failed": self.failures, "placeholders": self.placeholders,
                       "abandoned": self.abandoned}),
            );
        if self.failed {
            Err(reply)
        } else {
            Ok(reply)
        }
    }
}

/// Whether failure `f` is segment `j`'s.
fn failed_at(c: &super::engine::Cursor, f: &super::engine::Failure, j: usize) -> bool {
    c.outline
        .segments
        .get(j)
        .is_some_and(|s| c.outline.lines_of(s).0 == f.lines.0)
}

/// The first line of segment `j` (after the last one: past the end).
fn line_of(c: &super::engine::Cursor, j: usize) -> usize {
    c.outline
        .segments
        .get(j)
        .map_or(usize::MAX, |s| c.outline.lines_of(s).0)
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    {l}\n")).collect()
}
