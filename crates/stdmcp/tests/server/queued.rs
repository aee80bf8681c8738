//! The runtime's waiting line (`Options::max_concurrent_calls`): a call cancelled while it waits
//! for a slot is never answered and never runs (tests/manifest/queued_deadlines.rs of the command has
//! queued calls that reach their deadline).
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use serde_json::{json, Value};

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
        .recv_timeout(crate::support::PATIENCE)
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
