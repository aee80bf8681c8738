//! JSON-RPC batches, allowed only in protocol revision 2025-03-26 (MCP 2025-03-26, Base Protocol: Batching): every
//! request's response is collected, and one array is written when the last one is ready.

use crate::jsonrpc::RequestId;

/// A 2025-03-26 batch whose responses are collected into one array (MCP 2025-03-26, Base Protocol: Batching).
#[derive(Debug)]
struct Batch {
    pending: Vec<RequestId>,
    responses: Vec<Vec<u8>>,
    open: bool,
}

impl Batch {
    /// Removes one pending entry for `id` (a batch may hold the same id twice).
    fn take_pending(&mut self, id: &RequestId) {
        if let Some(i) = self.pending.iter().position(|p| p == id) {
            self.pending.remove(i);
        }
    }
}

/// The batches whose responses are being collected: at most one being read (open), and
/// those read whose requests still run. A sub-machine of the peer: it says which bytes to
/// send, the peer sends them.
#[derive(Debug, Default)]
pub(super) struct Batches(Vec<Batch>);

/// Where a response went.
pub(super) enum Filed {
    /// No batch holds its request: send it alone.
    Alone(Vec<u8>),
    /// Held by its batch, which still waits for other responses.
    Held,
    /// It completed its batch: send this array.
    Completed(Vec<u8>),
}

impl Batches {
    /// A batch is being read; these are its requests.
    pub(super) fn open(&mut self, pending: Vec<RequestId>) {
        self.0.push(Batch {
            pending,
            responses: Vec::new(),
            open: true,
        });
    }

    /// Files the response to request `id`: in the batch being read if it holds the id, else
    /// (unless `running`: while its work runs, a response with its id answers another
    /// request that reuses the id) in a batch waiting for that id's work.
    pub(super) fn file(&mut self, id: &RequestId, json: Vec<u8>, running: bool) -> Filed {
        let holds = |b: &Batch| b.pending.contains(id);
        let batch = match self.0.iter().position(|b| b.open && holds(b)) {
            Some(i) => Some(i),
            None if running => None,
            None => self.0.iter().position(holds),
        };
        let Some(i) = batch else {
            return Filed::Alone(json);
        };
        self.0[i].take_pending(id);
        self.0[i].responses.push(json);
        match self.flush(i) {
            Some(array) => Filed::Completed(array),
            None => Filed::Held,
        }
    }

    /// Files the error for an invalid item of the batch being read.
    pub(super) fn file_invalid(&mut self, json: Vec<u8>) {
        if let Some(b) = self.0.iter_mut().find(|b| b.open) {
            b.responses.push(json);
        }
    }

    /// The batch being read was read to its end: its array, if it is complete.
    pub(super) fn close(&mut self) -> Option<Vec<u8>> {
        let i = self.0.iter().position(|b| b.open)?;
        self.0[i].open = false;
        self.flush(i)
    }

    /// Request `id` of a waiting batch will never be answered (cancelled): its batch's array,
    /// if that completes it.
    pub(super) fn forget(&mut self, id: &RequestId) -> Option<Vec<u8>> {
        let i = self.0.iter().position(|b| b.pending.contains(id))?;
        self.0[i].take_pending(id);
        self.flush(i)
    }

    /// Batch `index`'s array once it is read and every response is in (it is then removed;
    /// `None` also for a batch with no responses at all, which is written as nothing).
    fn flush(&mut self, index: usize) -> Option<Vec<u8>> {
        let batch = &self.0[index];
        if batch.open || !batch.pending.is_empty() {
            return None;
        }
        let batch = self.0.remove(index);
        if batch.responses.is_empty() {
            return None;
        }
        let mut out = vec![b'['];
        for (i, r) in batch.responses.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(r);
        }
        out.push(b']');
        Some(out)
    }
}
