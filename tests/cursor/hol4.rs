//! The proof cursor of `examples/hol4.json` end to end through `stdmcp serve`, with a real
//! HOL4 (`hol --zero`): a script with three `cheat`s proved through the cursor tools only and
//! then built by Holmake; `start_at` and `goto`; a failed block reported while later blocks
//! still load; `hol_state_at`; `hol_check`; a cancelled load resumed; a killed HOL4 reloaded;
//! an edit behind the cursor detected. HOL4 comes from `STDMCP_HOL4_BIN` (its bin directory,
//! which .ci/run builds); under CI (`CI` set) it is required, elsewhere the tests say they are
//! skipped.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use crate::common::cursor::scenarios;
use crate::common::cursor::{
    call_through, fails, has_all, holmake, ok, proofs, serve_cursor, step,
};
use crate::common::sessions::{hol_bin, is_error, text};
use crate::common::Proc;
use serde_json::json;

/// The example served over `proofs` with HOL4 on PATH; calls longer than 5 s become jobs
/// (`call_through` waits for them), so that a slow machine never outwaits the test.
/// A server of examples/hol4.json over a fresh proofs root holding the fixtures `files`,
/// with HOL4's bin directory (`None` without HOL4).
struct Hol {
    bin: PathBuf,
    dir: PathBuf,
    p: Proc,
}

impl Hol {
    fn serve(files: &[&str]) -> Option<Hol> {
        let bin = hol_bin()?;
        let dir = proofs(files);
        let p = serve_cursor("hol4.json", &dir, Some(&bin), |k| {
            k["cursor"]["background"] = json!({"afterSeconds": 5});
        });
        Some(Hol { bin, dir, p })
    }
}

#[test]
fn three_cheats_are_proved_through_the_cursor_and_the_theory_builds() {
    let Some(Hol { bin, dir, mut p }) = Hol::serve(&["hol/threeScript.sml"]) else {
        return;
    };
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
    has_all(&init, &["Goal of add_zero", "n + 0 = n"]);

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
    has_all(&done, &["Goal of double_twice", "double n = 2 * n"]);
    joined.to_owned()
}

/// double_twice (after an undo) and uses_both (one step) proved and written.
fn prove_double_twice_and_uses_both(p: &mut Proc) {
    step(p, 8, "hol", "REWRITE_TAC [double_def]");
    let undone = ok(p, 9, "hol_cursor_undo", json!({}));
    has_all(&undone, &["double n = 2 * n", "Took back step 1"]);
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
    has_all(&out, &["threeTheory", "OK"]);
}

#[test]
fn start_at_and_goto_reach_a_named_theorem_forward_and_back() {
    let Some(Hol { mut p, .. }) = Hol::serve(&["hol/threeScript.sml"]) else {
        return;
    };
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
    has_all(&back, &["Rolled back", "Goal of add_zero"]);
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
    let Some(Hol { mut p, .. }) = Hol::serve(&["hol/mixedScript.sml"]) else {
        return;
    };
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
    let Some(Hol { mut p, .. }) = Hol::serve(&["hol/mixedScript.sml"]) else {
        return;
    };
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
    let Some(Hol { mut p, .. }) = Hol::serve(&["hol/mixedScript.sml"]) else {
        return;
    };
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
    has_all(before, &["1 subgoal", "a + b = b + a"]);
    assert!(after.contains("2 subgoals"), "{after}");
    assert_eq!(split["recorded"], json!(["rpt GEN_TAC"]), "{split}");
    // What is recorded is the state before the step: CONJ_TAC applies to it again.
    let next = step(&mut p, 2, "hol", "CONJ_TAC");
    has_all(&next, &["2 subgoals", "(step 2 recorded)"]);
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
    let Some(Hol { dir, p, .. }) = Hol::serve(&[]) else {
        return;
    };
    slow_script(&dir);
    scenarios::cancelled_load_resumes(p, "hol", "slowScript.sml", "block 3/11: slow3");
}

#[test]
fn a_killed_hol_is_noticed_and_the_script_is_loaded_again() {
    let Some(Hol { mut p, .. }) = Hol::serve(&["hol/threeScript.sml"]) else {
        return;
    };
    let init = json!({"file": "threeScript.sml"});
    let after = scenarios::killed_program_reloads(&mut p, "hol", init, ("GEN_TAC", "CONJ_TAC"));
    assert!(after.contains("0 + n = n"), "{after}");
}

#[test]
fn an_edit_behind_the_cursor_is_detected_and_reloaded() {
    let Some(Hol { dir, mut p, .. }) = Hol::serve(&["hol/threeScript.sml"]) else {
        return;
    };
    let edit = (
        "double (n:num) = n + n",
        "double (n:num) = n + n (* edited *)",
    );
    let at = (dir.as_path(), "threeScript.sml", "uses_both");
    let after = scenarios::edit_behind_reloads(&mut p, "hol", at, edit, "ALL_TAC");
    assert!(
        after.contains("threeScript.sml changed at line 20, in the part already loaded"),
        "{after}"
    );
}
