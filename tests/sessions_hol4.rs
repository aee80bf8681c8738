//! `examples/hol4.json` end to end through `stdmcp serve`, with a real HOL4 (`hol --zero`):
//! goals proved step by step with g/e, and a long tactic stopped by an interrupt, a cancel and
//! a deadline. HOL4 comes from `STDMCP_HOL4_BIN` (its bin directory, which .ci/run builds); under
//! CI (`CI` set) it is required, elsewhere the tests say they are skipped.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use common::sessions::{
    cancel, deadline, example, interrupt, ok, persists_and_errors, send, serve, Kind,
};
use common::{temp_dir, Proc};
use serde_json::json;

fn hol_bin() -> Option<PathBuf> {
    let bin = std::env::var_os("STDMCP_HOL4_BIN").map(PathBuf::from);
    match bin {
        Some(b) if b.join("hol").is_file() => Some(b),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must build HOL4 and set STDMCP_HOL4_BIN (see .ci/run)"
            );
            eprintln!("SKIPPED: STDMCP_HOL4_BIN does not name a HOL4 bin directory");
            None
        }
    }
}

fn hol_serve() -> Option<Proc> {
    let bin = hol_bin()?;
    Some(serve(&example("hol4.json"), Some(&bin)))
}

fn hol() -> Kind {
    Kind {
        name: "hol",
        define: "val th = SPEC_ALL arithmeticTheory.ADD_COMM;",
        use_it: "concl th;",
        used: "m + n = n + m",
        fail: "e (simp [no_such_theorem]);",
        error: "no_such_theorem",
        runaway: "print \"partial\\n\";\ng `T`;\ne (REPEAT ALL_TAC);".into(),
        partial: "partial",
        after_runaway: "",
        interrupted: "Interrupt",
        crash: "OS.Process.exit OS.Process.failure : unit;",
        crash_code: 1,
    }
}

#[test]
fn a_goal_is_proved_step_by_step() {
    let Some(mut p) = hol_serve() else { return };
    ok(&mut p, 1, "hol_start", json!({}));
    let goal = send(&mut p, 2, "hol", "g `!n:num. n + 0 = n /\\ 0 + n = n`;");
    assert!(goal.contains("Initial goal"), "{goal:?}");
    let step = send(&mut p, 3, "hol", "e GEN_TAC;");
    assert!(step.contains("n + 0 = n"), "{step:?}");
    let split = send(&mut p, 4, "hol", "e CONJ_TAC;");
    assert!(split.contains("2 subgoals"), "{split:?}");
    let one = send(
        &mut p,
        5,
        "hol",
        "e (REWRITE_TAC [arithmeticTheory.ADD_0]);",
    );
    assert!(one.contains("Goal proved"), "{one:?}");
    let two = send(
        &mut p,
        6,
        "hol",
        "e (REWRITE_TAC [arithmeticTheory.ADD_CLAUSES]);",
    );
    assert!(two.contains("Initial goal proved"), "{two:?}");
    let th = send(&mut p, 7, "hol", "val th = top_thm ();");
    assert!(
        th.contains("⊢ ∀n. n + 0 = n ∧ 0 + n = n") || th.contains("|- !n."),
        "{th:?}"
    );
}

#[test]
fn the_workdir_is_inside_the_proofs_root() {
    let Some(mut p) = hol_serve() else { return };
    let greeting = ok(&mut p, 1, "hol_start", json!({}));
    assert!(greeting.contains("HOL4 [Trindemossen"), "{greeting:?}");
    assert!(!greeting.contains("error"), "{greeting:?}");
    let dir = send(&mut p, 2, "hol", "OS.FileSys.getDir ();");
    assert!(dir.contains("examples/proofs"), "{dir:?}");
    let refused = common::sessions::call(
        &mut p,
        3,
        "hol_start",
        json!({"session": "out", "workdir": ".."}),
    );
    assert!(common::sessions::is_error(&refused), "{refused}");
}

#[test]
fn state_persists_and_errors_are_answers() {
    let Some(mut p) = hol_serve() else { return };
    persists_and_errors(&mut p, &hol());
}

#[test]
fn an_interrupt_between_inputs_is_harmless() {
    let Some(mut p) = hol_serve() else { return };
    common::sessions::idle_interrupt(&mut p, &hol());
}

#[test]
fn an_exit_is_reported_and_start_restarts() {
    let Some(mut p) = hol_serve() else { return };
    common::sessions::crash(&mut p, &hol());
}

#[test]
fn an_interrupted_tactic_leaves_the_session_usable() {
    let Some(mut p) = hol_serve() else { return };
    interrupt(&mut p, &hol());
}

#[test]
fn a_cancelled_tactic_leaves_the_session_usable() {
    let Some(p) = hol_serve() else { return };
    cancel(p, &hol());
}

#[test]
fn a_tactic_past_its_deadline_leaves_the_session_usable() {
    let Some(mut p) = hol_serve() else { return };
    deadline(&mut p, &hol());
}

/// The `holmake` tool builds a theory in a directory of the root; a session there loads it.
#[test]
fn holmake_builds_a_theory_that_a_session_loads() {
    let Some(bin) = hol_bin() else { return };
    let proofs = temp_dir("proofs");
    std::fs::copy(
        example("proofs/demoScript.sml"),
        proofs.join("demoScript.sml"),
    )
    .unwrap();
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(example("hol4.json")).unwrap()).unwrap();
    m["roots"]["proofs"] = json!(proofs);
    let manifest = temp_dir("manifest").join("hol4.json");
    std::fs::write(&manifest, m.to_string()).unwrap();
    let mut p = serve(&manifest, Some(&bin));
    let built = ok(&mut p, 1, "holmake", json!({}));
    assert!(built.contains("demoTheory"), "{built:?}");
    ok(&mut p, 2, "hol_start", json!({}));
    send(&mut p, 3, "hol", "load \"demoTheory\";");
    let th = send(&mut p, 4, "hol", "demoTheory.double_even;");
    assert!(th.contains("EVEN (2 * n)"), "{th:?}");
}
