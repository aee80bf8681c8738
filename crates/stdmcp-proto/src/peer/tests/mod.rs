#![allow(clippy::unwrap_used)]
//! Peer tests with fake time: frames in, effects out, nothing else.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::*;
use crate::framing::{Frame, Framing};
use crate::jsonrpc::{self, RequestId};
use crate::mcp::{CallToolResult, Implementation, Prompt, Resource, Tool};

mod admission;
mod calls;
mod client;
mod edges;
mod eras;
mod jobs;
mod mrtr;
mod slots;
mod timers;
use super::timers::{Kind, Subject};
use crate::framing::FrameDecoder;
use crate::mcp::{LogLevel, PromptArgument, ToolAnnotations};
use std::collections::HashMap;

pub(super) fn catalog() -> Catalog {
    let tool = |name: &str, schema: Value| Tool {
        name: name.into(),
        title: Some(format!("The {name} tool")),
        description: Some(format!("{name} things")),
        input_schema: schema,
        output_schema: None,
        annotations: Some(ToolAnnotations {
            read_only_hint: Some(true),
            ..Default::default()
        }),
        icons: None,
        meta: None,
    };
    let mut add = tool(
        "add",
        json!({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}),
    );
    add.output_schema = Some(json!({"type":"object","properties":{"sum":{"type":"integer"}}}));
    let mut info = Implementation::new("test-server", "1.0");
    info.title = Some("Test".into());
    Catalog {
        server_info: info,
        instructions: Some("be nice".into()),
        tools: vec![
            tool(
                "echo",
                json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}),
            ),
            add,
            tool(
                "sleep",
                json!({"type":"object","properties":{"ms":{"type":"integer","minimum":0}}}),
            ),
            tool("ask", json!({"type":"object"})),
        ],
        tool_requirements: vec![vec![], vec![], vec![], vec!["sampling".into()]],
        tool_timeouts: vec![
            None,
            None,
            Some(Timeout::Fixed(Duration::from_secs(30))),
            None,
        ],
        tool_background: vec![],
        tool_slots: vec![],
        job_tools: None,
        prompts: vec![Prompt {
            name: "p".into(),
            title: None,
            description: Some("a prompt".into()),
            arguments: Some(vec![PromptArgument {
                name: "x".into(),
                title: None,
                description: None,
                required: Some(true),
            }]),
            icons: None,
        }],
        resources: vec![Resource {
            uri: "test://r".into(),
            name: "r".into(),
            title: None,
            description: None,
            mime_type: Some("text/plain".into()),
        }],
        resource_templates: vec![],
    }
}

/// A server peer, a fake clock and a decoder for what it sends.
struct H {
    peer: Peer,
    now: Instant,
}

#[derive(Debug, Default)]
struct Out {
    sent: Vec<Value>,
    started: Vec<Admitted>,
    cancelled: Vec<RequestId>,
    other: Vec<Effect>,
}

impl H {
    fn new() -> H {
        H {
            peer: Peer::server(Arc::new(catalog()), Config::default()),
            now: Instant::now(),
        }
    }

    fn handshake(version: &str) -> H {
        let mut h = H::new();
        let out = h.req(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":version,"capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"0"}}}));
        assert_eq!(out.sent.len(), 1);
        h.req(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        h
    }

    fn raw(&mut self, bytes: &[u8]) -> Out {
        let mut dec = FrameDecoder::default();
        dec.push(bytes);
        while let Some(f) = dec.next_frame() {
            match f {
                Ok(frame) => self.peer.handle_frame(self.now, frame),
                Err(e) => self.peer.handle_frame_error(&e),
            }
        }
        if let Some(Ok(frame)) = dec.finish() {
            self.peer.handle_frame(self.now, frame);
        }
        self.drain()
    }

    fn req(&mut self, v: Value) -> Out {
        self.raw(format!("{v}\n").as_bytes())
    }

    fn drain(&mut self) -> Out {
        check_timers(&self.peer);
        let mut out = Out::default();
        while let Some(e) = self.peer.poll_effect() {
            match e {
                Effect::Send(bytes) | Effect::Progress { bytes, .. } => {
                    let mut dec = FrameDecoder::default();
                    dec.push(&bytes);
                    while let Some(f) = dec.next_frame() {
                        out.sent
                            .push(serde_json::from_slice(&f.unwrap().body).unwrap());
                    }
                }
                Effect::Start(c) => out.started.push(c),
                Effect::Cancel(id) => out.cancelled.push(id),
                other => out.other.push(other),
            }
        }
        out
    }

    /// Advances the fake clock to the peer's next timeout and fires it (quinn-proto's
    /// `step`): the timer table decides what happens, and when. `None` when no timer is set.
    fn step(&mut self) -> Option<Out> {
        let next = self.peer.poll_timeout()?;
        self.now = self.now.max(next);
        self.peer.handle_timeout(self.now);
        Some(self.drain())
    }

    fn one(&mut self, v: Value) -> Value {
        let out = self.req(v);
        assert_eq!(out.sent.len(), 1, "{out:?}");
        out.sent.into_iter().next().unwrap()
    }
}

fn stateless_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}})
}

fn call(id: Value, tool: &str, args: Value, token: Option<Value>) -> Value {
    let mut params = json!({"name": tool, "arguments": args});
    if let Some(t) = token {
        params["_meta"] = json!({"progressToken": t});
    }
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params})
}

/// The timers the records call for, found by scanning them (as `poll_timeout` did before
/// the timer table): tests check that the table holds exactly these.
fn timers_by_scan(peer: &Peer) -> HashMap<(Kind, Subject), Instant> {
    let mut all = HashMap::new();
    for (id, c) in peer.calls.iter() {
        let call = || Subject::Call(id.clone());
        let background = c.background_at.filter(|_| c.may_background());
        let heartbeat = c
            .live_token()
            .and(c.last_report.checked_add(peer.config.heartbeat));
        for (kind, when) in [
            (Kind::Deadline, c.deadline),
            (Kind::Background, background),
            (Kind::Heartbeat, heartbeat),
        ] {
            if let Some(when) = when {
                all.insert((kind, call()), when);
            }
        }
    }
    for (id, w) in peer.jobs.waits.iter() {
        all.insert((Kind::WaitEnd, Subject::Call(id.clone())), w.until);
        if let Some(when) = w.next_heartbeat(peer.config.heartbeat) {
            all.insert((Kind::Heartbeat, Subject::Call(id.clone())), when);
        }
    }
    for (park, expires) in peer.park_expiries() {
        all.insert((Kind::ParkExpiry, Subject::Park(park)), expires);
    }
    for job in peer.jobs.iter() {
        if let Some(end) = job
            .ended
            .and_then(|e| e.checked_add(peer.config.job_retention))
        {
            all.insert((Kind::JobRetention, Subject::Job(job.id.clone())), end);
        }
    }
    all
}

/// Panics unless the timer table holds exactly the timers the records call for.
pub(super) fn check_timers(peer: &Peer) {
    assert_eq!(
        peer.timers.entries(),
        timers_by_scan(peer),
        "timer table out of line"
    );
}
