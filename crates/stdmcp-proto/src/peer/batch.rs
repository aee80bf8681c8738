//! JSON-RPC batches, allowed only in protocol revision 2025-03-26 (MCP 2025-03-26, Base Protocol: Batching): every
//! request's response is collected, and one array is written when the last one is ready.

use std::time::Instant;

use super::Peer;
use crate::jsonrpc::{self, ErrorObject, Message, RequestId};
use crate::mcp::{method, ProtocolVersion};

/// A 2025-03-26 batch whose responses are collected into one array (MCP 2025-03-26, Base Protocol: Batching).
#[derive(Debug)]
pub(super) struct Batch {
    pub pending: Vec<RequestId>,
    pub responses: Vec<Vec<u8>>,
    pub open: bool,
}

impl Batch {
    /// Removes one pending entry for `id` (a batch may hold the same id twice).
    pub fn take_pending(&mut self, id: &RequestId) {
        if let Some(i) = self.pending.iter().position(|p| p == id) {
            self.pending.remove(i);
        }
    }
}

impl Peer {
    /// The batch being read (there is at most one): found afresh after each item, since
    /// answering an item can complete and remove an earlier batch.
    fn open_batch(&self) -> Option<usize> {
        self.batches.iter().position(|b| b.open)
    }

    pub(super) fn server_batch(
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
        self.batches.push(Batch {
            pending,
            responses: Vec::new(),
            open: true,
        });
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
                    if let Some(i) = self.open_batch() {
                        self.batches[i].responses.push(out);
                    }
                }
            }
        }
        if let Some(i) = self.open_batch() {
            self.batches[i].open = false;
            self.flush_batch(i);
        }
    }

    pub(super) fn flush_batch(&mut self, index: usize) {
        let batch = &self.batches[index];
        if batch.open || !batch.pending.is_empty() {
            return;
        }
        let batch = self.batches.remove(index);
        if batch.responses.is_empty() {
            return;
        }
        let mut out = vec![b'['];
        for (i, r) in batch.responses.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(r);
        }
        out.push(b']');
        self.send_json(out);
    }

    pub(super) fn forget_in_batches(&mut self, id: &RequestId) {
        if let Some(i) = self.batches.iter().position(|b| b.pending.contains(id)) {
            self.batches[i].take_pending(id);
            self.flush_batch(i);
        }
    }
}
