//! `K_cursor_try`: several tactics tried on the goal under the cursor, each from the same
//! goal, none recorded. Each is applied and taken back (the kind's `undo`); the goals are
//! compared with what they were before, and where an undo was not enough (a program killed
//! after a timeout, an undo that did not restore them) the goal is entered again with the
//! recorded steps. A tactic that passes its timeout is interrupted; the next one still runs.

use std::time::Duration;

use serde_json::{json, Value};

use super::env::Env;
use super::input::{answer, fill};
use super::ops::{begin, Run};
use super::reply::{Answer, Reply};
use super::steps::need_goal;
use crate::session::{Said, StopReason};

/// Most tactics one try takes.
pub(super) const MAX_TACTICS: usize = 20;

/// How a try is asked: the tactics, each one's limit, and whether to stop at the first that
/// proves the goal.
pub(super) struct Ask<'a> {
    pub tactics: &'a [String],
    pub limit: Duration,
    pub stop_at_proof: bool,
}

/// `K_cursor_try {tactics, timeout?, stopAtProof?}`.
pub(super) fn try_tactics(env: &Env<'_>, ask: &Ask<'_>) -> Answer {
    let mut run = begin(env, None)?;
    let reply = try_in(&mut run, ask);
    run.end(reply)
}

/// How one tactic went.
struct Tried {
    tactic: String,
    /// `proves the goal`, `goals`, `error`, `timeout`, `refused`.
    result: &'static str,
    goals: Option<usize>,
    text: String,
    /// The program did not come back from it (killed, or it died): a fresh one is needed.
    lost: bool,
}

fn try_in(run: &mut Run<'_>, ask: &Ask<'_>) -> Result<Reply, String> {
    let i = need_goal(run, "cursor_try")?;
    let before = goals(run)?;
    let mut tried = Vec::new();
    let mut notes = Vec::new();
    for tactic in ask.tactics {
        let (t, undone) = one(run, tactic, ask.limit)?;
        let proved = t.result == "proves the goal";
        if t.lost {
            // A fresh program: the file loaded again up to the theorem, its goal entered.
            run.fresh_program()?;
            run.goto(i).map_err(|h| run.halted(h, "cursor_try"))?;
            notes.push(format!(
                "after `{}` a fresh program loaded {} again and entered the goal with the recorded steps",
                t.tactic, run.cur.file
            ));
        } else if t.result != "refused"
            // An undo that answers with the goals as they were (Rocq's) needs no look of its own.
            && undone.as_deref() != Some(before.as_str())
            && goals(run)?.as_str() != before.as_str()
        {
            // The undo was not enough (a tactic of several sentences): the proof is dropped
            // and the goal entered again, the recorded steps replayed, in the same program.
            run.cur
                .enter(&run.link, run.env.spec, i)
                .map_err(|h| run.halted(h, "cursor_try"))?;
            notes.push(format!(
                "after `{}` the goal was entered again with the recorded steps",
                t.tactic
            ));
        }
        tried.push(t);
        if proved && ask.stop_at_proof {
            break;
        }
    }
    Ok(report(&tried, &notes, &before))
}

/// Applies `tactic` and takes it back; what it found, and the undo's answer if one was sent.
fn one(
    run: &mut Run<'_>,
    tactic: &str,
    limit: Duration,
) -> Result<(Tried, Option<String>), String> {
    let spec = run.env.spec;
    let mut t = Tried {
        tactic: tactic.trim().to_owned(),
        result: "goals",
        goals: None,
        text: String::new(),
        lost: false,
    };
    if let Some(p) = spec.step_pattern.as_ref().filter(|p| !p.is_match(tactic)) {
        t.result = "refused";
        t.text = format!(
            "not sent: a step must match /{}/",
            p.as_str().trim_start_matches("(?m)")
        );
        return Ok((t, None));
    }
    match run
        .link
        .say(&fill(&spec.step, &[("tactic", tactic)]), limit)
    {
        Said::Answer(a) => {
            if let Some(e) = spec.error_line(&a) {
                t.result = "error";
                t.text = e;
                return Ok((t, None));
            }
            // A step that printed nothing: what it left is the goals now.
            let a = if a.trim().is_empty() { goals(run)? } else { a };
            if spec.proved.is_match(&a) {
                t.result = "proves the goal";
                t.goals = Some(0);
            } else {
                t.goals = count(run, &a);
            }
            t.text = a;
            let undone = answer(run.link.say(&spec.undo, spec.timeout))
                .map_err(|h| run.halted(h, "cursor_try"))?;
            if let Some(e) = spec.error_line(&undone) {
                t.text.push_str(&format!("\n(taking it back failed: {e})"));
            }
            return Ok((t, Some(undone)));
        }
        Said::Stopped { why, alive, .. } => {
            t.result = "timeout";
            t.text = match why {
                StopReason::Deadline => format!("interrupted after {:.0} s", limit.as_secs_f64()),
                StopReason::Cancelled => return Err("the try was cancelled".into()),
            };
            if !alive {
                t.lost = true;
                t.text
                    .push_str("; the program did not come back and was restarted");
            }
        }
        Said::Died(m) => {
            t.result = "error";
            t.lost = true;
            t.text = format!("{m}; the program was restarted");
        }
    }
    Ok((t, None))
}

/// The goals now (the kind's `goals` input).
fn goals(run: &mut Run<'_>) -> Result<String, String> {
    let spec = run.env.spec;
    answer(run.link.say(&spec.goals, spec.timeout)).map_err(|h| run.halted(h, "cursor_try"))
}

/// How many goals `answer` (a step's) leaves, by the kind's `goalCount`.
fn count(run: &mut Run<'_>, step_answer: &str) -> Option<usize> {
    let g = run.env.spec.goal_count.as_ref()?;
    let text = match &g.input {
        Some(input) => answer(run.link.say(input, run.env.spec.timeout)).ok()?,
        None => step_answer.to_owned(),
    };
    g.pattern.captures(&text)?.name("n")?.as_str().parse().ok()
}

fn report(tried: &[Tried], notes: &[String], before: &str) -> Reply {
    let mut text = String::new();
    for (k, t) in tried.iter().enumerate() {
        let head = match (t.result, t.goals) {
            ("goals", Some(n)) => format!("{n} goal{} left", if n == 1 { "" } else { "s" }),
            (r, _) => r.to_owned(),
        };
        text.push_str(&format!("{}. `{}`: {head}\n", k + 1, t.tactic));
        if !t.text.trim().is_empty() && t.result != "proves the goal" {
            for line in t.text.trim().lines() {
                text.push_str(&format!("   {line}\n"));
            }
        }
    }
    let proving: Vec<&str> = tried
        .iter()
        .filter(|t| t.result == "proves the goal")
        .map(|t| t.tactic.as_str())
        .collect();
    text.push_str(&match proving.first() {
        Some(t) => format!("`{t}` proves the goal. "),
        None => "None of them proves the goal. ".to_owned(),
    });
    text.push_str("Nothing was recorded: the goal is as it was.");
    for n in notes {
        text.push_str(&format!("\n({n})"));
    }
    let tactics: Vec<Value> = tried
        .iter()
        .map(|t| {
            let mut v = json!({"tactic": t.tactic, "result": t.result});
            if let Some(n) = t.goals {
                v["goalsLeft"] = json!(n);
            }
            let key = if matches!(t.result, "goals") {
                "goals"
            } else {
                "message"
            };
            if !t.text.is_empty() && t.result != "proves the goal" {
                v[key] = json!(t.text);
            }
            v
        })
        .collect();
    Reply::from(text)
        .with("tactics", Value::Array(tactics))
        .with("goals", before)
        .with("goalUnchanged", true)
}
