//! `K_cursor_complete`: the recorded steps joined into the proof, the whole block checked in
//! the session, written over the placeholder (atomically, when allowed and unchanged on
//! disk), and the cursor moved to the next placeholder.

use super::engine::Cursor;
use super::file::{read_beneath, replace_beneath};
use super::input::{answer, fill};
use super::ops::Run;
use super::outline::{with_proof, Block, Outline, Segment};
use super::reply::{Answer, Reply};
use super::report::{entered, failures};
use super::steps::need_goal;

/// `K_cursor_complete {}`.
pub(super) fn complete(env: &super::env::Env<'_>) -> Answer {
    let mut run = super::ops::begin(env, None)?;
    let reply = complete_in(&mut run);
    run.end(reply)
}

fn complete_in(run: &mut Run<'_>) -> Result<Reply, String> {
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
        return Err(joined_failed(
            run,
            i,
            (&seg, &b),
            (&new, &proof),
            (e, &checked),
        ));
    }
    // What the theorem, as checked, trusts (a cheated lemma it used, an axiom).
    let trusts = super::trust::of(&run.link, spec, &b.name).map_err(|h| halt(run, h))?;
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
    let trust = trusts
        .as_ref()
        .map(|t| format!("{}: {}.\n", b.name, super::trust::said(t)))
        .unwrap_or_default();
    let mut text = format!("Proof of {}:\n{proof}\n\n{trust}{why}\n{changed}", b.name);
    let mut reply = Reply::default()
        .with("theorem", b.name.as_str())
        .with("proof", proof.as_str())
        .with("written", written);
    if let Some(t) = &trusts {
        reply = reply.with("trusts", super::trust::fields(t));
    }
    let Some(next) = run.cur.next_placeholder(spec, run.cur.loaded) else {
        text.push_str(&format!("\nNo placeholders left in {}.", run.cur.file));
        reply.text = text;
        return Ok(reply);
    };
    match run.goto(next) {
        Ok(g) => {
            reply.text = format!("{text}\n{}{}\n{g}", failures(&run.cur), entered(&run.cur));
            Ok(reply.with("goals", g.as_str()))
        }
        Err(h) => {
            reply.text = format!(
                "{text}\nMoving to the next placeholder: {}",
                run.halted(h, "cursor_init")
            );
            Ok(reply)
        }
    }
}

/// The joined proof of block `i` (`new`, from `proof`) failed with `e` (answer `checked`):
/// where it breaks, found in the file as it would be written, and the goal entered again.
fn joined_failed(
    run: &mut Run<'_>,
    i: usize,
    (seg, b): (&Segment, &Block),
    (new, proof): (&str, &str),
    (e, checked): (String, &str),
) -> String {
    let spec = run.env.spec;
    let halt = |run: &mut Run<'_>, h| run.halted(h, "cursor_complete");
    if let Err(h) = answer(run.link.say(&spec.drop, spec.timeout)) {
        return halt(run, h);
    }
    // Where the joined proof breaks, found in the file as it would be written.
    let written = format!(
        "{}{new}{}",
        &run.cur.text[..seg.start],
        &run.cur.text[seg.end..]
    );
    let probe = Cursor::new(&run.cur.file, written, spec);
    let at = probe.outline.find(&b.name);
    let breaks = match at
        .map(|j| super::breaks::locate((&probe.text, &probe.outline), &run.link, spec, j))
    {
        Some(Ok(Some((_, text)))) => format!("; {text}"),
        Some(Err(h)) => return halt(run, h),
        _ => String::new(),
    };
    let e = format!("{e}{breaks}");
    let back = run.goto(i).map_err(|h| halt(run, h));
    let kept = if back.is_ok() {
        "the goal was entered again with the recorded steps"
    } else {
        "entering the goal again failed"
    };
    format!("The joined proof failed when the whole block was checked ({e}); {kept}.\nProof:\n{proof}\n\n{checked}")
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
