//! The tools that work on the goal under the cursor: a step, an undo, entering the theorem
//! again, going to another one.

use std::time::Duration;

use super::env::Env;
use super::input::{answer, fill};
use super::ops::{begin, Run};
use super::reply::{Answer, Reply};
use super::report::{entered, failures, theorem};
use crate::session::{Said, StopReason};

/// `K_cursor_step {tactic}`.
pub(super) fn step(env: &Env<'_>, tactic: &str, limit: Duration) -> Answer {
    let mut run = begin(env, None)?;
    let reply = step_in(&mut run, tactic, limit);
    run.end(reply)
}

/// The current theorem, entered again (with its steps) when the program was fresh; `again`
/// is the tool to call again when that reload stops early.
pub(super) fn need_goal(run: &mut Run<'_>, again: &str) -> Result<usize, String> {
    let i = run.cur.current.ok_or_else(|| {
        format!(
            "no goal is entered: call {} or {} first",
            run.env.tool("cursor_init"),
            run.env.tool("cursor_goto")
        )
    })?;
    run.restore().map_err(|h| run.halted(h, again))?;
    Ok(i)
}

fn step_in(run: &mut Run<'_>, tactic: &str, limit: Duration) -> Result<Reply, String> {
    let spec = run.env.spec;
    if let Some(p) = spec.step_pattern.as_ref().filter(|p| !p.is_match(tactic)) {
        return Err(format!(
            "a step of this kind must match /{}/ (for example end with a period); nothing was sent",
            p.as_str().trim_start_matches("(?m)")
        ));
    }
    need_goal(run, "cursor_step")?;
    match run
        .link
        .say(&fill(&spec.step, &[("tactic", tactic)]), limit)
    {
        Said::Answer(a) => {
            if let Some(e) = spec.error_line(&a) {
                return Err(format!(
                    "{a}\n\nThe step failed ({e}); it is not recorded and the goal is as before."
                ));
            }
            run.cur.steps.push(tactic.trim().to_owned());
            run.cur.proved = spec.proved.is_match(&a);
            // A step that printed nothing: show the goals it left.
            let a = if a.is_empty() {
                answer(run.link.say(&spec.goals, spec.timeout)).unwrap_or_default()
            } else {
                a
            };
            let n = run.cur.steps.len();
            let tail = if run.cur.proved {
                format!(
                    "The goal is proved ({n} step{}): call {} to write the proof.",
                    if n == 1 { "" } else { "s" },
                    run.env.tool("cursor_complete")
                )
            } else {
                format!("(step {n} recorded)")
            };
            Ok(Reply::from(format!("{a}\n\n{tail}")).with("goals", a.as_str()))
        }
        Said::Stopped {
            partial,
            alive,
            why,
        } => {
            let how = if why == StopReason::Deadline {
                format!("after its timeout of {:.0} s", limit.as_secs_f64())
            } else {
                "by a cancel".into()
            };
            let state = if alive {
                "the goal is as before".to_owned()
            } else {
                run.cur.reset();
                "the program did not come back and was killed; the next cursor call loads the file again".to_owned()
            };
            Err(format!("The step was interrupted {how}; it is not recorded and {state}.\nOutput so far:\n{partial}"))
        }
        Said::Died(m) => {
            run.cur.reset();
            Err(format!(
                "{m}. The next cursor call starts a fresh program and loads the file again."
            ))
        }
    }
}

/// `K_cursor_undo {}`.
pub(super) fn undo(env: &Env<'_>) -> Answer {
    let mut run = begin(env, None)?;
    let reply = (|| -> Result<Reply, String> {
        need_goal(&mut run, "cursor_undo")?;
        if run.cur.steps.is_empty() {
            return Err("no recorded step to undo".to_owned());
        }
        let a = answer(run.link.say(&run.env.spec.undo, run.env.spec.timeout))
            .map_err(|h| run.halted(h, "cursor_undo"))?;
        if let Some(e) = run.env.spec.error_line(&a) {
            return Err(format!("{a}\n\nThe undo failed ({e})."));
        }
        let s = run.cur.steps.pop().unwrap_or_default();
        run.cur.proved = false;
        let goals = answer(run.link.say(&run.env.spec.goals, run.env.spec.timeout))
            .map_err(|h| run.halted(h, "cursor_undo"))?;
        Ok(Reply::from(format!(
            "{goals}\n\nTook back step {} ({s}).",
            run.cur.steps.len() + 1
        ))
        .with("goals", goals.as_str()))
    })();
    run.end(reply)
}

/// `K_cursor_reenter {}`.
pub(super) fn reenter(env: &Env<'_>) -> Answer {
    let mut run = begin(env, None)?;
    let reply = (|| -> Result<Reply, String> {
        let i = run
            .cur
            .current
            .ok_or_else(|| "no theorem is under the cursor".to_owned())?;
        run.cur.steps.clear();
        let g = run.goto(i).map_err(|h| run.halted(h, "cursor_reenter"))?;
        Ok(Reply::from(format!("{}\n{g}", entered(&run.cur))).with("goals", g.as_str()))
    })();
    run.end(reply)
}

/// `K_cursor_goto {theorem}`.
pub(super) fn goto(env: &Env<'_>, name: &str) -> Answer {
    let mut run = begin(env, None)?;
    let reply = (|| -> Result<Reply, String> {
        let i = theorem(&run.cur, run.env.spec, name)?;
        run.cur.steps.clear();
        run.cur.current = None;
        run.rollback_to(i)?;
        let g = run.goto(i).map_err(|h| run.halted(h, "cursor_goto"))?;
        Ok(
            Reply::from(format!("{}{}\n{g}", failures(&run.cur), entered(&run.cur)))
                .with("goals", g.as_str()),
        )
    })();
    run.end(reply)
}
