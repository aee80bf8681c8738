//! The parking of 2026-07-28 calls that asked the client for input (Multi Round-Trip
//! Requests): each parked call's pending questions, the answers gathered so far, its round
//! and the nonce its `requestState` must carry, and the ids retried requests go by; and the
//! checks of asking that need no peer (what a request may ask, the `inputResponses` it
//! carries, the target its state binds to, automatic keys). A sub-machine of the peer: the
//! server role (`server_role::mrtr`, `server_role::task_input`) turns what it says into
//! responses and effects.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::jsonrpc::{ErrorObject, IdMap, Request, RequestId};
use crate::mcp::{method, missing_capability, ClientCapabilities};

/// One thing to ask the client: `method` is `elicitation/create`, `sampling/createMessage` or
/// `roots/list`; `key` names the answer in `inputResponses` (empty: the peer picks
/// `elicitation-1`, `sampling-2`, … numbered per call).
#[derive(Clone, Debug, PartialEq)]
pub struct InputRequest {
    /// The key of the request in `inputRequests` and of its answer in `inputResponses`.
    pub key: String,
    /// The client method.
    pub method: String,
    /// Its params.
    pub params: Value,
}

/// The client capability an input request needs, or `None` for a method that cannot be asked.
pub fn capability_of(method_name: &str) -> Option<&'static str> {
    match method_name {
        method::ELICITATION_CREATE => Some("elicitation"),
        method::SAMPLING_CREATE_MESSAGE => Some("sampling"),
        method::ROOTS_LIST => Some("roots"),
        _ => None,
    }
}

/// The length of a `requestState` nonce, in bytes.
pub(super) const NONCE_LEN: usize = 16;

/// A parked call.
#[derive(Debug)]
pub(super) struct Parked {
    /// The call's own id (of the request that started it).
    pub call: RequestId,
    pub round: u32,
    pub pending: Vec<InputRequest>,
    pub have: Map<String, Value>,
    pub expires: Instant,
    pub target: String,
    /// Drawn when the call was parked; its `requestState` must carry it.
    pub nonce: [u8; NONCE_LEN],
}

/// The parked calls and the ids retried requests go by.
#[derive(Debug, Default)]
pub(super) struct Parking {
    parked: HashMap<i64, Parked>,
    /// Id of a retried request -> id of the call it continues.
    aliases: IdMap<RequestId>,
}

/// Why a retry's `requestState` continues no parked call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RetryRefusal {
    /// Malformed, altered, of another request or of another server process.
    Integrity,
    /// The call it names no longer waits (ended or released).
    Gone,
    /// It is from an earlier round of the call.
    EarlierRound,
}

impl RetryRefusal {
    /// The -32602 error that says so (`ttl`: how long a parked call waits).
    pub(super) fn error(self, ttl: Duration) -> ErrorObject {
        ErrorObject::invalid_params(match self {
            RetryRefusal::Integrity => "requestState failed its integrity check: it was altered, belongs to another request, or was issued by another server process".to_owned(),
            RetryRefusal::Gone => format!(
                "requestState refers to a call that no longer waits for input (it ended, or was released {} after asking), or was altered; send the request again without requestState",
                crate::human::setting(ttl)
            ),
            RetryRefusal::EarlierRound => "requestState is from an earlier round of this request; retry with the newest one".to_owned(),
        })
    }
}

impl Parking {
    /// Number of calls parked.
    pub(super) fn len(&self) -> usize {
        self.parked.len()
    }

    pub(super) fn insert(&mut self, park: i64, parked: Parked) {
        self.parked.insert(park, parked);
    }

    pub(super) fn remove(&mut self, park: i64) -> Option<Parked> {
        self.parked.remove(&park)
    }

    /// The park a park id names, if that call is parked.
    pub(super) fn find(&self, park: &RequestId) -> Option<i64> {
        self.parked
            .keys()
            .find(|k| RequestId::number(**k) == *park)
            .copied()
    }

    /// The calls parked.
    pub(super) fn calls(&self) -> Vec<RequestId> {
        self.parked.values().map(|p| p.call.clone()).collect()
    }

    /// When parked call `park` is released unless retried.
    pub(super) fn expiry(&self, park: i64) -> Option<Instant> {
        self.parked.get(&park).map(|p| p.expires)
    }

    /// Every parked call's expiry (for tests of the timer table).
    #[cfg(test)]
    pub(super) fn expiries(&self) -> Vec<(i64, Instant)> {
        self.parked.iter().map(|(k, p)| (*k, p.expires)).collect()
    }

    /// The call a request id stands for: itself, or the call a retried request continues.
    pub(super) fn call_id_of(&self, wire: &RequestId) -> RequestId {
        self.aliases
            .get(wire)
            .cloned()
            .unwrap_or_else(|| wire.clone())
    }

    /// Retried request `retry` continues `call`.
    pub(super) fn alias(&mut self, retry: RequestId, call: RequestId) {
        self.aliases.insert(retry, call);
    }

    /// Forgets the ids retried requests of `call` went by (the call ended).
    pub(super) fn forget_aliases(&mut self, call: &RequestId) {
        if !self.aliases.is_empty() {
            self.aliases.retain(|_, c| c != call);
        }
    }

    /// What parked call `park` asks now: its `inputRequests` and `requestState`.
    pub(super) fn asking(&self, park: i64) -> Option<(Map<String, Value>, String)> {
        let p = self.parked.get(&park)?;
        let requests = p
            .pending
            .iter()
            .map(|r| {
                let v = json!({ "method": r.method, "params": r.params });
                (r.key.clone(), v)
            })
            .collect();
        let nonce: String = p.nonce.iter().map(|b| format!("{b:02x}")).collect();
        Some((requests, format!("v1.{park}.{}.{nonce}", p.round)))
    }

    /// The parked call a retry's `requestState` continues (park id, call id): it must name a
    /// parked call of the same request (`target`) with its nonce and current round.
    pub(super) fn check_retry(
        &self,
        state: &str,
        target: &str,
    ) -> Result<(i64, RequestId), RetryRefusal> {
        let (park, round, nonce) = parse_state(state).ok_or(RetryRefusal::Integrity)?;
        let p = self.parked.get(&park).ok_or(RetryRefusal::Gone)?;
        if !nonce_matches(&p.nonce, &nonce) || p.target != target {
            return Err(RetryRefusal::Integrity);
        }
        if p.round != round {
            return Err(RetryRefusal::EarlierRound);
        }
        Ok((park, p.call.clone()))
    }

    /// Takes the answers a retry carries for parked call `park`. Returns whether the call is
    /// done waiting (every question answered, or one left that the retry's capabilities
    /// cannot answer: that error), else starts its next round, waiting until `expires`.
    pub(super) fn take_answers(
        &mut self,
        park: i64,
        responses: &Map<String, Value>,
        caps: &ClientCapabilities,
        expires: Instant,
    ) -> (bool, Option<ErrorObject>) {
        let Some(p) = self.parked.get_mut(&park) else {
            return (true, None);
        };
        for r in &p.pending {
            if let Some(v) = responses.get(&r.key) {
                p.have.insert(r.key.clone(), v.clone());
            }
        }
        let have = &p.have;
        p.pending.retain(|r| !have.contains_key(&r.key));
        let undeclared = p
            .pending
            .iter()
            .find(|r| capability_of(&r.method).is_some_and(|c| !caps.has(c)))
            .map(|r| missing_capability(capability_of(&r.method).unwrap_or(""), &r.method));
        let done = p.pending.is_empty() || undeclared.is_some();
        if !done {
            p.round += 1;
            p.expires = expires;
        }
        (done, undeclared)
    }
}

/// The park and round a `requestState` names, if it is well formed; its nonce is compared
/// with the parked call's by [`nonce_matches`].
fn parse_state(state: &str) -> Option<(i64, u32, [u8; NONCE_LEN])> {
    let mut parts = state.split('.');
    let (Some("v1"), Some(park), Some(round), Some(hex), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    if hex.len() != 2 * NONCE_LEN || !hex.is_ascii() {
        return None;
    }
    let mut nonce = [0u8; NONCE_LEN];
    for (i, b) in nonce.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some((park.parse().ok()?, round.parse().ok()?, nonce))
}

/// Whether two nonces are equal, in time that does not depend on where they differ.
fn nonce_matches(a: &[u8; NONCE_LEN], b: &[u8; NONCE_LEN]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What [`Peer::ask`](super::Peer::ask) did.
#[derive(Clone, Debug, PartialEq)]
pub enum Asked {
    /// The request carried every answer already: here they are, by key.
    Answered(Map<String, Value>),
    /// The call is parked; the answers arrive as [`Effect::Response`](super::Effect::Response) with this id.
    Parked(RequestId),
}

/// Fills `buf` from std's randomly keyed SipHash over a counter: the default
/// [`Config::fill_random`](super::Config::fill_random), for a runtime that gives no better
/// source (stdmcp's runtime passes the kernel's random pool). Reads no clock.
pub fn hash_random(buf: &mut [u8]) {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    for chunk in buf.chunks_mut(8) {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
        chunk.copy_from_slice(&h.finish().to_le_bytes()[..chunk.len()]);
    }
}

/// What a request binds its state to: method and tool, prompt or URI.
pub(super) fn target_of(req: &Request) -> String {
    let name = ["name", "uri"]
        .iter()
        .find_map(|k| req.params.get(*k).and_then(Value::as_str))
        .unwrap_or("");
    format!("{}\0{name}", req.method)
}

/// True for the methods that may answer `input_required`.
pub(super) fn may_ask(method_name: &str) -> bool {
    matches!(
        method_name,
        method::TOOLS_CALL | method::PROMPTS_GET | method::RESOURCES_READ
    )
}

/// The `inputResponses` of a request, checked: an object of objects, or absent.
pub(super) fn input_responses(params: &Value) -> Result<Map<String, Value>, ErrorObject> {
    match params.get("inputResponses") {
        None => Ok(Map::new()),
        Some(Value::Object(m)) => match m.iter().find(|(_, v)| !v.is_object()) {
            Some((k, _)) => Err(ErrorObject::invalid_params(format!(
                "inputResponses.{k} must be an object (the client's result for that input request)"
            ))),
            None => Ok(m.clone()),
        },
        Some(_) => Err(ErrorObject::invalid_params(
            "inputResponses must be an object mapping input request keys to results",
        )),
    }
}

/// Every request must be askable, of a declared capability, under a key of its own.
pub(super) fn check_requests(
    caps: &ClientCapabilities,
    requests: &[InputRequest],
) -> Result<(), ErrorObject> {
    for (i, r) in requests.iter().enumerate() {
        let Some(cap) = capability_of(&r.method) else {
            return Err(ErrorObject::internal(format!(
                    "{} cannot be asked of the client (only elicitation/create, sampling/createMessage, roots/list)",
                    r.method
                )));
        };
        if !caps.has(cap) {
            return Err(missing_capability(cap, &r.method));
        }
        if requests[..i].iter().any(|o| o.key == r.key) {
            return Err(ErrorObject::internal(format!(
                "input key {} used twice",
                r.key
            )));
        }
    }
    Ok(())
}

/// The key the `n`th automatic input request of a call gets (`elicitation-1`, …).
pub fn auto_key(method_name: &str, n: u32) -> String {
    let kind = method_name.split('/').next().unwrap_or("input");
    format!("{kind}-{n}")
}
