//! Schema checks of `tools/call` arguments, made from the catalog alone: a runtime makes them
//! before it takes the lock that guards the peer ([`super::Peer::handle_checked`]), so that a large
//! argument object is not validated while every other request waits.

use serde_json::{Map, Value};

use super::catalog::Catalog;
use crate::jsonrpc::{Incoming, Message, RequestId};
use crate::mcp::method;
use crate::schema;

/// Checks the arguments of a call of tool `index` against its input schema.
pub(super) fn validate_arguments(
    catalog: &Catalog,
    index: usize,
    arguments: &Value,
) -> Result<(), schema::SchemaError> {
    match catalog.tools.get(index) {
        Some(tool) => schema::validate(&tool.input_schema, arguments),
        None => Ok(()),
    }
}

/// The schema checks of the `tools/call` arguments of one parsed frame, made by
/// [`Catalog::check_arguments`] before the peer is handed the frame (outside whatever lock
/// guards it): the peer takes each request's verdict instead of validating again.
/// A frame of one request allocates nothing for it (the verdict is kept inline).
#[derive(Debug, Default)]
pub struct ArgumentChecks {
    first: Option<Verdict>,
    /// The verdicts after the first (batches only), in order.
    rest: Vec<Verdict>,
}

/// A request's id, its tool's index and what its arguments' check found.
type Verdict = (RequestId, usize, Result<(), schema::SchemaError>);

impl ArgumentChecks {
    fn push(&mut self, verdict: Verdict) {
        if self.first.is_none() {
            self.first = Some(verdict);
        } else {
            self.rest.push(verdict);
        }
    }

    /// The verdict on request `id`'s arguments for tool `index`, taken out (the first one, as
    /// a batch's requests are handled in order).
    pub(super) fn take(
        &mut self,
        id: &RequestId,
        index: usize,
    ) -> Option<Result<(), schema::SchemaError>> {
        let matches = |(r, t, _): &Verdict| r == id && *t == index;
        if self.first.as_ref().is_some_and(matches) {
            return self.first.take().map(|v| v.2);
        }
        let i = self.rest.iter().position(matches)?;
        Some(self.rest.remove(i).2)
    }
}

impl Catalog {
    /// Checks the arguments of every `tools/call` request of a parsed frame against its
    /// tool's input schema, so that [`super::Peer::handle_checked`] need not (this needs only the
    /// catalog, not the peer). Requests the peer will refuse before validation (no tool of
    /// that name, arguments not an object) get no verdict.
    pub fn check_arguments(&self, incoming: &Incoming) -> ArgumentChecks {
        let items = match incoming {
            Incoming::Single(m) => std::slice::from_ref(m),
            Incoming::Batch(items) => items.as_slice(),
        };
        let mut checks = ArgumentChecks::default();
        for item in items {
            let Ok(Message::Request(req)) = item else {
                continue;
            };
            if req.method != method::TOOLS_CALL {
                continue;
            }
            let Some(index) = req
                .params
                .get("name")
                .and_then(Value::as_str)
                .and_then(|n| self.tool_index(n))
            else {
                continue;
            };
            let empty = Value::Object(Map::new());
            let arguments = match req.params.get("arguments") {
                None | Some(Value::Null) => &empty,
                Some(a @ Value::Object(_)) => a,
                Some(_) => continue,
            };
            let verdict = validate_arguments(self, index, arguments);
            checks.push((req.id.clone(), index, verdict));
        }
        checks
    }
}
