//! A synchronous MCP client over any pair of byte streams (usually a server's stdin and
//! stdout), on the peer's client role: one reader thread decodes frames; the caller's thread
//! owns the peer, writes requests and waits for events.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mailbox::{Closing, Mailbox, NoMessage};
use stdmcp_proto::framing::{self, Frame, FrameDecoder, FrameError};
use stdmcp_proto::jsonrpc::{ErrorObject, Notification, Request, RequestId, Response};
use stdmcp_proto::mcp::{method, Implementation, ProtocolVersion};
use stdmcp_proto::peer::{ClientEra, Config, Effect, Peer};

/// What the client waits for.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event {
    /// The answer to a request.
    Response(Response),
    /// Progress for a request sent with progress.
    Progress {
        /// The request.
        id: RequestId,
        /// The notification's params.
        params: Value,
    },
    /// Any other notification (log messages, list changes…).
    Notification(Notification),
    /// A request from the server (sampling, elicitation, roots); answer with
    /// [`Client::respond`].
    Request(Request),
}

/// Why a request got no answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with a JSON-RPC error.
    Rpc(ErrorObject),
    /// The server closed its stdout.
    Closed,
    /// No answer before the deadline.
    Timeout,
    /// Writing to the server failed.
    Io(std::io::Error),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Rpc(e) => write!(f, "the server answered with an error: {e}"),
            ClientError::Closed => f.write_str("the server closed the connection"),
            ClientError::Timeout => f.write_str("no answer from the server in time"),
            ClientError::Io(e) => write!(f, "cannot write to the server: {e}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// Which era to open a connection in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EraChoice {
    /// `initialize` at 2025-11-25.
    Handshake,
    /// Stateless 2026-07-28.
    Stateless,
    /// `server/discover` first; `initialize` if that fails or goes unanswered.
    Auto,
}

/// How long `EraChoice::Auto` waits for an answer to its `server/discover` probe.
pub const PROBE_WAIT: Duration = Duration::from_secs(3);
/// How long opening a connection waits for `initialize` (or a stateless-era `server/discover`).
pub const OPEN_WAIT: Duration = Duration::from_secs(30);

/// A connected client.
pub struct Client {
    peer: Peer,
    writer: Box<dyn Write + Send>,
    /// Filled by the reader thread, closed when it ends (at the end of the stream, or by a
    /// panic), and when the client is dropped (the reader then stops at its next frame).
    frames: Closing<Result<Frame, FrameError>>,
    events: std::collections::VecDeque<Event>,
    closed: bool,
    /// What the server said about itself (from `initialize` or `server/discover`).
    pub server_info: Value,
    /// The revision in use.
    pub version: Option<ProtocolVersion>,
}

impl Client {
    /// A client writing to `writer` and reading frames from `reader` (on its own thread).
    pub fn new(reader: Box<dyn Read + Send>, writer: Box<dyn Write + Send>) -> Client {
        let mailbox = Arc::new(Mailbox::default());
        let tx = Closing(Arc::clone(&mailbox));
        let spawned = std::thread::Builder::new()
            .name("stdmcp-client-reader".into())
            .spawn(move || {
                let mut reader = reader;
                let mut dec = FrameDecoder::default();
                let read = framing::read_frames(&mut *reader, &mut dec, |frames| {
                    let mut sent = frames.map(|f| tx.send(f));
                    sent.all(|ok| ok)
                });
                if !matches!(read, Ok(false)) {
                    while let Some(f) = dec.finish() {
                        tx.send(f);
                    }
                }
            });
        if let Err(e) = spawned {
            // The thread's handle was dropped with it: the mailbox is closed.
            log::error!("cannot start the client's reader thread: {e}");
        }
        Client {
            peer: Peer::client({
                let mut config = Config::default();
                config.diagnostics = crate::server::diagnostics_level();
                config
            }),
            writer,
            frames: Closing(mailbox),
            events: std::collections::VecDeque::new(),
            closed: false,
            server_info: Value::Null,
            version: None,
        }
    }

    fn flush_effects(&mut self) -> Result<(), ClientError> {
        let mut out = Vec::new();
        while let Some(e) = self.peer.poll_effect() {
            match e {
                Effect::Send(bytes) | Effect::Progress { bytes, .. } => {
                    out.extend_from_slice(&bytes)
                }
                Effect::Response(r) => self.events.push_back(Event::Response(r)),
                Effect::Notification(n) if n.method == method::PROGRESS => {
                    let id = n
                        .params
                        .get("progressToken")
                        .and_then(RequestId::from_value);
                    match id {
                        Some(id) => self.events.push_back(Event::Progress {
                            id,
                            params: n.params,
                        }),
                        None => self.events.push_back(Event::Notification(n)),
                    }
                }
                Effect::Notification(n) => self.events.push_back(Event::Notification(n)),
                Effect::Request(r) => self.events.push_back(Event::Request(r)),
                Effect::Start(_)
                | Effect::Cancel(_)
                | Effect::Deadline(_)
                | Effect::Unstarted(_) => {}
            }
        }
        crate::server::log_diagnostics(&mut self.peer);
        if !out.is_empty() {
            self.writer
                .write_all(&out)
                .and_then(|()| self.writer.flush())
                .map_err(ClientError::Io)?;
        }
        Ok(())
    }

    /// Sends a request without waiting; progress for it comes back as [`Event::Progress`].
    pub fn send(
        &mut self,
        method: &str,
        params: Value,
        with_progress: bool,
    ) -> Result<RequestId, ClientError> {
        let id = self.peer.request(method, params, with_progress);
        self.flush_effects()?;
        Ok(id)
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) -> Result<(), ClientError> {
        self.peer.notify(method, params);
        self.flush_effects()
    }

    /// Cancels a request sent earlier (its late answer is dropped).
    pub fn cancel(&mut self, id: &RequestId, reason: Option<&str>) -> Result<(), ClientError> {
        self.peer.cancel_request(id, reason);
        self.flush_effects()
    }

    /// Answers a request from the server.
    pub fn respond(
        &mut self,
        id: &RequestId,
        result: Result<Value, ErrorObject>,
    ) -> Result<(), ClientError> {
        self.peer.respond(id, result);
        self.flush_effects()
    }

    /// The next event, waiting until `deadline` at most.
    pub fn next_event(&mut self, deadline: Option<Instant>) -> Result<Event, ClientError> {
        loop {
            if let Some(e) = self.events.pop_front() {
                return Ok(e);
            }
            if self.closed {
                return Err(ClientError::Closed);
            }
            match self.frames.recv_until(deadline) {
                Ok(Ok(f)) => self.peer.handle_frame(Instant::now(), f),
                Ok(Err(e)) => self.peer.handle_frame_error(&e),
                Err(NoMessage::TimedOut) => return Err(ClientError::Timeout),
                Err(NoMessage::Closed) => self.closed = true,
            }
            self.flush_effects()?;
        }
    }

    /// Sends a request and waits for its answer; other events go to `on_event`.
    pub fn request(
        &mut self,
        method: &str,
        params: Value,
        deadline: Option<Instant>,
        mut on_event: impl FnMut(&mut Client, Event),
    ) -> Result<Value, ClientError> {
        let id = self.send(method, params, true)?;
        loop {
            match self.next_event(deadline)? {
                Event::Response(r) if r.id == id => return r.result.map_err(ClientError::Rpc),
                other => on_event(self, other),
            }
        }
    }

    /// Opens the connection in the chosen era; returns the era used.
    pub fn open(
        &mut self,
        era: EraChoice,
        client_info: Implementation,
    ) -> Result<EraChoice, ClientError> {
        let caps = json!({});
        if era != EraChoice::Handshake {
            self.peer.set_client_era(ClientEra::Stateless {
                version: ProtocolVersion::V2026_07_28,
                capabilities: caps.clone(),
                client_info: client_info.clone(),
            });
            let wait = if era == EraChoice::Auto {
                PROBE_WAIT
            } else {
                OPEN_WAIT
            };
            let deadline = Some(Instant::now() + wait);
            match self.request(method::DISCOVER, json!({}), deadline, |_, _| {}) {
                Ok(info) => {
                    self.server_info = info;
                    self.version = Some(ProtocolVersion::V2026_07_28);
                    return Ok(EraChoice::Stateless);
                }
                Err(e) if era == EraChoice::Stateless => return Err(e),
                Err(ClientError::Closed) => return Err(ClientError::Closed),
                Err(e) => log::info!("server/discover failed ({e}); falling back to initialize"),
            }
            self.peer.set_client_era(ClientEra::Handshake);
        }
        let params = json!({
            "protocolVersion": ProtocolVersion::NEWEST_HANDSHAKE.as_str(),
            "capabilities": caps,
            "clientInfo": client_info,
        });
        let deadline = Some(Instant::now() + OPEN_WAIT);
        let result = self.request(method::INITIALIZE, params, deadline, |_, _| {})?;
        self.version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .and_then(ProtocolVersion::parse);
        self.server_info = result;
        self.notify(method::INITIALIZED, json!({}))?;
        Ok(EraChoice::Handshake)
    }

    /// Drops the connection's write side, telling the server to finish.
    pub fn close(self) {
        drop(self.writer);
    }
}
