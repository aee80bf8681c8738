//! The smallest useful stdmcp server: one tool that reports progress and stops when cancelled.
//! This file is the README's API example; it builds in a new crate whose only dependency is
//! stdmcp (tests/server/hello_crate.rs builds it as such a crate).

use std::time::Duration;

use stdmcp::serde::Deserialize;
use stdmcp::{json, CallToolResult, Server, ToolDef, ToolError};

/// The tool's arguments: `input_schema` below describes them to the client.
#[derive(Deserialize)]
#[serde(crate = "stdmcp::serde")]
struct Count {
    n: u64,
}

fn main() -> std::process::ExitCode {
    stdmcp::init_logging(); // logs go to stderr; stdout carries only protocol frames
    let count = ToolDef::typed(
        "count",
        "Counts to n, one number a second.",
        json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 60}}, "required": ["n"]}),
        |ctx, Count { n }| {
            for i in 1..=n {
                if !ctx.sleep(Duration::from_secs(1)) {
                    return Err(ToolError::msg("cancelled")); // never sent: the client cancelled
                }
                ctx.progress(i as f64, Some(n as f64), Some(&format!("counted to {i}")));
            }
            Ok(CallToolResult::text(format!("counted to {n}")))
        },
    );
    Server::new("hello", "1.0").tool(count).serve_stdio()
}
