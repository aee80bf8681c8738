//! The proof cursor of `examples/hol4.json` end to end through `stdmcp serve`, with a real
//! HOL4 (`hol --zero`): a script with three `cheat`s proved through the cursor tools only and
//! then built by Holmake; `start_at` and `goto`; a failed block reported while later blocks
//! still load; `hol_state_at`; `hol_check`; a cancelled load resumed; a killed HOL4 reloaded;
//! an edit behind the cursor detected. HOL4 comes from `STDMCP_HOL4_BIN` (its bin directory,
//! which .ci/run builds); under CI (`CI` set) it is required, elsewhere the tests say they are
//! skipped.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use crate::common::cursor::{
    call_through, call_until_progress, fails, holmake, ok, proofs, serve_cursor, session_pid, step,
};
use crate::common::sessions::{hol_bin, is_error, text};
use crate::common::{send_signal, wait_gone, Proc};
use serde_json::json;

/// The example served over `proofs` with HOL4 on PATH; calls longer than 5 s become jobs
/// (`call_through` waits for them), so that a slow machine never outwaits the test.
fn hol(proofs: &Path, bin: &Path) -> Proc {
    serve_cursor("hol4.json", proofs, Some(bin), |k| {
        k["cursor"]["background"] = json!({"afterSeconds": 5});
    })
}

#[test]
fn three_cheats_are_proved_through_the_cursor_and_the_theory_builds() {
    let Some(bin) = hol_bin() else { return };
    let dir = proofs(&["hol/threeScript.sml"]);
    let mut p = hol(&dir, &bin);
    let init = ok(
        &mut p,
        1,
        "hol_cursor_init",
        json!({"file": "threeScript.sml"}),
    );
    for name in [
        "add_zero lines 13-17 placeholder",
        "double_def lines 19-21 (not a goal)",
        "double_twice lines 23-27 placeholder",
        "uses_both lines 29-33 placeholder",
    ] {
        assert!(init.contains(name), "{init}");
    }
    assert!(!init.contains("fake") && !init.contains("FAILED"), "{init}");
    assert!(
        init.contains("Goal of add_zero") && init.contains("n + 0 = n"),
        "{init}"
    );

    let joined = prove_add_zero(&mut p);
    prove_double_twice_and_uses_both(&mut p);
    assert_written_and_built(&dir, &bin, &joined);
}

/// add_zero proved in four steps (a refused one between them), written, the next entered;
/// the proof as joined.
fn prove_add_zero(p: &mut Proc) -> String {
    step(p, 2, "hol", "GEN_TAC");
    let bad = fails(
        p,
        3,
        "hol_cursor_step",
        json!({"tactic": "REWRITE_TAC [no_such_theorem]"}),
    );
    assert!(bad.contains("not recorded"), "{bad}");
    let split = step(p, 4, "hol", "CONJ_TAC");
    assert!(split.contains("(step 2 recorded)"), "{split}");
    step(p, 5, "hol", "REWRITE_TAC [arithmeticTheory.ADD_0]");
    let last = step(p, 6, "hol", "REWRITE_TAC [arithmeticTheory.ADD_CLAUSES]");
    assert!(last.contains("The goal is proved"), "{last}");
    let done = ok(p, 7, "hol_cursor_complete", json!({}));
    let joined = "(GEN_TAC) >>> HEADGOAL (CONJ_TAC) >>> HEADGOAL (REWRITE_TAC [arithmeticTheory.ADD_0]) >>> HEADGOAL (REWRITE_TAC [arithmeticTheory.ADD_CLAUSES])";
    assert!(
        done.contains(joined) && done.contains("Written to threeScript.sml"),
        "{done}"
    );
    assert!(done.contains("- 16:   cheat\n+ 16:   (GEN_TAC)"), "{done}");
    assert!(
        done.contains("Goal of double_twice") && done.contains("double n = 2 * n"),
        "{done}"
    );
    joined.to_owned()
}

/// double_twice (after an undo) and uses_both (one step) proved and written.
fn prove_double_twice_and_uses_both(p: &mut Proc) {
    step(p, 8, "hol", "REWRITE_TAC [double_def]");
    let undone = ok(p, 9, "hol_cursor_undo", json!({}));
    assert!(
        undone.contains("double n = 2 * n") && undone.contains("Took back step 1"),
        "{undone}"
    );
    step(p, 10, "hol", "GEN_TAC");
    let proved = step(
        p,
        11,
        "hol",
        "REWRITE_TAC [double_def, arithmeticTheory.TIMES2]",
    );
    assert!(proved.contains("The goal is proved"), "{proved}");
    let done = ok(p, 12, "hol_cursor_complete", json!({}));
    assert!(done.contains("Goal of uses_both"), "{done}");

    let proved = step(
        p,
        13,
        "hol",
        "REWRITE_TAC [arithmeticTheory.ADD_0, double_twice]",
    );
    assert!(proved.contains("The goal is proved"), "{proved}");
    let done = ok(p, 14, "hol_cursor_complete", json!({}));
    assert!(done.contains("No placeholders left"), "{done}");
}

/// The file holds the proofs as written (one step without brackets) and Holmake builds it.
fn assert_written_and_built(dir: &Path, bin: &Path, joined: &str) {
    let sml = std::fs::read_to_string(dir.join("threeScript.sml")).unwrap();
    assert!(sml.contains(&format!("Proof\n  {joined}\nQED")), "{sml}");
    assert!(
        sml.contains(
            "Proof\n  (GEN_TAC) >>> HEADGOAL (REWRITE_TAC [double_def, arithmeticTheory.TIMES2])\nQED"
        ),
        "{sml}"
    );
    assert!(
        // One step is written as typed, without brackets around it.
        sml.contains("Proof\n  REWRITE_TAC [arithmeticTheory.ADD_0, double_twice]\nQED"),
        "{sml}"
    );
    assert_eq!(
        sml.matches("cheat").count(),
        1,
        "only the comment's is left: {sml}"
    );
    let out = holmake(bin, dir);
    assert!(out.contains("threeTheory") && out.contains("OK"), "{out}");
}

#[test]
fn start_at_and_goto_reach_a_named_theorem_forward_and_back() {
    let Some(bin) = hol_bin() else { return };
    let dir = proofs(&["hol/threeScript.sml"]);
    let mut p = hol(&dir, &bin);
    let init = ok(
        &mut p,
        1,
        "hol_cursor_init",
        json!({"file": "threeScript.sml", "start_at": "double_twice"}),
    );
    assert!(init.contains("Goal of double_twice"), "{init}");
    let fwd = ok(
        &mut p,
        2,
        "hol_cursor_goto",
        json!({"theorem": "uses_both"}),
    );
    assert!(
        fwd.contains("Goal of uses_both") && !fwd.contains("Rolled back"),
        "{fwd}"
    );
    let back = ok(&mut p, 3, "hol_cursor_goto", json!({"theorem": "add_zero"}));
    assert!(
        back.contains("Rolled back") && back.contains("Goal of add_zero"),
        "{back}"
    );
    let not_goal = fails(
        &mut p,
        4,
        "hol_cursor_goto",
        json!({"theorem": "double_def"}),
    );
    assert!(not_goal.contains("no theorem \"double_def\""), "{not_goal}");
}

#[test]
fn a_failed_block_is_reported_and_later_blocks_still_load() {
    let Some(bin) = hol_bin() else { return };
    let dir = proofs(&["hol/mixedScript.sml"]);
    let mut p = hol(&dir, &bin);
    let init = ok(
        &mut p,
        1,
        "hol_cursor_init",
        json!({"file": "mixedScript.sml"}),
    );
    assert!(init.contains("FAILED broken (lines 7-11)"), "{init}");
    assert!(
        init.contains("loaded again with its proof left to later"),
        "{init}"
    );
    assert_eq!(init.matches("FAILED").count(), 1, "{init}");
    assert!(init.contains("Goal of left_open"), "{init}");
}

#[test]
fn check_reports_ok_failed_and_placeholder_per_theorem() {
    let Some(bin) = hol_bin() else { return };
    let dir = proofs(&["hol/mixedScript.sml"]);
    let mut p = hol(&dir, &bin);
    let r = call_through(&mut p, 1, "hol_check", json!({"file": "mixedScript.sml"}));
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(t.contains("broken (lines 7-11): FAILED"), "{t}");
    assert!(t.contains("1 + 1 = 3"), "the failing goal: {t}");
    assert!(t.contains("uses_broken (lines 13-17): OK"), "{t}");
    assert!(t.contains("left_open (lines 19-23): placeholder"), "{t}");
    assert!(t.contains("swap (lines 25-32): OK"), "{t}");
}

#[test]
fn state_at_gives_the_goals_before_and_after_the_step_at_a_line_or_column() {
    let Some(bin) = hol_bin() else { return };
    let dir = proofs(&["hol/mixedScript.sml"]);
    let mut p = hol(&dir, &bin);
    let at = |p: &mut Proc, id, line, column: Option<u64>| {
        let mut args = json!({"file": "mixedScript.sml", "line": line});
        if let Some(c) = column {
            args["column"] = json!(c);
        }
        let r = call_through(p, id, "hol_state_at", args);
        assert!(!is_error(&r), "{r}");
        r["result"]["structuredContent"].clone()
    };
    // Line 29 is `  CONJ_TAC`: the second step of the chain.
    let split = at(&mut p, 1, 29, None);
    assert_eq!(split["theorem"], json!("swap"), "{split}");
    assert_eq!(split["step"]["index"], json!(2), "{split}");
    assert_eq!(split["step"]["text"], json!("CONJ_TAC"), "{split}");
    let before = split["before"].as_str().unwrap();
    let after = split["after"].as_str().unwrap();
    assert!(
        before.contains("1 subgoal") && before.contains("a + b = b + a"),
        "{before}"
    );
    assert!(after.contains("2 subgoals"), "{after}");
    assert_eq!(split["recorded"], json!(["rpt GEN_TAC"]), "{split}");
    // What is recorded is the state before the step: CONJ_TAC applies to it again.
    let next = step(&mut p, 2, "hol", "CONJ_TAC");
    assert!(
        next.contains("2 subgoals") && next.contains("(step 2 recorded)"),
        "{next}"
    );
    // The first step, at its line, with nothing before it.
    let first = at(&mut p, 3, 28, None);
    assert_eq!(first["step"]["index"], json!(1), "{first}");
    assert!(
        first["before"].as_str().unwrap().contains("Initial goal"),
        "{first}"
    );
    assert_eq!(first["recorded"], json!([]), "{first}");
    // A column picks the step it falls in.
    let third = at(&mut p, 4, 30, Some(3));
    assert_eq!(third["step"]["index"], json!(3), "{third}");
}

/// Ten theorems that take a while each, then a cheat.
fn slow_script(dir: &Path) {
    let mut s =
        String::from("open HolKernel Parse boolLib bossLib;\n\nval _ = new_theory \"slow\";\n\n");
    for i in 1..=10 {
        s.push_str(&format!(
            "Theorem slow{i}:\n  T\nProof\n  (fn g => (OS.Process.sleep (Time.fromMilliseconds 300); ACCEPT_TAC TRUTH g))\nQED\n\n"
        ));
    }
    s.push_str("Theorem last:\n  1 + 1 = 2\nProof\n  cheat\nQED\n");
    std::fs::write(dir.join("slowScript.sml"), s).unwrap();
}

#[test]
fn a_cancelled_load_stops_at_a_whole_block_and_the_next_call_resumes() {
    let Some(bin) = hol_bin() else { return };
    let dir = proofs(&[]);
    slow_script(&dir);
    let mut p = hol(&dir, &bin);
    call_until_progress(
        &mut p,
        1,
        "hol_cursor_init",
        json!({"file": "slowScript.sml"}),
        "block 3/11: slow3",
    );
    p.notify(
        "notifications/cancelled",
        json!({"requestId": 1, "reason": "test"}),
    );
    let again = ok(
        &mut p,
        2,
        "hol_cursor_init",
        json!({"file": "slowScript.sml"}),
    );
    assert!(
        again.contains("Resuming: the previous cursor call stopped before block"),
        "{again}"
    );
    assert!(
        again.contains("(cancelled)") && again.contains("Goal of last"),
        "{again}"
    );
    assert!(!again.contains("FAILED"), "{again}");
    let (rest, _) = p.finish();
    assert!(
        rest.iter().all(|m| m.get("id") != Some(&json!(1))),
        "{rest:?}"
    );
}

#[test]
fn a_killed_hol_is_noticed_and_the_script_is_loaded_again() {
    let Some(bin) = hol_bin() else { return };
    let dir = proofs(&["hol/threeScript.sml"]);
    let mut p = hol(&dir, &bin);
    ok(
        &mut p,
        1,
        "hol_cursor_init",
        json!({"file": "threeScript.sml"}),
    );
    step(&mut p, 2, "hol", "GEN_TAC");
    let pid = session_pid(&mut p, 3, "default");
    send_signal(pid, 9);
    wait_gone(&[pid]);
    let after = step(&mut p, 4, "hol", "CONJ_TAC");
    assert!(
        after.contains(&format!("(pid {pid}) is gone or was restarted")),
        "{after}"
    );
    assert!(
        after.contains("(step 2 recorded)") && after.contains("0 + n = n"),
        "{after}"
    );
}

#[test]
fn an_edit_behind_the_cursor_is_detected_and_reloaded() {
    let Some(bin) = hol_bin() else { return };
    let dir = proofs(&["hol/threeScript.sml"]);
    let mut p = hol(&dir, &bin);
    ok(
        &mut p,
        1,
        "hol_cursor_init",
        json!({"file": "threeScript.sml", "start_at": "uses_both"}),
    );
    let path = dir.join("threeScript.sml");
    let sml = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        sml.replace(
            "double (n:num) = n + n",
            "double (n:num) = n + n (* edited *)",
        ),
    )
    .unwrap();
    let status = ok(&mut p, 2, "hol_cursor_status", json!({}));
    assert!(status.contains("CHANGED in the loaded part"), "{status}");
    let after = step(&mut p, 3, "hol", "simp []");
    assert!(
        after.contains("threeScript.sml changed at line 20, in the part already loaded"),
        "{after}"
    );
}
