//! `examples/hol4.json` end to end through `stdmcp serve`, with a real HOL4 (`hol --zero`):
//! goals proved step by step with g/e, and a long tactic stopped by an interrupt, a cancel and
//! a deadline; `holmake` builds theories, and returns a failing proof with the end of its log
//! (README "Log files"). HOL4 comes from `STDMCP_HOL4_BIN` (its bin directory, which .ci/run builds); under
//! CI (`CI` set) it is required, elsewhere the tests say they are skipped.
#![allow(clippy::unwrap_used)]

use crate::common::sessions::{
    call, cancel, deadline, example, hol_bin, interrupt, is_error, ok, persists_and_errors, send,
    serve, text, Kind,
};
use crate::common::{temp_dir, Proc};
use serde_json::json;

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
        fail_is_error: true,
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
    let refused = crate::common::sessions::call(
        &mut p,
        3,
        "hol_start",
        json!({"session": "out", "workdir": ".."}),
    );
    assert!(crate::common::sessions::is_error(&refused), "{refused}");
}

#[test]
fn state_persists_and_errors_are_answers() {
    let Some(mut p) = hol_serve() else { return };
    persists_and_errors(&mut p, &hol());
}

#[test]
fn an_interrupt_between_inputs_is_harmless() {
    let Some(mut p) = hol_serve() else { return };
    crate::common::sessions::idle_interrupt(&mut p, &hol());
}

#[test]
fn an_exit_is_reported_and_start_restarts() {
    let Some(mut p) = hol_serve() else { return };
    crate::common::sessions::crash(&mut p, &hol());
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

/// `examples/hol4.json` with its root `proofs` at `proofs`, served with HOL4 on PATH.
fn serve_proofs(proofs: &std::path::Path, bin: &std::path::Path) -> Proc {
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(example("hol4.json")).unwrap()).unwrap();
    m["roots"]["proofs"]["path"] = json!(proofs);
    let manifest = temp_dir("manifest").join("hol4.json");
    std::fs::write(&manifest, m.to_string()).unwrap();
    serve(&manifest, Some(bin))
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
    let mut p = serve_proofs(&proofs, &bin);
    let built = ok(&mut p, 1, "holmake", json!({}));
    assert!(built.contains("demoTheory"), "{built:?}");
    ok(&mut p, 2, "hol_start", json!({}));
    send(&mut p, 3, "hol", "load \"demoTheory\";");
    let th = send(&mut p, 4, "hol", "demoTheory.double_even;");
    assert!(th.contains("EVEN (2 * n)"), "{th:?}");
}

/// The demo theory of `examples/proofs` with one more theorem, `succ_not_self`, stated as
/// `statement`.
fn demo_with(statement: &str) -> String {
    let demo = std::fs::read_to_string(example("proofs/demoScript.sml")).unwrap();
    let extra = format!("Theorem succ_not_self:\n  {statement}\nProof\n  simp []\nQED\n\n");
    let at = demo.find("val _ = export_theory").unwrap();
    format!("{}{extra}{}", &demo[..at], &demo[at..])
}

/// `holmake` on a theory with one failing proof returns the failure and the theory's log
/// (`.hol/logs/demoTheory`), which `logs` and `log` list and read; the theory fixed builds.
#[test]
fn holmake_returns_a_failing_proof_with_its_log_and_the_fixed_theory_builds() {
    let Some(bin) = hol_bin() else { return };
    let proofs = temp_dir("proofs");
    let demo = proofs.join("demo");
    std::fs::create_dir(&demo).unwrap();
    let script = demo.join("demoScript.sml");
    std::fs::write(&script, demo_with("!n:num. SUC n = n")).unwrap();
    let mut p = serve_proofs(&proofs, &bin);

    let r = call(&mut p, 1, "holmake", json!({"workdir": "demo"}));
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(t.contains("holmake exited with code 1."), "{t}");
    assert!(t.contains("demoTheory") && t.contains("FAIL"), "{t}");
    let log_part = &t[t
        .find("--- log .hol/logs/demoTheory (")
        .unwrap_or_else(|| panic!("{t}"))..];
    assert!(log_part.contains("succ_not_self"), "{t}");
    assert!(log_part.contains("\"workdir\":\"demo\""), "{t}");

    let r = call(
        &mut p,
        2,
        "logs",
        json!({"tool": "holmake", "workdir": "demo"}),
    );
    let logs = r["result"]["structuredContent"]["logs"].clone();
    assert_eq!(logs[0]["name"], ".hol/logs/demoTheory", "{r}");
    let args = json!({"tool": "holmake", "workdir": "demo", "name": ".hol/logs/demoTheory"});
    let log = ok(&mut p, 3, "log", args);
    let on_disk = std::fs::read_to_string(demo.join(".hol/logs/demoTheory")).unwrap();
    assert!(log.starts_with(&on_disk), "{log:?} vs {on_disk:?}");
    assert!(
        on_disk.contains("Tactic failure proving \"succ_not_self\""),
        "{on_disk}"
    );

    std::fs::write(&script, demo_with("!n:num. SUC n <> n")).unwrap();
    let built = ok(
        &mut p,
        4,
        "holmake",
        json!({"workdir": "demo", "target": "demoTheory"}),
    );
    assert!(
        built.contains("demoTheory") && built.contains("OK"),
        "{built}"
    );
    assert!(
        !built.contains("--- log"),
        "a success carries no log: {built}"
    );
    assert!(demo.join(".hol/objs/demoTheory.sig").is_file());
}

/// `hol_start` on a running session answers with its goals (the kind's `status`,
/// `top_goals ();`), and an answer with an error is an `isError` result (the kind's `error`):
/// an exception, a static error, a syntax error, a failed `Theorem` block; a good one is not.
#[test]
fn start_shows_the_goals_and_errors_are_error_results() {
    let Some(mut p) = hol_serve() else { return };
    ok(&mut p, 1, "hol_start", json!({}));
    let none = ok(&mut p, 2, "hol_start", json!({}));
    assert!(
        none.contains("already running") && none.contains("NO_PROOFS"),
        "{none}"
    );
    send(&mut p, 3, "hol", "g `!n:num. n + 0 = n`;");
    let goals = ok(&mut p, 4, "hol_start", json!({}));
    assert!(
        goals.contains("Its status (top_goals ();)") && goals.contains("n + 0 = n"),
        "{goals}"
    );
    for (id, input, says) in [
        (5, "raise Fail \"boom\";", "Exception- Fail \"boom\" raised"),
        (6, "val z = no_such_value;", "Static Errors"),
        (7, "val y = (1;", "parse error at"),
        (8, FAILED_THEOREM, FAILED_THEOREM_SAYS),
    ] {
        let r = call(&mut p, id, "hol_send", json!({ "input": input }));
        assert!(is_error(&r), "{input}: {r}");
        let t = text(&r);
        assert!(t.contains(says), "{input}: {r}");
        if input == FAILED_THEOREM {
            assert!(t.contains("Exception-"), "{r}");
        }
    }
    let good = send(
        &mut p,
        9,
        "hol",
        "Theorem stdmcp_good:\n  !n:num. n + 0 = n\nProof\n  simp []\nQED\n",
    );
    assert!(good.contains("stdmcp_good"), "{good}");
}

/// A `Theorem` block whose proof fails, and what HOL4 answers to it.
/// (`boolLib.store_thm_at` raises `HOL_ERR` with "Failed to prove theorem \"NAME\"", which
/// the printer may break across lines: the name is what is sure to be whole.)
const FAILED_THEOREM: &str = "Theorem stdmcp_bad:\n  !n:num. SUC n = n\nProof\n  simp []\nQED\n";
const FAILED_THEOREM_SAYS: &str = "stdmcp_bad";

/// A heap saved in one session is a start parameter of another (`hol --holstate`), kept when
/// the session restarts.
#[test]
fn a_saved_heap_is_a_start_parameter() {
    let Some(bin) = hol_bin() else { return };
    let proofs = temp_dir("proofs");
    let mut p = serve_proofs(&proofs, &bin);
    ok(&mut p, 1, "hol_start", json!({}));
    send(&mut p, 2, "hol", "val stdmcp_saved = 42;");
    send(
        &mut p,
        3,
        "hol",
        "PolyML.SaveState.saveChild (\"saved.heap\", length (PolyML.SaveState.showHierarchy ()));",
    );
    let t = ok(
        &mut p,
        4,
        "hol_start",
        json!({"session": "b", "heap": "saved.heap"}),
    );
    assert!(t.contains("Started hol session `b`"), "{t}");
    let args = json!({"session": "b", "input": "stdmcp_saved;"});
    assert!(ok(&mut p, 5, "hol_send", args.clone()).contains("42"));
    let t = ok(&mut p, 6, "hol_restart", json!({"session": "b"}));
    assert!(t.starts_with("Restarted"), "{t}");
    assert!(ok(&mut p, 7, "hol_send", args).contains("42"));
    // Outside the root: refused, nothing started.
    let r = call(
        &mut p,
        8,
        "hol_start",
        json!({"session": "c", "heap": "/etc/passwd"}),
    );
    assert!(is_error(&r) && text(&r).contains("argument `heap`"), "{r}");
}

/// `holmake`'s `includes` (`Holmake -I`): a theory in one directory builds on a theory in
/// another, which is built first.
#[test]
fn holmake_includes_another_directory() {
    let Some(bin) = hol_bin() else { return };
    let proofs = temp_dir("proofs");
    for (dir, script) in [
        ("a", "open HolKernel Parse boolLib bossLib;\nval _ = new_theory \"a\";\nTheorem a_thm:\n  !n:num. n + 0 = n\nProof\n  simp []\nQED\nval _ = export_theory ();\n"),
        ("b", "open HolKernel Parse boolLib bossLib aTheory;\nval _ = new_theory \"b\";\nTheorem b_thm:\n  !n:num. (n + 0) + 0 = n\nProof\n  simp [a_thm]\nQED\nval _ = export_theory ();\n"),
    ] {
        std::fs::create_dir(proofs.join(dir)).unwrap();
        std::fs::write(proofs.join(dir).join(format!("{dir}Script.sml")), script).unwrap();
    }
    let mut p = serve_proofs(&proofs, &bin);
    // (Not after a failed build of b without it: Holmake then keeps the dependencies it found
    // and looks for aTheory without building it.)
    let built = ok(
        &mut p,
        2,
        "holmake",
        json!({"workdir": "b", "includes": "a"}),
    );
    assert!(built.contains("bTheory") && built.contains("OK"), "{built}");
    assert!(proofs.join("a/.hol/objs/aTheory.sig").is_file());
}
