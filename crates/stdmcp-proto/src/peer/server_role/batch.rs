//! Server role: a JSON-RPC batch (MCP 2025-03-26, Base Protocol: Batching, that revision
//! only) is read item by item; the batches sub-machine (`peer::batch`) gathers the responses
//! and says when the array is complete.

use std::time::Instant;

use crate::jsonrpc::{self, ErrorObject, Message, RequestId};
use crate::mcp::{method, ProtocolVersion};
use crate::peer::front::Peer;

impl Peer {
    pub(in crate::peer) fn server_batch(
        &mut self,
        now: Instant,
        items: Vec<Result<Message, jsonrpc::Invalid>>,
    ) {
        if !self
            .negotiated_version()
            .is_some_and(ProtocolVersion::has_batches)
        {
            let e = ErrorObject::invalid_request(
                "Invalid request: JSON-RPC batches are only allowed in protocol revision 2025-03-26",
            );
            return self.send_error(None, &e);
        }
        if items.is_empty() {
            return self.send_error(
                None,
                &ErrorObject::invalid_request("Invalid request: empty batch"),
            );
        }
        let pending = items
            .iter()
            .filter_map(|m| match m {
                Ok(Message::Request(r)) => Some(r.id.clone()),
                _ => None,
            })
            .collect();
        self.batches.open(pending);
        for item in items {
            match item {
                Ok(Message::Request(r)) if r.method == method::INITIALIZE => {
                    let e = ErrorObject::invalid_request(
                        "Invalid request: initialize must not be part of a batch",
                    );
                    self.send_error(Some(&r.id), &e);
                }
                Ok(msg) => self.server_message(now, msg),
                Err(invalid) => {
                    let mut out = Vec::new();
                    jsonrpc::write_error(&mut out, invalid.id.as_ref(), &invalid.error);
                    self.batches.file_invalid(out);
                }
            }
        }
        if let Some(array) = self.batches.close() {
            self.send_json(array);
        }
    }

    /// Request `id` will never be answered (cancelled): its batch may be complete without it.
    pub(in crate::peer) fn forget_in_batches(&mut self, id: &RequestId) {
        if let Some(array) = self.batches.forget(id) {
            self.send_json(array);
        }
    }
}
