//! Flow control of `stdmcp serve` (the runtime's own flow-control tests run its `everything`
//! example): a manifest tool's progress to a slow reader at SIGTERM.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests start bare programs as clients and controls

use std::time::Duration;

use crate::common::paced::{check_progress, Client, Pace};
use crate::common::send_signal;
use serde_json::json;

/// The reproducer as written: a manifest tool `seq -f 'P %g' 1 100000` with progress
/// prefix `P`, a client reading 64 KiB every 30 ms, SIGTERM once progress flows. Whole frames
/// only, and the result of the call.
#[test]
fn a_slow_reader_at_sigterm_gets_the_manifest_tools_result() {
    let dir = crate::common::temp_dir("seq-progress");
    let manifest = dir.join("m.json");
    let tool = json!({"name": "seqp", "description": "counts", "program": "seq",
        "args": ["-f", "P %g", "1", "100000"], "progress": {"prefix": "P", "stream": "stdout"}});
    let m = json!({"name": "repro", "version": "1.0.0", "tools": [tool]});
    std::fs::write(&manifest, m.to_string()).unwrap();
    let mut cmd = crate::common::serve_command(&manifest);
    cmd.env("STDMCP_DRAIN_MS", "10000")
        .env("STDMCP_FLUSH_STALL_MS", "10000");
    let mut c = Client::spawn(cmd);
    c.handshake();
    c.pace(Pace::Slow {
        bytes: 64 * 1024,
        every: Duration::from_millis(30),
    });
    c.call_tool(1, "seqp", json!({}), Some("p"));
    c.recv_where("the first progress", |m| {
        m["params"]["progressToken"] == "p"
    });
    send_signal(c.child.id() as i32, 15);
    let (all, status) = c.read_to_exit();
    assert!(status.success(), "{status:?}");
    let r = all
        .iter()
        .find(|m| m["id"] == 1)
        .expect("the result was lost");
    assert_eq!(r["result"]["structuredContent"]["exitCode"], 0, "{r}");
    check_progress(&all);
}
