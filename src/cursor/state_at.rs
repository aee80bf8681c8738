//! `K_state_at {file, line, column?}`: the goals before the step of a proof at a position and
//! after it. The step is the one the position falls in (a column picks one of several steps
//! on a line; without one, the line's last). Rocq: the sentences before it replayed, then it
//! applied; HOL4: the tactic chain up to it applied as one tactic, then up to and with it.
//! What stays recorded is the state before the step, so that `K_cursor_step` tries another
//! in its place.

use serde_json::json;

use super::env::Env;
use super::input::{answer, fill};
use super::ops::{begin, Run};
use super::reply::{Answer, Reply};
use super::report::entered;
use super::split::{step_at, steps, Step};
use crate::spec::cursor::StateAt;

/// Where in a file: a 1-based line, and a 1-based column in characters (none: the line's end).
#[derive(Clone, Copy)]
pub(super) struct Position {
    pub line: usize,
    pub column: Option<usize>,
}

/// `K_state_at {file, line, column?}`.
pub(super) fn state_at(env: &Env<'_>, file: &str, at: Position) -> Answer {
    let mut run = begin(env, Some(file))?;
    let reply = state_in(&mut run, at);
    run.end(reply)
}

fn state_in(run: &mut Run<'_>, at: Position) -> Result<Reply, String> {
    let spec = run.env.spec;
    let c = &run.cur;
    let line = at.line;
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
    let (start, end) = c.outline.line_span(&c.text, line).ok_or("no such line")?;
    let pos = match at.column {
        None => end.saturating_sub(1).max(start),
        Some(col) => c.text[start..end]
            .char_indices()
            .nth(col.saturating_sub(1))
            .map_or(end, |(k, _)| start + k),
    };
    let all = steps(spec, &c.text, (proof.1, b.end_at));
    let name = b.name.clone();
    let Some(k) = step_at(&all, pos, at.column.is_some()) else {
        return Err(format!("the proof of {name} has no steps"));
    };
    let text = c.text.clone();
    let step_text = text[all[k].start..all[k].end].to_owned();
    let (before, after) = around(run, i, (&text, &all), k)?;
    let recorded = run.cur.steps.clone();
    let (sl, _) = (run.cur.outline.line(all[k].start), ());
    let mut out = format!(
        "{} Step {} of {} (line {sl}): `{step_text}`.\nGoals before it:\n{before}\n\nGoals after it:\n{after}\n\n",
        entered(&run.cur),
        k + 1,
        all.len(),
    );
    out.push_str(&if recorded.is_empty() {
        format!("Recorded: no step (the goal as entered): {} continues from before this step.", run.env.tool("cursor_step"))
    } else {
        format!("Recorded: the state before this step ({} step{}): {} continues from there, in its place.", recorded.len(), if recorded.len() == 1 { "" } else { "s" }, run.env.tool("cursor_step"))
    });
    Ok(Reply::from(out)
        .with("theorem", name)
        .with(
            "step",
            json!({"index": k + 1, "of": all.len(), "line": sl, "text": step_text}),
        )
        .with("before", before)
        .with("after", after)
        .with("recorded", json!(recorded)))
}

/// The goals before step `k` of block `i` (whose proof is cut into `all` steps of `text`) and
/// after it; leaves the goal entered with the steps before it recorded.
fn around(
    run: &mut Run<'_>,
    i: usize,
    (text, all): (&str, &[Step]),
    k: usize,
) -> Result<(String, String), String> {
    let spec = run.env.spec;
    let halt = |run: &mut Run<'_>, h| run.halted(h, "state_at");
    run.cur.current = None;
    run.rollback_to(i)?;
    match &spec.state_at {
        StateAt::Sentences { .. } => {
            // Before: the sentences before it replayed; after: it applied, then taken back.
            run.cur.steps = all[..k]
                .iter()
                .map(|s| text[s.start..s.end].to_owned())
                .collect();
            let before = run.goto(i).map_err(|h| halt(run, h))?;
            let step = &text[all[k].start..all[k].end];
            let after = answer(
                run.link
                    .say(&fill(&spec.step, &[("tactic", step)]), spec.timeout),
            )
            .map_err(|h| halt(run, h))?;
            let after = match spec.error_line(&after) {
                Some(e) => fails(&e),
                None => {
                    answer(run.link.say(&spec.undo, spec.timeout)).map_err(|h| halt(run, h))?;
                    after
                }
            };
            Ok((before, after))
        }
        StateAt::Prefix { .. } => {
            // After: the chain up to and with it, as one tactic, on the goal as entered;
            // before: the chain before it, recorded.
            let prefix = |n: usize| (n > 0).then(|| text[all[0].start..all[n - 1].end].to_owned());
            run.cur.steps.clear();
            run.goto(i).map_err(|h| halt(run, h))?;
            let with = prefix(k + 1).unwrap_or_default();
            let said = answer(
                run.link
                    .say(&fill(&spec.step, &[("tactic", &with)]), spec.timeout),
            )
            .map_err(|h| halt(run, h))?;
            let after = match spec.error_line(&said) {
                Some(e) => fails(&e),
                None => said,
            };
            run.cur.steps = prefix(k).into_iter().collect();
            let before = run.goto(i).map_err(|h| halt(run, h))?;
            Ok((before, after))
        }
    }
}

/// What "after" says of a step that fails.
fn fails(error: &str) -> String {
    format!("(none: the step fails: {error})")
}
