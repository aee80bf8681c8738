//! A connected, initialized `stdmcp serve` for the benches that drive the real binary with
//! the blocking client (`sessions`, `portfolio`); started through `busy::spawn_pinned`.
#![allow(dead_code)] // each bench uses a part of it

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stdmcp::client::{Client, Event};
use stdmcp::mcp::{Implementation, ProtocolVersion};
use stdmcp::process::ServerProcess;

use super::busy;

/// A connected, initialized `stdmcp serve --config manifest`.
pub(crate) struct Server {
    proc: Option<ServerProcess>,
    pub(crate) client: Client,
    pub(crate) pid: u32,
}

impl Server {
    pub(crate) fn open(manifest: &Path) -> Result<Server, String> {
        let argv = vec![
            env!("CARGO_BIN_EXE_stdmcp").to_owned(),
            "serve".to_owned(),
            "--config".to_owned(),
            manifest.display().to_string(),
        ];
        let mut proc = busy::spawn_pinned(|| ServerProcess::spawn(&argv))
            .map_err(|e| format!("stdmcp: {e}"))?;
        let (out, inp) = proc.take_pipes();
        let mut s = Server {
            pid: proc.pid(),
            proc: Some(proc),
            client: Client::new(out, inp),
        };
        let info = Implementation::new("stdmcp-bench", env!("CARGO_PKG_VERSION"));
        let params = json!({
            "protocolVersion": ProtocolVersion::NEWEST_HANDSHAKE.as_str(),
            "capabilities": {},
            "clientInfo": info,
        });
        s.request("initialize", params)?;
        s.client
            .notify("notifications/initialized", json!({}))
            .map_err(|e| e.to_string())?;
        Ok(s)
    }

    pub(crate) fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self
            .client
            .send(method, params, false)
            .map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match self.client.next_event(Some(deadline)) {
                Ok(Event::Response(r)) if r.id == id => {
                    return r.result.map_err(|e| format!("{method}: {e}"))
                }
                Ok(_) => {}
                Err(e) => return Err(format!("{method}: {e}")),
            }
        }
    }

    /// A tool call that must succeed.
    pub(crate) fn call(&mut self, tool: &str, args: Value) -> Result<Value, String> {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}))?;
        if r["isError"] == json!(true) {
            return Err(format!("{tool}: {r}"));
        }
        Ok(r)
    }

    pub(crate) fn finish(mut self) {
        if let Some(p) = self.proc.take() {
            self.client.close();
            p.finish(Duration::from_secs(5));
        }
    }
}
