//! `K_cursor_complete`: the recorded steps joined into the proof, the whole block checked in
//! the session, written over the placeholder (atomically, when allowed and unchanged on
//! disk), and the cursor moved to the next placeholder.

use super::engine::{answer, fill};
use super::file::{read_beneath, replace_beneath};
use super::ops::{entered, failures, need_goal, Run};
use super::outline::{with_proof, Outline, Segment};
use crate::session::OpResult;

/// `K_cursor_complete {}`.
pub(super) fn complete(env: &super::ops::Env<'_>) -> OpResult {
    let mut run = super::ops::begin(env, None)?;
    let reply = complete_in(&mut run);
    run.end(reply)
}

fn complete_in(run: &mut Run<'_>) -> OpResult {
    let spec = run.env.spec;
    let i = need_goal(run, "cursor_complete")?;
    if run.cur.steps.is_empty() {
        return Err(format!(
            "no steps are recorded: prove the goal with {} first",
            run.env.tool("cursor_step")
        ));
    }
    let (seg, b) = run
        .cur
        .block(i)
        .map(|(s, b)| (s.clone(), b.clone()))
        .ok_or("the block is gone")?;
    let proof = spec.join(&run.cur.steps);
    let part = fill(&spec.rules[b.rule].template, &[("proof", &proof)]);
    let old = run.cur.current_text.clone();
    let new = with_proof(&run.cur.text, &seg, &b, &part).ok_or("the block has no proof part")?;
    let halt = |run: &mut Run<'_>, h| run.halted(h, "cursor_complete");
    answer(run.link.say(&spec.drop, spec.timeout)).map_err(|h| halt(run, h))?;
    let checked = answer(run.link.say(&new, spec.timeout)).map_err(|h| halt(run, h))?;
    if let Some(e) = spec.error_line(&checked) {
        answer(run.link.say(&spec.drop, spec.timeout)).map_err(|h| halt(run, h))?;
        let back = run.goto(i).map_err(|h| halt(run, h));
        let kept = if back.is_ok() {
            "the goal was entered again with the recorded steps"
        } else {
            "entering the goal again failed"
        };
        return Err(format!("The joined proof failed when the whole block was checked ({e}); {kept}.\nProof:\n{proof}\n\n{checked}"));
    }
    let (written, why) = splice(run, &seg, &old, &new);
    let changed = diff_lines(&old, &new, run.cur.outline.line(seg.start));
    if written {
        let end = seg.start + new.len();
        let disk = std::mem::take(&mut run.cur.text);
        run.cur.text = format!("{}{new}{}", &disk[..seg.start], &disk[seg.end..]);
        run.cur.outline = Outline::of(&run.cur.text, spec);
        run.cur.loaded = run.cur.outline.count_before(end);
    } else {
        run.cur.loaded = i + 1;
    }
    run.cur.steps.clear();
    run.cur.current = None;
    let mut text = format!("Proof of {}:\n{proof}\n\n{why}\n{changed}", b.name);
    let Some(next) = run.cur.next_placeholder(spec, run.cur.loaded) else {
        text.push_str(&format!("\nNo placeholders left in {}.", run.cur.file));
        return Ok(text);
    };
    match run.goto(next) {
        Ok(g) => Ok(format!(
            "{text}\n{}{}\n{g}",
            failures(&run.cur),
            entered(&run.cur)
        )),
        Err(h) => Ok(format!(
            "{text}\nMoving to the next placeholder: {}",
            run.halted(h, "cursor_init")
        )),
    }
}

/// Writes the checked block over the old one when allowed and unchanged on disk.
fn splice(run: &Run<'_>, seg: &Segment, old: &str, new: &str) -> (bool, String) {
    let file = &run.cur.file;
    if !run.env.spec.write {
        return (false, format!("{file} was not written: this kind's cursor may not write files (manifest `write`)."));
    }
    let disk = match read_beneath(run.env.root, file) {
        Ok(d) => d,
        Err(e) => return (false, format!("{file} was not written: {e}")),
    };
    if disk.get(seg.start..seg.end) != Some(old)
        || disk.get(..seg.start) != run.cur.text.get(..seg.start)
    {
        return (false, format!("{file} was not written: the block changed on disk since it was loaded. Paste the proof yourself."));
    }
    let bytes = format!("{}{new}{}", &disk[..seg.start], &disk[seg.end..]);
    match replace_beneath(run.env.root, file, bytes.as_bytes()) {
        Ok(()) => (true, format!("Written to {file}:")),
        Err(e) => (false, format!("{file} was not written: {e}")),
    }
}

/// The lines that differ between two versions of a block starting at line `first`.
fn diff_lines(old: &str, new: &str, first: usize) -> String {
    let (o, n): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let head = o.iter().zip(&n).take_while(|(a, b)| a == b).count();
    let tail = o[head..]
        .iter()
        .rev()
        .zip(n[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = String::new();
    for (k, l) in o[head..o.len() - tail].iter().enumerate() {
        out.push_str(&format!("- {}: {l}\n", first + head + k));
    }
    for (k, l) in n[head..n.len() - tail].iter().enumerate() {
        out.push_str(&format!("+ {}: {l}\n", first + head + k));
    }
    out
}
