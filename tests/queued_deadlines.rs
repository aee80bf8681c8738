//! A call queued behind `maxConcurrentCalls` ends at its own deadline (README "Manifest",
//! `timeoutSeconds`: time spent queued counts), with a result that says it never started,
//! instead of waiting for a slot and then claiming a process group was killed.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests start bare programs as clients and controls

mod common;

use std::process::Command;
use std::time::Instant;

use common::sessions::{is_error, text};
use common::{stdmcp_bin, temp_dir, Proc};
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
    let mut cmd = Command::new(stdmcp_bin());
    cmd.arg("serve").arg("--config").arg(&path);
    let mut p = Proc::start(cmd);
    p.initialize("2025-06-18");
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

/// A call cancelled while it waits for a slot is never answered, and its handler never runs
/// (no process is started to be killed at once, no `onCancel` runs for it).
#[test]
fn a_call_cancelled_while_queued_never_runs() {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;
    use stdmcp::{CallToolResult, Options, Server, ToolDef};

    let runs = Arc::new(AtomicUsize::new(0));
    let (started_tx, started_rx) = crossbeam_channel::unbounded();
    let counted = Arc::clone(&runs);
    let server = Server::new("queue", "1")
        .tool(ToolDef::new(
            "hold",
            "holds the only slot",
            json!({"type": "object"}),
            move |ctx, _| {
                started_tx.send(()).unwrap();
                ctx.wait_cancelled(Instant::now() + Duration::from_secs(600));
                Ok(CallToolResult::text("held"))
            },
        ))
        .tool(ToolDef::new(
            "count",
            "counts its runs",
            json!({"type": "object"}),
            move |_, _| {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok(CallToolResult::text("counted"))
            },
        ))
        .options({
            let mut o = Options::default();
            o.max_concurrent_calls = 1;
            o
        });
    let (in_r, mut in_w) = std::io::pipe().unwrap();
    let (out_r, out_w) = std::io::pipe().unwrap();
    let serving = std::thread::spawn(move || server.serve(Box::new(in_r), Box::new(out_w)));
    let send = |w: &mut std::io::PipeWriter, v: Value| writeln!(w, "{v}").unwrap();
    send(
        &mut in_w,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
    );
    send(
        &mut in_w,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let call = |id: i64, name: &str| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}});
    let cancel = |id: i64| json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}});
    send(&mut in_w, call(1, "hold"));
    started_rx
        .recv_timeout(common::PATIENCE)
        .expect("hold never started");
    // `count` waits behind `hold`; it is cancelled there, then `hold` is, and stdin ends.
    send(&mut in_w, call(2, "count"));
    send(&mut in_w, cancel(2));
    send(&mut in_w, cancel(1));
    drop(in_w);
    let lines: Vec<Value> = BufReader::new(out_r)
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    serving.join().unwrap();
    assert_eq!(lines.len(), 1, "only initialize is answered: {lines:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the cancelled call ran");
}
