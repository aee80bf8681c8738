//! `K_state_at` (the goal at a line inside a proof), `K_check` (every block, or one, loaded
//! from disk and reported OK, FAILED or placeholder), and `K_cursor_status`.

use super::engine::answer;
use super::file::read_beneath;
use super::ops::{begin, blocks_end, entered, failure, failures, theorem, Env, Run};
use super::outline::find_code;
use super::scan::{balanced, code_mask};
use crate::session::OpResult;
use crate::spec::cursor::{CursorSpec, StateAt};

/// `K_state_at {file, line}`.
pub(super) fn state_at(env: &Env<'_>, file: &str, line: usize) -> OpResult {
    let mut run = begin(env, Some(file))?;
    let reply = state_in(&mut run, line);
    run.end(reply)
}

fn state_in(run: &mut Run<'_>, line: usize) -> OpResult {
    let spec = run.env.spec;
    let c = &run.cur;
    let found = c.outline.blocks().find(|(_, s, _)| {
        let (a, z) = c.outline.lines_of(s);
        (a..=z).contains(&line)
    });
    let Some((i, _, b)) = found else {
        return Err(format!("line {line} of {} is in no block", c.file));
    };
    let Some(proof) = b.proof.filter(|_| spec.rules[b.rule].goal) else {
        return Err(format!(
            "line {line} is in {}, which has no goal to enter",
            b.name
        ));
    };
    let steps = if line <= c.outline.line(proof.0) {
        Vec::new()
    } else {
        let (_, line_end) = c.outline.line_span(&c.text, line).ok_or("no such line")?;
        steps_upto(spec, &c.text, proof.1, line_end.min(b.end_at), line)?
    };
    run.cur.steps.clear();
    run.cur.current = None;
    run.rollback_to(i)?;
    run.cur.steps.clone_from(&steps);
    let goal = run.goto(i).map_err(|h| run.halted(h, "state_at"))?;
    let mut out = format!(
        "{} State at line {line}, after {} step(s)",
        entered(&run.cur),
        steps.len()
    );
    if steps.is_empty() {
        out.push_str(":\n");
    } else {
        out.push_str(&format!(
            " (recorded: {} continues from here):\n",
            run.env.tool("cursor_step")
        ));
        for s in &steps {
            out.push_str(&format!("  {s}\n"));
        }
    }
    Ok(format!("{out}{goal}"))
}

/// The steps of the proof text from `from` up to `cut`.
pub(super) fn steps_upto(
    spec: &CursorSpec,
    text: &str,
    from: usize,
    cut: usize,
    line: usize,
) -> Result<Vec<String>, String> {
    let mask = code_mask(text, &spec.lexicon);
    match &spec.state_at {
        StateAt::Prefix { trim } => {
            let mut prefix = text[from..cut].trim_end();
            while let Some(m) = trim.find(prefix) {
                if m.start() == 0 && m.end() == 0 {
                    break;
                }
                prefix = prefix[..m.start()].trim_end();
            }
            if !balanced(text, &mask, from, from + prefix.len()) {
                return Err(format!(
                    "line {line} ends inside brackets: the proof up to there is not a whole step; ask for a line that ends one"
                ));
            }
            let p = prefix.trim();
            Ok(if p.is_empty() {
                Vec::new()
            } else {
                vec![p.to_owned()]
            })
        }
        StateAt::Sentences { end } => {
            let mut steps = Vec::new();
            let mut pos = from;
            while let Some((s, e)) = find_code(end, text, &mask, pos).filter(|(s, _)| *s < cut) {
                let step = text[pos..e].trim();
                if !step.is_empty() {
                    steps.push(step.to_owned());
                }
                pos = e.max(s + 1);
            }
            Ok(steps)
        }
    }
}

/// `K_check {file, theorem?}`.
pub(super) fn check(env: &Env<'_>, file: &str, name: Option<&str>) -> OpResult {
    let mut run = begin(env, Some(file))?;
    let reply = check_in(&mut run, name);
    run.end(reply)
}

fn check_in(run: &mut Run<'_>, name: Option<&str>) -> OpResult {
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
        None => (run.cur.loaded, blocks_end(&run.cur)),
    };
    let mut out = String::new();
    // What was loaded before this check: its failed commands and its blocks, in order.
    let before = from.min(run.cur.loaded);
    for j in 0..before {
        let found = run.cur.failed.iter().find(|f| failed_at(&run.cur, f, j));
        let line = match (run.cur.block(j), found) {
            (None, Some(f)) => Some(failure(f)),
            (Some((s, b)), f) => {
                let (a, z) = run.cur.outline.lines_of(s);
                let verdict = match f {
                    Some(f) => format!("FAILED: {}", f.error),
                    None if b.placeholder => "placeholder".to_owned(),
                    None => "OK".to_owned(),
                };
                Some(format!(
                    "{} (lines {a}-{z}): {verdict} (loaded before this check)\n",
                    b.name
                ))
            }
            (None, None) => None,
        };
        if name.is_none() {
            out.push_str(&line.unwrap_or_default());
        }
    }
    let mut failed = name.is_none()
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
            return Err(format!("{out}{why}"));
        }
        let new = run.cur.failed.get(known);
        failed |= new.is_some();
        match (run.cur.block(j).filter(|_| j >= from), new) {
            (Some((s, b)), f) => {
                let (a, z) = run.cur.outline.lines_of(s);
                let verdict = match f {
                    Some(f) if f.after.is_some() => failure(f).trim_end().to_owned(),
                    Some(f) => format!(
                        "{} (lines {a}-{z}): FAILED: {}\n{}",
                        b.name,
                        f.error,
                        indent(&f.detail)
                    ),
                    None if b.placeholder => format!("{} (lines {a}-{z}): placeholder", b.name),
                    None => format!("{} (lines {a}-{z}): OK", b.name),
                };
                out.push_str(verdict.trim_end());
                out.push('\n');
            }
            // A failed command outside blocks: reported where it is, first.
            (None, Some(f)) => {
                out.push_str(&failure(f));
                out.push_str(&indent(&f.detail));
            }
            _ => {}
        }
        j += 1;
    }
    if out.is_empty() {
        out = "No blocks to check after the loaded point.\n".into();
    }
    if failed {
        Err(out.trim_end().to_owned())
    } else {
        Ok(out.trim_end().to_owned())
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

/// `K_cursor_status {}`: from the stored state and the disk, without taking the turn.
pub(super) fn status(env: &Env<'_>) -> OpResult {
    let c = match env.store.peek(&env.key()) {
        None => {
            return Ok(format!(
                "No cursor on the {} session `{}`: call {} {{file}}.",
                env.kind.name,
                env.session,
                env.tool("cursor_init")
            ))
        }
        Some(Err(f)) => {
            return Ok(format!(
                "A cursor call on {f} is running; ask again when it ends."
            ))
        }
        Some(Ok(c)) => c,
    };
    let spec = env.spec;
    let disk = read_beneath(env.root, &c.file);
    let changed = match &disk {
        Ok(d) if *d == c.text => "unchanged since it was loaded".to_owned(),
        Ok(d) if d.get(..c.loaded_end()) == c.text.get(..c.loaded_end()) => {
            "changed after the loaded part (the next call reads it)".to_owned()
        }
        Ok(_) => "CHANGED in the loaded part: the next cursor call reloads it".to_owned(),
        Err(e) => format!("unreadable: {e}"),
    };
    let current = match c.current.and_then(|i| c.block(i)) {
        Some((_, b)) => format!(
            "{}{}",
            b.name,
            if c.proved {
                " (proved: call complete)"
            } else {
                ""
            }
        ),
        None => "none".into(),
    };
    let mut out = format!(
        "File {}: {changed}.\nLoaded to line {}. Current theorem: {current}.\n",
        c.file,
        c.outline.line(c.loaded_end().saturating_sub(1))
    );
    out.push_str(&format!("Recorded steps ({}):\n", c.steps.len()));
    for (k, s) in c.steps.iter().enumerate() {
        out.push_str(&format!("  {}. {s}\n", k + 1));
    }
    let left: Vec<&str> = c
        .outline
        .blocks()
        .filter(|(_, _, b)| b.placeholder && spec.rules[b.rule].goal)
        .map(|(_, _, b)| b.name.as_str())
        .collect();
    out.push_str(&format!(
        "Placeholders left ({}): {}\n",
        left.len(),
        left.join(", ")
    ));
    out.push_str(&failures(&c));
    if let Some(r) = &c.resume {
        out.push_str(&format!("{r}\n"));
    }
    Ok(out.trim_end().to_owned())
}
