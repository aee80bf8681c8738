//! `K_check`: every block (or one) loaded from disk and reported OK, FAILED or placeholder.

use super::engine::answer;
use super::ops::{begin, Env, Run};
use super::reply::Answer;
use super::report::{blocks_end, failure, theorem};
use crate::session::OpResult;

/// `K_check {file, theorem?}`.
pub(super) fn check(env: &Env<'_>, file: &str, name: Option<&str>) -> Answer {
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
