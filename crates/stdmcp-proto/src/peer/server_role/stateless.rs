//! The stateless 2026-07-28 path (MCP 2026-07-28: request metadata, Server Discovery,
//! Lifecycle: Backward Compatibility, Subscriptions, Caching): per-request version
//! and capabilities, `server/discover`, `subscriptions/listen`, and the fields every result
//! carries.

use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::jsonrpc::{self, ErrorCode, ErrorObject, Request, RequestId};
use crate::mcp::{meta_key, method, ClientCapabilities, ProtocolVersion};
use crate::peer::front::Peer;
use crate::peer::terms::{meta, Terms};

const REMOVED_IN_2026: [&str; 7] = [
    method::INITIALIZE,
    method::PING,
    method::LOGGING_SET_LEVEL,
    method::RESOURCES_SUBSCRIBE,
    method::RESOURCES_UNSUBSCRIBE,
    "tasks/result",
    "tasks/list",
];

impl Peer {
    pub(in crate::peer) fn stateless_request(
        &mut self,
        now: Instant,
        req: Request,
        version: &Value,
    ) {
        let Some(asked) = version.as_str() else {
            let e = ErrorObject::invalid_params(format!(
                "_meta \"{}\" must be a string",
                meta_key::PROTOCOL_VERSION
            ));
            return self.send_error(Some(&req.id), &e);
        };
        let Some(version) = ProtocolVersion::parse(asked) else {
            let e = ErrorObject::new(
                ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                format!("Unsupported protocol version: {}", jsonrpc::quote(asked)),
            )
            .with_data(
                json!({ "supported": ProtocolVersion::all_strs(), "requested": jsonrpc::quote(asked) }),
            );
            return self.send_error(Some(&req.id), &e);
        };
        let caps = match meta(&req.params).and_then(|m| m.get(meta_key::CLIENT_CAPABILITIES)) {
            Some(c @ Value::Object(_)) => c.clone(),
            _ => {
                let e = ErrorObject::invalid_params(format!(
                    "Missing required _meta field \"{}\" (an object)",
                    meta_key::CLIENT_CAPABILITIES
                ));
                return self.send_error(Some(&req.id), &e);
            }
        };
        let log_level = match Peer::check_log_level(&req.params) {
            Ok(l) => l,
            Err(e) => return self.send_error(Some(&req.id), &e),
        };
        let terms = Terms {
            version,
            stateless: true,
            caps: ClientCapabilities::new(caps),
            log_level,
        };
        match req.method.as_str() {
            method::DISCOVER => {
                let result = json!({
                    "supportedVersions": ProtocolVersion::all_strs(),
                    "capabilities": self.capabilities(version, true),
                    "instructions": self.catalog.instructions,
                });
                let mut result = result;
                if self.catalog.instructions.is_none() {
                    result.as_object_mut().map(|o| o.remove("instructions"));
                }
                self.send_stateless_result(&req.id, &result, true);
            }
            method::SUBSCRIPTIONS_LISTEN => self.listen(req),
            m if super::tasks::TASK_METHODS.contains(&m) => self.task_request(now, &req, &terms),
            m if REMOVED_IN_2026.contains(&m) => {
                let e = ErrorObject::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("Method not found: {m} (not part of protocol 2026-07-28)"),
                );
                self.send_error(Some(&req.id), &e)
            }
            m if crate::peer::parking::may_ask(m) && self.resume(now, &req, &terms) => {}
            _ => self.common_request(now, req, terms),
        }
    }

    /// Adds what every 2026-07-28 result carries: `resultType`, server info, and for
    /// cacheable results `ttlMs`/`cacheScope` (MCP 2026-07-28, Caching).
    pub(in crate::peer) fn send_stateless_result<T: Serialize + ?Sized>(
        &mut self,
        id: &RequestId,
        result: &T,
        cacheable: bool,
    ) {
        self.send_stateless_typed(id, result, cacheable, "complete");
    }

    /// As [`Peer::send_stateless_result`], with this `resultType`.
    pub(in crate::peer) fn send_stateless_typed<T: Serialize + ?Sized>(
        &mut self,
        id: &RequestId,
        result: &T,
        cacheable: bool,
        result_type: &str,
    ) {
        let mut v = match serde_json::to_value(result) {
            Ok(Value::Object(m)) => m,
            Ok(other) => {
                let mut m = Map::new();
                m.insert("value".into(), other);
                m
            }
            Err(e) => {
                return self.send_error(
                    Some(id),
                    &ErrorObject::internal(format!("could not serialize a result: {e}")),
                )
            }
        };
        v.insert("resultType".into(), json!(result_type));
        let info = serde_json::to_value(&self.catalog.server_info).unwrap_or(Value::Null);
        match v.entry("_meta").or_insert_with(|| json!({})) {
            Value::Object(m) => {
                m.insert(meta_key::SERVER_INFO.into(), info);
            }
            other => *other = json!({ meta_key::SERVER_INFO: info }),
        }
        if cacheable {
            v.insert("ttlMs".into(), json!(self.config.list_ttl_ms));
            v.insert("cacheScope".into(), json!("public"));
        }
        self.send_result(id, &Value::Object(v));
    }

    fn listen(&mut self, req: Request) {
        // The lists never change at run time, so every list-change stream is honoured
        // trivially; resource subscriptions only for resources that exist (§4.7).
        let asked = req
            .params
            .get("notifications")
            .cloned()
            .unwrap_or(json!({}));
        let mut honoured = Map::new();
        for key in [
            "toolsListChanged",
            "promptsListChanged",
            "resourcesListChanged",
        ] {
            if asked.get(key) == Some(&Value::Bool(true)) {
                honoured.insert(key.into(), Value::Bool(true));
            }
        }
        if let Some(Value::Array(uris)) = asked.get("resourceSubscriptions") {
            let known: Vec<Value> = uris
                .iter()
                .filter(|u| {
                    self.catalog
                        .resources
                        .iter()
                        .any(|r| Some(r.uri.as_str()) == u.as_str())
                })
                .cloned()
                .collect();
            honoured.insert("resourceSubscriptions".into(), Value::Array(known));
        }
        let id = serde_json::to_value(&req.id).unwrap_or(Value::Null);
        let ack = json!({ "_meta": { meta_key::SUBSCRIPTION_ID: id }, "notifications": honoured });
        self.send_notification(method::SUBSCRIPTIONS_ACKNOWLEDGED, &ack);
        self.listens.push(req.id);
    }
}
