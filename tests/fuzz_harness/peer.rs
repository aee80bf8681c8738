//! A peer driven with a fixed clock, its every output checked:
//! * whatever it sends is whole frames in its current framing, each a JSON-RPC 2.0 object
//!   (or a non-empty array of them);
//! * every request received gets at most one response, and none once its work was
//!   cancelled (responses are counted against the requests received with that id);
//! * progress goes only to a token of a request still open, strictly increasing per token;
//! * work starts only for an open request whose id is not already running; cancels only
//!   for running work; the count of calls in flight matches the work started and not
//!   finished; after a timeout, the next timeout is in the future;
//! * a response surfaces only for a request this side sent and did not cancel, once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{json, Value};
use stdmcp_proto::framing::{Frame, FrameDecoder, FrameError, Framing};
use stdmcp_proto::jsonrpc::{self, ErrorObject, Incoming, Invalid, Message, RequestId};
use stdmcp_proto::mcp::CallToolResult;
use stdmcp_proto::mcp::{LogLevel, Prompt, Resource, Tool};
use stdmcp_proto::peer::{Catalog, Config, Effect, Peer, Reply, Role};

/// The catalog the server role serves: tools with schemas, one needing sampling.
pub(crate) fn catalog() -> Catalog {
    let tool = |name: &str, schema: Value| -> Tool {
        serde_json::from_value(json!({"name": name, "description": name, "inputSchema": schema}))
            .unwrap()
    };
    let prompt: Prompt =
        serde_json::from_value(json!({"name":"p","arguments":[{"name":"x","required":true}]}))
            .unwrap();
    let resource: Resource = serde_json::from_value(json!({"uri":"test://r","name":"r"})).unwrap();
    let mut c = Catalog::default();
    c.tools = vec![
        tool(
            "echo",
            json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}),
        ),
        tool(
            "add",
            json!({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer","minimum":0}},"required":["a","b"]}),
        ),
        tool(
            "sleep",
            json!({"type":"object","properties":{"ms":{"type":"integer","minimum":0}}}),
        ),
        tool("ask", json!({"type":"object"})),
    ];
    c.tool_requirements = vec![vec![], vec![], vec![], vec!["sampling".into()]];
    c.prompts = vec![prompt];
    c.resources = vec![resource];
    c.instructions = Some("fuzz".into());
    c
}

/// The parts of a message sent that the checks read.
#[derive(serde::Deserialize)]
struct Sent<'a> {
    #[serde(borrow)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<&'a RawValue>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
    /// `Some` even for `"result": null`, a valid result.
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    error: Option<ErrorShape>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    serde::Deserialize::deserialize(d).map(Some)
}

/// A JSON-RPC error object: integer code, string message.
#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct ErrorShape {
    code: i64,
    message: String,
}

#[derive(Debug, Default)]
struct Token {
    /// Open requests that carry this token.
    holders: Vec<RequestId>,
    /// Last progress sent, while exactly one request holds the token.
    last: Option<f64>,
}

/// A peer under test and what its outputs so far allow.
pub(crate) struct PeerCheck {
    pub peer: Peer,
    now: Instant,
    decoder: FrameDecoder,
    /// Requests received and neither answered nor cancelled, by id.
    open: HashMap<RequestId, u32>,
    /// Server role: work started and not finished by the host (flag: cancelled).
    running: Vec<(RequestId, bool)>,
    /// Requests from the other side the host must answer.
    asked: Vec<RequestId>,
    /// Requests this side sent and not answered (flag: cancelled).
    outbound: Vec<(RequestId, bool)>,
    /// Progress tokens of received requests, by their JSON text.
    tokens: HashMap<String, Token>,
    shut_down: bool,
    /// Frames the decoder delivered to the peer.
    pub frames: u64,
}

impl PeerCheck {
    pub(crate) fn new(role: Role, max_frame: usize) -> PeerCheck {
        let mut config = Config::default();
        config.heartbeat = Duration::from_millis(500);
        config.page_size = 2;
        let peer = match role {
            Role::Server => Peer::server(Arc::new(catalog()), config),
            Role::Client => Peer::client(config),
        };
        PeerCheck {
            peer,
            now: Instant::now(),
            decoder: FrameDecoder::new(max_frame),
            open: HashMap::new(),
            running: Vec::new(),
            asked: Vec::new(),
            outbound: Vec::new(),
            tokens: HashMap::new(),
            shut_down: false,
            frames: 0,
        }
    }

    /// Bytes from the other side.
    pub(crate) fn push_bytes(&mut self, bytes: &[u8]) {
        self.decoder.push(bytes);
        while let Some(r) = self.decoder.next_frame() {
            self.deliver(r);
        }
    }

    /// End of the other side's stream.
    pub(crate) fn end_of_input(&mut self) {
        while let Some(r) = self.decoder.finish() {
            self.deliver(r);
        }
    }

    fn deliver(&mut self, r: Result<Frame, FrameError>) {
        match r {
            Ok(frame) => {
                self.frames += 1;
                // Parsed once, for the peer and for the checks.
                let parsed = jsonrpc::parse(&frame.body);
                if let Ok(incoming) = &parsed {
                    self.note_incoming(incoming.clone());
                }
                self.peer.handle_parsed(self.now, frame.framing, parsed);
            }
            Err(e) => self.peer.handle_frame_error(&e),
        }
        self.drain();
    }

    /// Records the requests a frame holds, as the peer will see them.
    fn note_incoming(&mut self, incoming: Incoming) {
        let items = match incoming {
            Incoming::Single(m) => vec![m],
            Incoming::Batch(items) => items,
        };
        for item in items {
            match item {
                Ok(Message::Request(r)) => {
                    *self.open.entry(r.id.clone()).or_default() += 1;
                    let token = r.params.pointer("/_meta/progressToken");
                    if let Some(t) = token.filter(|t| t.is_string() || t.is_number()) {
                        let entry = self.tokens.entry(t.to_string()).or_default();
                        entry.holders.push(r.id);
                        entry.last = None;
                    }
                }
                Err(Invalid { id: Some(id), .. }) => *self.open.entry(id).or_default() += 1,
                _ => {}
            }
        }
    }

    /// Pops and checks every effect.
    pub(crate) fn drain(&mut self) {
        while let Some(effect) = self.peer.poll_effect() {
            match effect {
                Effect::Send(bytes) => self.check_sent(&bytes),
                Effect::Progress { id, bytes } => {
                    assert!(
                        self.running.iter().any(|(r, c)| *r == id && !c),
                        "progress for {id:?}, which is not running"
                    );
                    self.check_sent(&bytes);
                }
                Effect::Deadline(id) => assert!(
                    self.running.iter().any(|(r, _)| *r == id),
                    "deadline of {id:?}, which is not running"
                ),
                Effect::Start(call) => {
                    assert_eq!(self.peer.role(), Role::Server, "work started by a client");
                    assert!(
                        self.is_open(&call.id),
                        "work for {:?}: not an open request",
                        call.id
                    );
                    assert!(
                        !self.running.iter().any(|(id, _)| *id == call.id),
                        "second work for the running id {:?}",
                        call.id
                    );
                    self.running.push((call.id, false));
                }
                Effect::Cancel(id) => {
                    let Some(run) = self.running.iter_mut().find(|(r, c)| *r == id && !c) else {
                        panic!("cancel of {id:?}, which is not running");
                    };
                    run.1 = true;
                    self.close_request(&id, "cancel");
                }
                Effect::Response(r) => {
                    let Some(i) = self.outbound.iter().position(|(id, c)| *id == r.id && !c) else {
                        panic!("response {:?} to no live request of ours", r.id);
                    };
                    self.outbound.remove(i);
                }
                Effect::Notification(n) => {
                    if n.method == "notifications/progress" {
                        let token = n.params.get("progressToken");
                        let live = self.outbound.iter().any(|(id, c)| {
                            !c && token.and_then(RequestId::from_value).as_ref() == Some(id)
                        });
                        assert!(
                            live,
                            "progress surfaced for no live request: {:?}",
                            n.params
                        );
                    }
                }
                Effect::Request(r) => self.asked.push(r.id),
                other => panic!("an effect the harness does not check: {other:?}"),
            }
        }
        if self.peer.role() == Role::Server {
            assert_eq!(
                self.peer.calls_in_flight(),
                self.running.len(),
                "calls in flight"
            );
        }
        if self.shut_down {
            assert!(
                self.running.iter().all(|(_, c)| *c),
                "work left running after shutdown"
            );
        }
    }

    fn is_open(&self, id: &RequestId) -> bool {
        self.open.get(id).is_some_and(|&n| n > 0)
    }

    /// A request was answered or cancelled: it allows nothing more. While other requests
    /// with the same id are open (a duplicate is refused), which one ended is unknown: the
    /// tokens stay held until the last one ends.
    fn close_request(&mut self, id: &RequestId, what: &str) {
        match self.open.get_mut(id) {
            Some(n) if *n > 1 => {
                *n -= 1;
                return;
            }
            Some(1) => self.open.remove(id),
            _ => panic!("{what} for {id:?}: no open request with that id"),
        };
        for t in self.tokens.values_mut() {
            if t.holders.contains(id) {
                t.holders.retain(|h| h != id);
                t.last = None;
            }
        }
    }

    fn check_sent(&mut self, bytes: &[u8]) {
        let mut dec = FrameDecoder::new(usize::MAX);
        dec.push(bytes);
        let mut frames = 0;
        while let Some(r) = dec.next_frame() {
            let f = r.unwrap_or_else(|e| panic!("sent bytes are not a frame: {e}"));
            assert_eq!(f.framing, self.peer.framing(), "sent in another framing");
            let text = std::str::from_utf8(&f.body).expect("sent frame is not UTF-8");
            let raw: &RawValue = serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("sent frame is not JSON ({e}): {text}"));
            if text.starts_with('[') {
                let items: Vec<&RawValue> = serde_json::from_str(text).unwrap();
                assert!(!items.is_empty(), "empty batch sent");
                items.into_iter().for_each(|m| self.check_message(m));
            } else {
                self.check_message(raw);
            }
            frames += 1;
        }
        assert!(dec.finish().is_none(), "sent bytes end inside a frame");
        assert!(frames > 0, "empty send");
    }

    /// Checks one message sent, parsed once into raw parts (a `Value` would also round ids
    /// beyond 64 bits).
    fn check_message(&mut self, raw: &RawValue) {
        let m: Sent<'_> = serde_json::from_str(raw.get())
            .unwrap_or_else(|e| panic!("sent message malformed ({e}): {}", raw.get()));
        assert_eq!(
            m.jsonrpc.map(RawValue::get),
            Some("\"2.0\""),
            "sent {}",
            raw.get()
        );
        let id = m.id.map(|id| {
            RequestId::from_raw(id.get()).unwrap_or_else(|| panic!("bad id sent: {}", raw.get()))
        });
        if let Some(method) = m.method {
            assert!(
                method.get().starts_with('"'),
                "method not a string: {}",
                raw.get()
            );
            if let Some(id) = id {
                let ours = self.outbound.iter().any(|(o, _)| *o == id);
                assert!(ours, "unrecorded request {}", raw.get());
            } else if method.get() == "\"notifications/progress\"" {
                let params = m.params.map(|p| serde_json::from_str(p.get()).unwrap());
                self.check_progress(&params.unwrap_or(Value::Null));
            }
            return;
        }
        assert!(
            m.result.is_some() != m.error.is_some(),
            "not one of result/error: {}",
            raw.get()
        );
        match id {
            Some(id) => self.close_request(&id, "response"),
            None => assert!(m.error.is_some(), "result without id: {}", raw.get()),
        }
    }

    fn check_progress(&mut self, params: &Value) {
        let token = params["progressToken"].to_string();
        let p = params["progress"]
            .as_f64()
            .unwrap_or_else(|| panic!("progress not a number: {params}"));
        let Some(t) = self
            .tokens
            .get_mut(&token)
            .filter(|t| !t.holders.is_empty())
        else {
            panic!("progress for a token of no open request: {params}");
        };
        if t.holders.len() == 1 {
            if let Some(last) = t.last {
                assert!(p > last, "progress {p} after {last} for token {token}");
            }
            t.last = Some(p);
        }
    }

    // Host actions ---------------------------------------------------------------------

    /// Advances the clock, running the timeout when due.
    pub(crate) fn advance(&mut self, ms: u64) {
        self.now += Duration::from_millis(ms);
        if self.peer.poll_timeout().is_some_and(|t| t <= self.now) {
            self.peer.handle_timeout(self.now);
            self.drain();
            if let Some(t) = self.peer.poll_timeout() {
                assert!(t > self.now, "timeout due again right after handling it");
            }
        }
    }

    fn running_id(&self, k: usize) -> Option<RequestId> {
        (!self.running.is_empty()).then(|| self.running[k % self.running.len()].0.clone())
    }

    /// Ends running work number `k` with an outcome of kind `kind`.
    pub(crate) fn finish(&mut self, k: usize, kind: u8) {
        let Some(id) = self.running_id(k) else { return };
        let outcome = match kind % 5 {
            0 => Reply::Tool(CallToolResult::text("done")),
            1 => Reply::Tool(CallToolResult::structured(json!({"sum": 3}))),
            2 => {
                Reply::Value(json!({"messages": [], "contents": [], "completion": {"values": []}}))
            }
            3 => Reply::NotFound("test://gone".into()),
            _ => Reply::Error(ErrorObject::internal("failed")),
        };
        self.running.retain(|(r, _)| *r != id);
        self.peer.finish(self.now, &id, outcome);
        self.drain();
    }

    pub(crate) fn progress(&mut self, k: usize, value: f64, total: Option<f64>) {
        let Some(id) = self.running_id(k) else { return };
        self.peer
            .progress(self.now, &id, value, total, Some("step".into()));
        self.drain();
    }

    pub(crate) fn log_or_status(&mut self, k: usize, level: u8) {
        let Some(id) = self.running_id(k) else { return };
        let levels = [
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Error,
            LogLevel::Emergency,
        ];
        if level % 5 == 4 {
            self.peer.set_status(self.now, &id, "line".into());
        } else {
            let level = levels[usize::from(level % 5)];
            self.peer.log(&id, level, Some("fuzz"), json!("message"));
        }
        self.drain();
    }

    /// A request of ours: from the client role, or for running work in the server role.
    pub(crate) fn request(&mut self, k: usize, with_progress: bool) {
        let methods = [
            "tools/call",
            "ping",
            "tools/list",
            "initialize",
            "resources/read",
        ];
        let id = match self.peer.role() {
            Role::Client => {
                let params = json!({"name": "echo", "arguments": {"text": "x"}});
                Some(
                    self.peer
                        .request(methods[k % methods.len()], params, with_progress),
                )
            }
            Role::Server => self.running_id(k).and_then(|call| {
                let params = json!({"messages": [], "maxTokens": 1});
                self.peer
                    .request_for_call(&call, "sampling/createMessage", params, "sampling")
                    .ok()
            }),
        };
        if let Some(id) = id {
            self.outbound.push((id, false));
        }
        self.drain();
    }

    pub(crate) fn cancel_request(&mut self, k: usize) {
        if self.outbound.is_empty() {
            return;
        }
        let i = k % self.outbound.len();
        let id = self.outbound[i].0.clone();
        let sent = self.peer.cancel_request(&id, Some("fuzz"));
        assert_eq!(sent, !self.outbound[i].1, "cancel_request of {id:?}");
        self.outbound[i].1 = true;
        self.drain();
    }

    /// Answers a request the other side sent that the host must answer.
    pub(crate) fn respond(&mut self, k: usize, ok: bool) {
        if self.asked.is_empty() {
            return;
        }
        let id = self.asked.remove(k % self.asked.len());
        let result = if ok {
            Ok(json!({"roots": []}))
        } else {
            Err(ErrorObject::internal("no"))
        };
        self.peer.respond(&id, result);
        self.drain();
    }

    pub(crate) fn shutdown(&mut self) {
        self.peer.shutdown();
        self.shut_down = true;
        self.drain();
    }

    /// Sets the framing of what a client sends.
    pub(crate) fn set_framing(&mut self, content_length: bool) {
        if self.peer.role() == Role::Client {
            let framing = if content_length {
                Framing::ContentLength
            } else {
                Framing::Newline
            };
            self.peer.set_framing(framing);
        }
    }

    /// Ends the session: the host finishes all work; nothing may be left in flight.
    pub(crate) fn finish_all(&mut self) {
        self.end_of_input();
        while !self.running.is_empty() {
            self.finish(0, 0);
        }
        assert_eq!(self.peer.calls_in_flight(), 0);
    }
}
