//! A call queued behind `maxConcurrentCalls` ends at its own deadline (README "Manifest",
//! `timeoutSeconds`: time spent queued counts), with a result that says it never started,
//! instead of waiting for a slot and then claiming a process group was killed.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests start bare programs as clients and controls

use std::time::Instant;

use crate::common::sessions::{is_error, text};
use crate::common::{serve_command, temp_dir, Proc};
use serde_json::{json, Value};

#[test]
fn a_queued_call_is_answered_at_its_deadline_as_never_started() {
    let dir = temp_dir("queued");
    let marker = dir.join("quick-ran");
    let m = json!({
        "name": "queue", "defaults": {"maxConcurrentCalls": 1},
        "tools": [
            {"name": "hold", "description": "holds the only slot", "program": "sleep",
             "args": ["600"], "timeoutSeconds": 900},
            {"name": "quick", "description": "touches a marker", "program": "touch",
             "args": [marker.to_str().unwrap()], "timeoutSeconds": 1.5}
        ]
    });
    let path = dir.join("m.json");
    std::fs::write(&path, m.to_string()).unwrap();
    let mut p = Proc::initialized(serve_command(&path), "2025-06-18");
    // The peer admits in arrival order: `hold` takes the slot, `quick` waits behind it.
    p.call(json!(1), "hold", json!({}), None);
    let sent = Instant::now();
    p.call(json!(2), "quick", json!({}), None);
    // Without the fix the answer only comes when `hold` ends (600 s): the harness's
    // patience (20 s) fails the test first.
    let r = p.response(&json!(2));
    let waited = sent.elapsed();
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    // The wait is read off the timer's wake-up, which a loaded machine may delay: at least
    // the deadline, in whole tenths.
    let rest = t
        .strip_prefix("quick never started: it waited ")
        .unwrap_or_else(|| panic!("{t}"));
    let (secs, rest) = rest.split_once(" s ").unwrap_or_else(|| panic!("{t}"));
    assert!(secs.parse::<f64>().unwrap() >= 1.5, "{t}");
    assert!(
        rest.starts_with("for a free slot behind 1 running call (at most 1 at once)"),
        "{t}"
    );
    assert!(
        t.contains("time limit of 1.5 s counts time spent queued"),
        "{t}"
    );
    assert!(!t.contains("killed"), "{t}");
    assert!(
        waited.as_secs_f64() >= 1.4,
        "answered before its deadline: {waited:?}"
    );
    // `hold` still runs (no answer yet); cancel it, then read everything to EOF.
    assert!(
        !p.backlog.iter().any(|m| m["id"] == 1),
        "hold ended: {:?}",
        p.backlog
    );
    p.notify("notifications/cancelled", json!({"requestId": 1}));
    let (rest, status) = p.finish();
    assert!(status.success(), "{status:?}");
    assert!(
        !rest.iter().any(|m: &Value| m["id"] == 2),
        "answered twice: {rest:?}"
    );
    assert!(
        !marker.exists(),
        "the queued call's program ran after its answer"
    );
}
