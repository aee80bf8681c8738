//! The proof cursor of `examples/rocq.json` end to end through `stdmcp serve`, with a real
//! coqtop (Debian `coq`, 8.16): a file with three `Admitted.` proved through the cursor tools
//! only and then built by `coqc`; `start_at` and `goto`; a failed block reported while later
//! blocks still load; `rocq_state_at`; `rocq_check`; writing only when allowed, files only
//! inside the root (tests/cursor/rocq_runs.rs has the behaviour over time).
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // the test runs coqc itself, as a user would

use std::process::Command;

use crate::common::cursor::{
    call_through, fails, has_all, ok, proofs, rocq_installed, serve_cursor, serve_rocq, step,
};
use crate::common::sessions::{is_error, started_pid, text};
use crate::common::Proc;
use serde_json::{json, Value};

#[test]
fn three_placeholders_are_proved_through_the_cursor_and_the_file_builds() {
    if !rocq_installed() {
        return;
    }
    let dir = proofs(&["Three.v"]);
    let mut p = serve_rocq(&dir);
    let init = ok(&mut p, 1, "rocq_cursor_init", json!({"file": "Three.v"}));
    for name in [
        "add_zero lines 6-8 placeholder",
        "double lines 10-12 placeholder",
        "uses_both lines 16-18 placeholder",
    ] {
        assert!(init.contains(name), "{init}");
    }
    assert!(
        !init.contains("fake") && !init.contains("in_string"),
        "{init}"
    );
    has_all(&init, &["Goal of add_zero", "forall n : nat, n + 0 = n"]);

    prove_add_zero(&mut p);
    prove_double_and_uses_both(&mut p);
    assert_written_and_built(&dir);
}

/// add_zero proved (a refused step and an undo on the way), its status, written; the next
/// goal entered.
fn prove_add_zero(p: &mut Proc) {
    step(p, 2, "rocq", "intros n.");
    let bad = fails(
        p,
        3,
        "rocq_cursor_step",
        json!({"tactic": "apply no_such_lemma."}),
    );
    assert!(bad.contains("not recorded"), "{bad}");
    step(p, 4, "rocq", "induction n.");
    let undone = ok(p, 5, "rocq_cursor_undo", json!({}));
    has_all(&undone, &["n + 0 = n", "Took back step 2"]);
    step(p, 6, "rocq", "induction n.");
    step(p, 7, "rocq", "- reflexivity.");
    let last = step(p, 8, "rocq", "- simpl. rewrite IHn. reflexivity.");
    assert!(last.contains("The goal is proved"), "{last}");
    let status = ok(p, 9, "rocq_cursor_status", json!({}));
    has_all(
        &status,
        &["Current theorem: add_zero", "Recorded steps (4)"],
    );

    let done = ok(p, 10, "rocq_cursor_complete", json!({}));
    assert!(done.contains("Written to Three.v"), "{done}");
    assert!(
        done.contains("- 8: Admitted.\n+ 8:   intros n.\n+ 9:   induction n."),
        "{done}"
    );
    has_all(&done, &["Goal of double", "2 * n = n + n"]);
}

/// double and uses_both proved and written.
fn prove_double_and_uses_both(p: &mut Proc) {
    step(p, 11, "rocq", "intros n.");
    step(p, 12, "rocq", "simpl.");
    let proved = step(p, 13, "rocq", "rewrite Nat.add_0_r. reflexivity.");
    assert!(proved.contains("The goal is proved"), "{proved}");
    let done = ok(p, 14, "rocq_cursor_complete", json!({}));
    assert!(done.contains("Goal of uses_both"), "{done}");

    step(p, 15, "rocq", "intros n.");
    step(p, 16, "rocq", "rewrite add_zero.");
    step(p, 17, "rocq", "apply double.");
    let done = ok(p, 18, "rocq_cursor_complete", json!({}));
    assert!(done.contains("No placeholders left"), "{done}");
}

/// The file holds the three proofs, the comment's and the string's placeholders untouched,
/// and coqc builds it.
fn assert_written_and_built(dir: &std::path::Path) {
    let v = std::fs::read_to_string(dir.join("Three.v")).unwrap();
    assert_eq!(
        v.matches("Proof.\nAdmitted.").count(),
        2,
        "only the comment's and the string's: {v}"
    );
    for proof in [
        "Proof.\n  intros n.\n  induction n.\n  - reflexivity.\n  - simpl. rewrite IHn. reflexivity.\nQed.",
        "Proof.\n  intros n.\n  simpl.\n  rewrite Nat.add_0_r. reflexivity.\nQed.",
        "Proof.\n  intros n.\n  rewrite add_zero.\n  apply double.\nQed.",
    ] {
        assert!(v.contains(proof), "{proof:?} not in\n{v}");
    }
    // The comments and the strings keep their fake placeholders.
    has_all(
        &v,
        &[
            "Lemma fake : False.\nProof.\nAdmitted.",
            "Lemma in_string2 : False.\nProof.\nAdmitted.",
        ],
    );
    let built = Command::new("coqc")
        .arg("Three.v")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "coqc: {}",
        String::from_utf8_lossy(&built.stderr)
    );
}

#[test]
fn start_at_and_goto_reach_a_named_theorem_forward_and_back() {
    if !rocq_installed() {
        return;
    }
    let dir = proofs(&["Three.v"]);
    let mut p = serve_rocq(&dir);
    let init = ok(
        &mut p,
        1,
        "rocq_cursor_init",
        json!({"file": "Three.v", "start_at": "double"}),
    );
    has_all(&init, &["Goal of double", "2 * n = n + n"]);
    let fwd = ok(
        &mut p,
        2,
        "rocq_cursor_goto",
        json!({"theorem": "uses_both"}),
    );
    assert!(
        fwd.contains("Goal of uses_both") && !fwd.contains("Rolled back"),
        "{fwd}"
    );
    step(&mut p, 3, "rocq", "intros n.");
    let back = ok(
        &mut p,
        4,
        "rocq_cursor_goto",
        json!({"theorem": "add_zero"}),
    );
    has_all(&back, &["Rolled back", "Goal of add_zero"]);
    let status = ok(&mut p, 5, "rocq_cursor_status", json!({}));
    has_all(
        &status,
        &["Current theorem: add_zero", "Recorded steps (0)"],
    );
    let none = fails(&mut p, 6, "rocq_cursor_goto", json!({"theorem": "nope"}));
    has_all(
        &none,
        &["no theorem \"nope\"", "add_zero, double, uses_both"],
    );
}

#[test]
fn a_failed_block_is_reported_and_later_blocks_still_load() {
    if !rocq_installed() {
        return;
    }
    let dir = proofs(&["Mixed.v"]);
    let mut p = serve_rocq(&dir);
    let init = ok(&mut p, 1, "rocq_cursor_init", json!({"file": "Mixed.v"}));
    assert!(
        init.contains(
            "FAILED broken (lines 5-8): Error: The reference no_such_lemma was not found"
        ),
        "{init}"
    );
    assert!(
        init.contains("loaded again with its proof left to later"),
        "{init}"
    );
    // uses_broken needs the name broken: it loaded, so only broken failed.
    assert_eq!(init.matches("FAILED").count(), 1, "{init}");
    assert!(init.contains("Goal of left_open"), "{init}");
    let proved = step(&mut p, 2, "rocq", "reflexivity.");
    assert!(proved.contains("The goal is proved"), "{proved}");
    // A check after the cursor reports the blocks it loaded with their verdicts too.
    let r = call_through(&mut p, 3, "rocq_check", json!({"file": "Mixed.v"}));
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    has_all(
        &t,
        &[
            "broken (lines 5-8): FAILED: Error: The reference no_such_lemma",
            "(loaded before this check)",
        ],
    );
    assert!(
        t.contains(
            "uses_broken (lines 10-13): OK, but it trusts axiom broken (loaded before this check)"
        ),
        "{t}"
    );
    assert!(t.contains("left_open (lines 15-17): placeholder\n"), "{t}");
    assert!(t.contains("swap (lines 19-25): OK"), "{t}");
}

#[test]
fn check_reports_ok_failed_and_placeholder_per_theorem() {
    if !rocq_installed() {
        return;
    }
    let dir = proofs(&["Mixed.v"]);
    let mut p = serve_rocq(&dir);
    let r = call_through(&mut p, 1, "rocq_check", json!({"file": "Mixed.v"}));
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(
        t.contains("broken (lines 5-8): FAILED: Error: The reference no_such_lemma"),
        "{t}"
    );
    assert!(t.contains("uses_broken (lines 10-13): OK"), "{t}");
    assert!(t.contains("left_open (lines 15-17): placeholder"), "{t}");
    assert!(t.contains("swap (lines 19-25): OK"), "{t}");
    let one = ok(
        &mut p,
        2,
        "rocq_check",
        json!({"file": "Mixed.v", "theorem": "swap"}),
    );
    assert!(
        one.contains("\nswap (lines 19-25): OK, proved outright"),
        "{one}"
    );
    assert!(
        !one.contains("FAILED"),
        "blocks loaded only to reach swap are no verdict: {one}"
    );
}

#[test]
fn state_at_gives_the_goals_before_and_after_the_sentence_at_a_line() {
    if !rocq_installed() {
        return;
    }
    let dir = proofs(&["Mixed.v"]);
    let mut p = serve_rocq(&dir);
    let at = |p: &mut Proc, id, args: Value| {
        let r = call_through(p, id, "rocq_state_at", args);
        assert!(!is_error(&r), "{r}");
        r["result"]["structuredContent"].clone()
    };
    // Line 22 is `  split.`: the second sentence of swap's proof.
    let split = at(&mut p, 1, json!({"file": "Mixed.v", "line": 22}));
    assert_eq!(split["theorem"], json!("swap"), "{split}");
    assert_eq!(split["step"]["index"], json!(2), "{split}");
    assert_eq!(split["step"]["of"], json!(4), "{split}");
    assert_eq!(split["step"]["text"], json!("split."), "{split}");
    let before = split["before"].as_str().unwrap();
    let after = split["after"].as_str().unwrap();
    has_all(before, &["1 goal", "a + b = b + a /\\ True"]);
    has_all(after, &["2 goals", "goal 2 is:"]);
    assert_eq!(split["recorded"], json!(["intros a b."]), "{split}");
    // The state before the step is recorded: another step goes in its place.
    let other = step(&mut p, 2, "rocq", "split; [apply Nat.add_comm | exact I].");
    assert!(other.contains("The goal is proved"), "{other}");
    // A column on a line of two sentences picks the one it falls in.
    let two = at(
        &mut p,
        3,
        json!({"file": "Mixed.v", "line": 23, "column": 5}),
    );
    assert_eq!(two["step"]["text"], json!("- apply Nat.add_comm."), "{two}");
    let outside = fails(
        &mut p,
        4,
        "rocq_state_at",
        json!({"file": "Mixed.v", "line": 3}),
    );
    assert!(outside.contains("in no block"), "{outside}");
}

#[test]
fn a_started_session_is_shared_with_rocq_send() {
    if !rocq_installed() {
        return;
    }
    let dir = proofs(&["Three.v"]);
    let mut p = serve_rocq(&dir);
    ok(&mut p, 1, "rocq_cursor_init", json!({"file": "Three.v"}));
    let sent = ok(&mut p, 2, "rocq_send", json!({"input": "Show."}));
    assert!(sent.contains("forall n : nat, n + 0 = n"), "{sent}");
    let started = ok(&mut p, 3, "rocq_start", json!({}));
    assert!(started_pid(&started) > 0, "{started}");
}

#[test]
fn stdmcp_check_prints_the_cursor() {
    if !rocq_installed() {
        return;
    }
    let out = Command::new(crate::common::stdmcp_bin())
        .arg("check")
        .arg(crate::common::sessions::example("rocq.json"))
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("cursor: tools rocq_cursor_init, rocq_cursor_step, rocq_cursor_try, rocq_cursor_undo, rocq_cursor_complete, rocq_cursor_goto, rocq_cursor_reenter, rocq_cursor_status, rocq_state_at, rocq_check, rocq_search"), "{t}");
    assert!(
        t.contains("project: _CoqProject found upward from the proof file"),
        "{t}"
    );
    assert!(
        t.contains("build: dependencies found by the make-style rules of"),
        "{t}"
    );
    assert!(
        t.contains(
            "files under root proofs, proofs written into them; placeholder /\\bAdmitted\\./"
        ),
        "{t}"
    );
    assert!(
        t.contains("enter \"{header}\", step \"{tactic}\", undo \"Undo.\""),
        "{t}"
    );
}

/// The walk-through of README "Proof files" on `examples/proofs/rocq/Demo.v` (a copy).
#[test]
fn the_readme_walk_through_works() {
    if !rocq_installed() {
        return;
    }
    let dir = proofs(&[]);
    std::fs::create_dir(dir.join("rocq")).unwrap();
    let demo = crate::common::sessions::example("proofs/rocq/Demo.v");
    std::fs::copy(demo, dir.join("rocq/Demo.v")).unwrap();
    let mut p = serve_rocq(&dir);
    let init = ok(
        &mut p,
        1,
        "rocq_cursor_init",
        json!({"file": "rocq/Demo.v"}),
    );
    eprintln!("{init}");
    assert!(init.starts_with("rocq/Demo.v: 2 blocks, loaded to line 4.\n  add_zero_right lines 5-7 placeholder  <- cursor\n  add_comm_demo lines 9-12\n"), "{init}");
    for t in ["intros n.", "induction n.", "- reflexivity."] {
        step(&mut p, 2, "rocq", t);
    }
    let proved = step(&mut p, 3, "rocq", "- simpl. rewrite IHn. reflexivity.");
    assert!(proved.contains("The goal is proved"), "{proved}");
    let done = ok(&mut p, 4, "rocq_cursor_complete", json!({}));
    has_all(&done, &["Written to rocq/Demo.v", "No placeholders left"]);
    let built = Command::new("coqc")
        .arg("Demo.v")
        .current_dir(dir.join("rocq"))
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
}

/// `complete` writes nothing when the block changed on disk since it was loaded, or when
/// the manifest does not allow writing; it still returns the proof.
#[test]
fn complete_writes_only_an_unchanged_block_and_only_when_allowed() {
    if !rocq_installed() {
        return;
    }
    let dir = proofs(&["Three.v"]);
    let mut p = serve_rocq(&dir);
    ok(&mut p, 1, "rocq_cursor_init", json!({"file": "Three.v"}));
    step(&mut p, 2, "rocq", "intros n. induction n; simpl; auto.");
    let path = dir.join("Three.v");
    let edited = std::fs::read_to_string(&path).unwrap().replace(
        "Lemma add_zero : forall n : nat, n + 0 = n.\nProof.\nAdmitted.",
        "Lemma add_zero : forall n : nat, n + 0 = n.\nProof.\n  (* mine *)\nAdmitted.",
    );
    std::fs::write(&path, &edited).unwrap();
    let done = ok(&mut p, 3, "rocq_cursor_complete", json!({}));
    assert!(
        done.contains("add_zero changed on disk since its goal was entered: rocq_cursor_reenter"),
        "{done}"
    );
    assert!(
        done.contains("Three.v was not written: the block changed on disk"),
        "{done}"
    );
    assert!(
        done.contains("Proof of add_zero:\nintros n. induction n; simpl; auto."),
        "{done}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), edited);

    let dir = proofs(&["Three.v"]);
    let mut p = serve_cursor("rocq.json", &dir, None, |k| {
        k["cursor"]["write"] = json!(false);
    });
    ok(&mut p, 1, "rocq_cursor_init", json!({"file": "Three.v"}));
    step(&mut p, 2, "rocq", "intros n. induction n; simpl; auto.");
    let done = ok(&mut p, 3, "rocq_cursor_complete", json!({}));
    assert!(
        done.contains("this kind's cursor may not write files"),
        "{done}"
    );
    assert!(done.contains("Goal of double"), "{done}");
    let v = std::fs::read_to_string(dir.join("Three.v")).unwrap();
    assert_eq!(
        v,
        std::fs::read_to_string(crate::common::cursor::fixture("Three.v")).unwrap()
    );
}

/// A file outside the root, through `..` or a symlink, is refused before anything runs.
#[test]
fn files_outside_the_root_are_refused() {
    if !rocq_installed() {
        return;
    }
    let dir = proofs(&["Three.v"]);
    let outside = crate::common::temp_dir("outside");
    std::fs::copy(
        crate::common::cursor::fixture("Three.v"),
        outside.join("Out.v"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.join("Out.v"), dir.join("Link.v")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("up")).unwrap();
    let mut p = serve_rocq(&dir);
    for (id, file) in [
        (1, "../outside/Out.v"),
        (2, "Link.v"),
        (3, "up/Out.v"),
        (4, "/etc/passwd"),
    ] {
        let t = fails(&mut p, id, "rocq_cursor_init", json!({"file": file}));
        assert!(
            t.contains("refused") || t.contains("without `..`"),
            "{file}: {t}"
        );
    }
    let r = call_through(&mut p, 5, "sessions", json!({}));
    assert_eq!(
        r["result"]["structuredContent"]["sessions"],
        json!([]),
        "{r}"
    );
}
