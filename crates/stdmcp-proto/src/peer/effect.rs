//! What the caller of a peer must do next ([`Effect`]).

use super::work::Admitted;
use crate::jsonrpc::{self, Notification, Request, RequestId};

/// What the caller must do next.
#[derive(Debug, PartialEq)]
pub enum Effect {
    /// Write these bytes (one or more whole frames) to the other side.
    Send(Vec<u8>),
    /// Write this progress frame of request `id` (server role). Until it is written, a later
    /// `Progress` of the same request may replace it: values only increase, so a client that
    /// reads slowly sees the latest progress instead of a backlog.
    Progress {
        /// The request the progress is about.
        id: RequestId,
        /// One whole frame.
        bytes: Vec<u8>,
    },
    /// Start this work now; report its end with [`Peer::finish`](super::Peer::finish). Emitted
    /// only when the call is admitted (at once if its slots of
    /// [`Config::max_running`](super::Config::max_running) are free, else when they free up, in
    /// arrival order), so the caller needs no queue of its own; a start it cannot carry out goes
    /// back with [`Peer::start_refused`](super::Peer::start_refused).
    Start(Admitted),
    /// Stop the work of this request: it was cancelled, or the peer is shutting down.
    Cancel(RequestId),
    /// The server-side deadline of this request passed: stop its work. Unlike a cancel, the
    /// request is still answered (its tool says how it ended).
    Deadline(RequestId),
    /// The server-side deadline of this request passed while it waited for a free slot (behind
    /// [`Config::max_running`](super::Config::max_running)): the peer answered it as never
    /// started and forgot it. Its work must not start; a later
    /// [`Peer::finish`](super::Peer::finish) for it is ignored.
    Unstarted(RequestId),
    /// A response to a request this side sent with [`Peer::request`](super::Peer::request).
    Response(jsonrpc::Response),
    /// A notification from the other side that the peer does not handle itself
    /// (client role: progress, log messages, list changes…).
    Notification(Notification),
    /// A request from the other side that the peer cannot answer itself (client role:
    /// sampling, elicitation, roots). Answer with [`Peer::respond`](super::Peer::respond).
    Request(Request),
}
