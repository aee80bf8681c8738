//! `holmake` of `examples/hol4.json` with a real HOL4 (README "Log files"): a theory with one
//! failing proof returns the failure and the theory's log (`.hol/logs/demoTheory`), which the
//! `logs` and `log` tools then list and read; the same theory fixed builds. HOL4 comes from
//! `STDMCP_HOL4_BIN` (its bin directory); under CI it is required, elsewhere the test says it
//! is skipped.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use common::sessions::{call, example, is_error, ok, serve, text};
use common::{fixture, temp_dir};
use serde_json::json;

fn hol_bin() -> Option<PathBuf> {
    match std::env::var_os("STDMCP_HOL4_BIN").map(PathBuf::from) {
        Some(b) if b.join("Holmake").is_file() => Some(b),
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

#[test]
fn a_failing_proof_returns_the_failure_and_the_log_and_the_fixed_theory_builds() {
    let Some(bin) = hol_bin() else { return };
    let proofs = temp_dir("proofs");
    let demo = proofs.join("demo");
    std::fs::create_dir(&demo).unwrap();
    let script = demo.join("demoScript.sml");
    std::fs::copy(fixture("holmake/demoScript.sml"), &script).unwrap();
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(example("hol4.json")).unwrap()).unwrap();
    m["roots"]["proofs"] = json!(proofs);
    let manifest = temp_dir("manifest").join("hol4.json");
    std::fs::write(&manifest, m.to_string()).unwrap();
    let mut p = serve(&manifest, Some(&bin));

    let r = call(&mut p, 1, "holmake", json!({"workdir": "demo"}));
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(t.contains("holmake exited with code 1."), "{t}");
    assert!(t.contains("demoTheory") && t.contains("FAIL"), "{t}");
    assert!(t.contains("--- log .hol/logs/demoTheory ("), "{t}");
    let log_part = &t[t.find("--- log .hol/logs/demoTheory").unwrap()..];
    assert!(log_part.contains("succ_not_self"), "{t}");
    assert!(log_part.contains("\"workdir\":\"demo\""), "{t}");

    let r = call(
        &mut p,
        2,
        "logs",
        json!({"tool": "holmake", "workdir": "demo"}),
    );
    let names = r["result"]["structuredContent"]["logs"].clone();
    assert_eq!(names[0]["name"], ".hol/logs/demoTheory", "{r}");
    let log = ok(
        &mut p,
        3,
        "log",
        json!({"tool": "holmake", "workdir": "demo", "name": ".hol/logs/demoTheory"}),
    );
    let on_disk = std::fs::read_to_string(demo.join(".hol/logs/demoTheory")).unwrap();
    assert!(log.starts_with(&on_disk), "{log:?} vs {on_disk:?}");
    assert!(
        on_disk.contains("Tactic failure proving \"succ_not_self\""),
        "{on_disk}"
    );

    std::fs::copy(fixture("holmake/demoScript.fixed.sml"), &script).unwrap();
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
