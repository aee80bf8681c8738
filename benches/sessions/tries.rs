//! `rocq_cursor_try` of 10 tactics against the same 10 tried one by one with
//! `rocq_cursor_step` and `rocq_cursor_undo` (20 calls), on the goal of
//! `examples/proofs/rocq/Demo.v` in a real coqtop: what a try saves an agent per goal.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::{json, Value};

use super::served::Server;
use super::{median, ms, root, Plan};

/// Ten tactics that each succeed on `forall n : nat, n + 0 = n` and leave a goal.
const TACTICS: [&str; 10] = [
    "intros n.",
    "intro.",
    "intros.",
    "idtac.",
    "cbn.",
    "simpl.",
    "intros n; simpl.",
    "intros n; idtac.",
    "try reflexivity.",
    "intros m.",
];

/// The example manifest with its `proofs` root at a fresh copy of `examples/proofs`.
fn manifest() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("stdmcp-bench-tries-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("proofs/rocq")).map_err(|e| e.to_string())?;
    std::fs::copy(
        root().join("examples/proofs/rocq/Demo.v"),
        dir.join("proofs/rocq/Demo.v"),
    )
    .map_err(|e| e.to_string())?;
    let text =
        std::fs::read_to_string(root().join("examples/rocq.json")).map_err(|e| e.to_string())?;
    let mut m: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    m["roots"]["proofs"]["path"] = json!(dir.join("proofs"));
    let path = dir.join("rocq.json");
    std::fs::write(&path, m.to_string()).map_err(|e| e.to_string())?;
    Ok(path)
}

/// One measurement of each way, on a fresh server: (try ms, step+undo ms).
fn once() -> Result<(f64, f64), String> {
    let mut s = Server::open(&manifest()?)?;
    s.call("rocq_cursor_init", json!({"file": "rocq/Demo.v"}))?;
    let t0 = Instant::now();
    s.call("rocq_cursor_try", json!({"tactics": TACTICS}))?;
    let tried = ms(t0.elapsed());
    let t0 = Instant::now();
    for t in TACTICS {
        s.call("rocq_cursor_step", json!({"tactic": t}))?;
        s.call("rocq_cursor_undo", json!({}))?;
    }
    let stepped = ms(t0.elapsed());
    s.finish();
    Ok((tried, stepped))
}

/// The figure: medians over `plan.reps` runs, and their ratio; `Null` without coqtop.
pub(super) fn measure(plan: &Plan) -> Result<Value, String> {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("coqtop").is_file()));
    if !on_path {
        eprintln!("bench: tries: n/a (no coqtop)");
        return Ok(Value::Null);
    }
    let (mut tried, mut stepped) = (Vec::new(), Vec::new());
    for _ in 0..plan.reps.max(3) {
        let (t, s) = once()?;
        tried.push(t);
        stepped.push(s);
    }
    let (t, s) = (median(tried), median(stepped));
    eprintln!("bench: 10 tactics: one try {t:.1} ms, 10 steps and undos {s:.1} ms");
    Ok(
        json!({"tactics": TACTICS.len(), "try_ms": t, "step_undo_ms": s, "calls_saved": 2 * TACTICS.len() - 1}),
    )
}
