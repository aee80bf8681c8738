//! The smallest useful stdmcp server: one tool that reports progress and stops when cancelled.
//! This file is the README's API example.

use std::time::Duration;

use serde_json::json;
use stdmcp::{CallToolResult, Server, ToolDef, ToolError};

fn main() -> std::process::ExitCode {
    env_logger::init(); // logs go to stderr; stdout carries only protocol frames
    let count = ToolDef::new(
        "count",
        "Counts to n, one number a second.",
        json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 60}}, "required": ["n"]}),
        |ctx, args| {
            let n = args["n"]
                .as_u64()
                .ok_or_else(|| ToolError::msg("n must be an integer"))?;
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
