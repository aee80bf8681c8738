//! The proof cursor of `examples/rocq.json` with a real coqtop, over time: a cancelled load
//! resumed, a long load answered as a job with block heartbeats, a killed coqtop reloaded, an
//! edit behind the cursor detected, a step past its timeout (tests/cursor/rocq.rs has the
//! rest).
#![allow(clippy::unwrap_used)]

use std::path::Path;

use crate::common::cursor::scenarios;
use crate::common::cursor::{
    fails, has_all, ok, proofs, rocq_installed, serve_cursor, serve_rocq, step,
};
use crate::common::sessions::text;
use serde_json::json;

/// Twelve lemmas that take a while each, then a placeholder.
fn slow_file(dir: &Path) {
    let mut v = String::from("Require Import Arith.\n\n");
    for i in 1..=12 {
        v.push_str(&format!(
            "Lemma slow{i} : True.\nProof.\n  do 300000 idtac. exact I.\nQed.\n\n"
        ));
    }
    v.push_str("Lemma last : 1 + 1 = 2.\nProof.\nAdmitted.\n");
    std::fs::write(dir.join("Slow.v"), v).unwrap();
}

#[test]
fn a_cancelled_load_stops_at_a_whole_block_and_the_next_call_resumes() {
    if !rocq_installed() {
        return;
    }
    let dir = proofs(&[]);
    slow_file(&dir);
    let p = serve_rocq(&dir);
    scenarios::cancelled_load_resumes(p, "rocq", "Slow.v", "block 3/13: slow3");
}

#[test]
fn a_killed_coqtop_is_noticed_and_the_file_is_loaded_again() {
    if !rocq_installed() {
        return;
    }
    let dir = proofs(&["Three.v"]);
    let mut p = serve_rocq(&dir);
    let init = json!({"file": "Three.v", "start_at": "double"});
    let after = scenarios::killed_program_reloads(&mut p, "rocq", init, ("intros n.", "simpl."));
    assert!(after.contains("n + (n + 0) = n + n"), "{after}");
}

#[test]
fn an_edit_behind_the_cursor_is_detected_and_reloaded() {
    if !rocq_installed() {
        return;
    }
    let dir = proofs(&["Three.v"]);
    let mut p = serve_rocq(&dir);
    let edit = ("Lemma double :", "Lemma double (* edited *) :");
    let at = (dir.as_path(), "Three.v", "uses_both");
    let after = scenarios::edit_behind_reloads(&mut p, "rocq", at, edit, "intros n.");
    assert!(
        after.contains("Three.v changed at line 10, in the part already loaded"),
        "{after}"
    );
}

/// A load longer than the cursor's background delay (1 s here) becomes a job whose latest
/// lines say which block it loads; `job_wait` returns the goal.
#[test]
fn a_long_load_becomes_a_job_with_block_heartbeats() {
    if !rocq_installed() {
        return;
    }
    let dir = proofs(&[]);
    slow_file(&dir);
    let v = std::fs::read_to_string(dir.join("Slow.v")).unwrap();
    std::fs::write(
        dir.join("Slow.v"),
        v.replace("do 300000 idtac", "do 1500000 idtac"),
    )
    .unwrap();
    let mut p = serve_cursor("rocq.json", &dir, None, |k| {
        k["cursor"]["background"] = json!({"afterSeconds": 1});
    });
    p.call(
        json!(1),
        "rocq_cursor_init",
        json!({"file": "Slow.v"}),
        None,
    );
    let r = p.response(&json!(1));
    let job = &r["result"]["_meta"]["stdmcp/job"];
    assert_eq!(job["state"], json!("working"), "{r}");
    let id = job["id"].as_str().unwrap().to_owned();
    let mut n = 2;
    loop {
        p.call(json!(n), "job_wait", json!({"id": id, "seconds": 1}), None);
        let w = p.response(&json!(n));
        let meta = &w["result"]["_meta"]["stdmcp/job"];
        if meta["state"] == json!("working") {
            let lines = meta["lines"].to_string();
            assert!(lines.contains("block ") && lines.contains("/13: "), "{w}");
            n += 1;
            continue;
        }
        let t = text(&w);
        assert!(t.contains("Goal of last") && t.contains("1 + 1 = 2"), "{w}");
        break;
    }
    assert!(
        n > 2,
        "the load ended within the first wait: nothing seen of its heartbeats"
    );
}

/// A step past its timeout is interrupted, not recorded, and the goal is kept: the next step
/// works on it.
#[test]
fn a_step_past_its_timeout_keeps_the_goal() {
    if !rocq_installed() {
        return;
    }
    let dir = proofs(&["Three.v"]);
    let mut p = serve_rocq(&dir);
    ok(&mut p, 1, "rocq_cursor_init", json!({"file": "Three.v"}));
    step(&mut p, 2, "rocq", "intros n.");
    let t = fails(
        &mut p,
        3,
        "rocq_cursor_step",
        json!({"tactic": "do 1000000000 idtac.", "timeout": 1}),
    );
    has_all(
        &t,
        &[
            "interrupted after its timeout of 1 s",
            "the goal is as before",
        ],
    );
    let next = step(&mut p, 4, "rocq", "induction n; simpl; auto.");
    assert!(next.contains("The goal is proved (2 steps)"), "{next}");
    let unsent = fails(&mut p, 5, "rocq_cursor_step", json!({"tactic": "auto"}));
    assert!(unsent.contains("nothing was sent"), "{unsent}");
}
