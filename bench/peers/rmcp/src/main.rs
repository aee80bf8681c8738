//! The benchmark tools served with the official Rust SDK, rmcp.
//!
//! `--transport stdio` (default) uses `rmcp::transport::stdio()`, tokio's
//! blocking-pool stdin/stdout; `--transport pipes` uses
//! `rmcp::transport::stdio_pipes()`, which drives pipe stdio on tokio's reactor.
use std::time::Duration;

use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::ProgressNotificationParam,
    service::RequestContext,
    tool, tool_handler, tool_router, transport,
};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct MsArgs {
    ms: u64,
}

fn cancelled() -> ErrorData {
    ErrorData::internal_error("cancelled", None)
}

#[derive(Clone)]
struct Peer {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Peer {
    #[tool(description = "Return the text unchanged")]
    async fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Sleep ms milliseconds, reporting progress every 100 ms")]
    async fn sleep(
        &self,
        Parameters(MsArgs { ms }): Parameters<MsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, ErrorData> {
        let token = ctx.meta.get_progress_token();
        let total = ms.div_ceil(100);
        let (mut left, mut done) = (ms, 0);
        while left > 0 {
            let step = left.min(100);
            tokio::select! {
                _ = ctx.ct.cancelled() => return Err(cancelled()),
                _ = tokio::time::sleep(Duration::from_millis(step)) => {}
            }
            left -= step;
            done += 1;
            if let Some(token) = &token {
                let progress = ProgressNotificationParam::new(token.clone(), done as f64)
                    .with_total(total as f64);
                let _ = ctx.peer.notify_progress(progress).await;
            }
        }
        Ok("slept".into())
    }

    #[tool(description = "Run the system `sleep` for ms milliseconds")]
    async fn spawn(
        &self,
        Parameters(MsArgs { ms }): Parameters<MsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, ErrorData> {
        let mut child = tokio::process::Command::new("sleep")
            .arg((ms as f64 / 1000.0).to_string())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        tokio::select! {
            _ = ctx.ct.cancelled() => {}
            status = child.wait() => {
                status.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                return Ok("spawned".into());
            }
        }
        // Cancelled: kill and reap the child now rather than leave it to kill_on_drop.
        let _ = child.kill().await;
        Err(cancelled())
    }

    #[tool(name = "true", description = "Run /bin/true (the command-tool benchmark: one spawn and reap per call)")]
    async fn run_true(&self) -> Result<String, ErrorData> {
        // Output captured (stdout and stderr piped), as a command tool returns it, and as
        // stdmcp's manifest tools and the Python peer's `anyio.run_process` do.
        let out = tokio::process::Command::new("/bin/true")
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        if !out.status.success() {
            return Err(ErrorData::internal_error(format!("/bin/true: {}", out.status), None));
        }
        Ok(format!("ok{}", String::from_utf8_lossy(&out.stdout)))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Peer {}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let kind = match args.iter().position(|a| a == "--transport") {
        Some(i) => args.get(i + 1).map(String::as_str).unwrap_or(""),
        None => "stdio",
    };
    let server = Peer { tool_router: Peer::tool_router() };
    let service = match kind {
        "stdio" => server.serve(transport::stdio()).await?,
        "pipes" => server.serve(transport::stdio_pipes()).await?,
        other => return Err(format!("unknown --transport {other:?} (stdio|pipes)").into()),
    };
    service.waiting().await?;
    Ok(())
}
