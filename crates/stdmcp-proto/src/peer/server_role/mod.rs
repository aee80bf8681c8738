//! The server role: the front that answers requests. Every part here is `impl Peer`: it
//! asks the sub-machines (`peer::call`, `peer::parking`, `peer::jobs`, `peer::batch`,
//! `peer::subscriptions`, `peer::timers`) and turns what they say into effects.
//!
//! This file holds era selection and the method tables of both eras. Dispatch follows MCP
//! 2026-07-28, Lifecycle: Backward Compatibility: a request whose `_meta` names a protocol
//! version takes the stateless 2026-07-28 path (`stateless`); `initialize` starts a
//! handshake-era connection (`handshake`); a connection's requests use its negotiated revision;
//! anything else is answered at once, never left silent. The rest, by concern: the calls
//! whose work runs, with their progress, heartbeats, cancels and deadlines (`calls`); jobs
//! and the job tools (`jobs`); tasks and the questions a task asks (`tasks`, `task_input`);
//! asking the client through `input_required` results (`mrtr`); resource subscriptions
//! (`subscriptions`); 2025-03-26 batches (`batch`).

mod batch;
mod calls;
mod handshake;
mod jobs;
mod mrtr;
mod stateless;
mod subscriptions;
mod task_input;
mod tasks;

use super::diag::note;
use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::arguments::validate_arguments;
use super::call::Inflight;
use super::effect::Effect;
use super::front::Peer;
use super::terms::{meta, progress_token, Terms};
use super::work::{Admitted, Work};
use crate::jsonrpc::{self, ErrorObject, Incoming, Message, Notification, Request, RequestId};
use crate::mcp::{self, gate, meta_key, method, LogLevel, ProtocolVersion};

/// Methods this server answers once the era is known: before `initialize`, and without a
/// 2026-07-28 `_meta`, these get -32602 saying how to proceed; any other method -32601.
const CONNECTION_METHODS: [&str; 13] = [
    method::DISCOVER,
    method::SUBSCRIPTIONS_LISTEN,
    method::TOOLS_LIST,
    method::TOOLS_CALL,
    method::PROMPTS_LIST,
    method::PROMPTS_GET,
    method::RESOURCES_LIST,
    method::RESOURCES_TEMPLATES_LIST,
    method::RESOURCES_READ,
    method::RESOURCES_SUBSCRIBE,
    method::RESOURCES_UNSUBSCRIBE,
    method::COMPLETION_COMPLETE,
    method::LOGGING_SET_LEVEL,
];

impl Peer {
    pub(super) fn server_incoming(&mut self, now: Instant, incoming: Incoming) {
        match incoming {
            Incoming::Single(Ok(msg)) => self.server_message(now, msg),
            Incoming::Single(Err(invalid)) => self.send_error(invalid.id.as_ref(), &invalid.error),
            Incoming::Batch(items) => self.server_batch(now, items),
        }
    }

    pub(super) fn server_message(&mut self, now: Instant, msg: Message) {
        match msg {
            Message::Request(req) => self.server_request(now, req),
            Message::Notification(n) => self.server_notification(n),
            Message::Response(r) => self.handle_response(r),
        }
    }

    fn server_notification(&mut self, n: Notification) {
        match n.method.as_str() {
            method::INITIALIZED => {
                if let Some(s) = &mut self.handshake {
                    s.initialized = true;
                }
            }
            method::CANCELLED => {
                // A missing or unknown id is ignored (MCP 2025-11-25, Utilities: Cancellation).
                let Some(id) = n.params.get("requestId").and_then(RequestId::from_value) else {
                    return;
                };
                // A retried 2026-07-28 request stands for the call it continues.
                let id = self.call_id_of(&id);
                if let Some(i) = self.listens.iter().position(|l| *l == id) {
                    self.listens.remove(i);
                } else if self.calls.get(&id).is_some_and(|c| c.job().is_some()) {
                    // Answered with a job: only job_cancel or tasks/cancel stop it now.
                    note!(self, Debug, "cancel for {id} ignored: it goes on as a job");
                } else if !self.cancel_call(&id) {
                    note!(self, Debug, "cancel for {id}, which is not running");
                }
            }
            _ => self.effects.push_back(Effect::Notification(n)),
        }
    }

    fn server_request(&mut self, now: Instant, req: Request) {
        if self.closing {
            let e = ErrorObject::internal("The server is shutting down");
            return self.send_error(Some(&req.id), &e);
        }
        // Before anything else: a duplicate must not be answered as if it were the first
        // (JSON-RPC 2.0 ids are unique among requests in flight); the first one goes on.
        if self.calls.contains_key(&req.id)
            || self.jobs.waits.contains(&req.id)
            || self.listens.contains(&req.id)
        {
            let e = ErrorObject::invalid_request(format!(
                "Invalid request: id {} is already in use by a request in flight",
                jsonrpc::quote(&req.id.to_string())
            ));
            return self.send_error(Some(&req.id), &e);
        }
        if let Some(v) = meta(&req.params).and_then(|m| m.get(meta_key::PROTOCOL_VERSION)) {
            if self.config.handshake_only {
                if self.handshake.is_none() {
                    return self.refuse_stateless(&req);
                }
                // A connection's request that also names a revision: the connection decides.
            } else {
                let v = v.clone();
                return self.stateless_request(now, req, &v);
            }
        }
        if req.method == method::INITIALIZE {
            return self.initialize(req);
        }
        match &self.handshake {
            Some(s) => {
                let terms = Terms {
                    version: s.version,
                    stateless: false,
                    caps: s.client_capabilities.clone(),
                    log_level: None,
                };
                self.handshake_request(now, req, terms)
            }
            None if req.method == method::PING => self.send_result(&req.id, &json!({})),
            None if !CONNECTION_METHODS.contains(&req.method.as_str()) => {
                self.send_error(Some(&req.id), &ErrorObject::method_not_found(&req.method))
            }
            None => {
                let e = ErrorObject::invalid_params(format!(
                    "{} needs either the initialize handshake first or, for protocol 2026-07-28, \
                     params._meta with \"{}\" and \"{}\"",
                    req.method,
                    meta_key::PROTOCOL_VERSION,
                    meta_key::CLIENT_CAPABILITIES
                ))
                .with_data(json!({ "supported": ProtocolVersion::all_strs() }));
                self.send_error(Some(&req.id), &e)
            }
        }
    }

    /// Handshake era only ([`super::Config::handshake_only`]): `server/discover` is an unknown
    /// method, so that a client falls back to `initialize` (2026-07-28, Versioning:
    /// backward compatibility); any other stateless request names a revision not served.
    fn refuse_stateless(&mut self, req: &Request) {
        let supported: Vec<&str> = ProtocolVersion::all_strs()
            .into_iter()
            .filter(|v| ProtocolVersion::parse(v).is_some_and(ProtocolVersion::is_handshake_era))
            .collect();
        let e = if req.method == method::DISCOVER {
            ErrorObject::method_not_found(&req.method)
        } else {
            let asked = meta(&req.params)
                .and_then(|m| m.get(meta_key::PROTOCOL_VERSION))
                .cloned()
                .unwrap_or(Value::Null);
            ErrorObject::new(
                crate::jsonrpc::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                format!(
                    "Unsupported protocol version: this server speaks only the initialize handshake ({}); send initialize first",
                    supported.join(", ")
                ),
            )
            .with_data(json!({ "supported": supported, "requested": asked }))
        };
        self.send_error(Some(&req.id), &e);
    }

    fn handshake_request(&mut self, now: Instant, req: Request, terms: Terms) {
        match req.method.as_str() {
            method::PING => self.send_result(&req.id, &json!({})),
            method::LOGGING_SET_LEVEL => {
                match req
                    .params
                    .get("level")
                    .and_then(Value::as_str)
                    .and_then(LogLevel::parse)
                {
                    Some(level) => {
                        if let Some(s) = &mut self.handshake {
                            s.log_level = Some(level);
                        }
                        self.send_result(&req.id, &json!({}))
                    }
                    None => {
                        let e = ErrorObject::invalid_params(
                            "logging/setLevel needs params.level: one of debug, info, notice, warning, error, critical, alert, emergency",
                        );
                        self.send_error(Some(&req.id), &e)
                    }
                }
            }
            method::RESOURCES_SUBSCRIBE | method::RESOURCES_UNSUBSCRIBE if self.has_resources() => {
                let known = req
                    .params
                    .get("uri")
                    .and_then(Value::as_str)
                    .is_some_and(|u| self.has_resource(u));
                self.subscription_request(&req, known);
            }
            _ => self.common_request(now, req, terms),
        }
    }

    /// A resource of the catalog, or a URI of one of its templates' forms (whether such a
    /// resource exists is known only when it is read).
    fn has_resource(&self, uri: &str) -> bool {
        self.catalog.resources.iter().any(|r| r.uri == uri)
            || self
                .catalog
                .resource_templates
                .iter()
                .any(|t| crate::mcp::template::match_template(&t.uri_template, uri).is_some())
    }

    fn has_resources(&self) -> bool {
        !self.catalog.resources.is_empty() || !self.catalog.resource_templates.is_empty()
    }

    /// Methods both eras share.
    pub(super) fn common_request(&mut self, now: Instant, req: Request, terms: Terms) {
        let catalog = self.catalog.clone();
        let v = terms.version;
        match req.method.as_str() {
            method::TOOLS_LIST => {
                self.list(&req, &terms, "tools", &catalog.tools, |t| gate::tool(t, v));
            }
            method::TOOLS_CALL => self.call_tool(now, req, terms),
            method::PROMPTS_LIST if !catalog.prompts.is_empty() => {
                self.list(&req, &terms, "prompts", &catalog.prompts, |p| {
                    gate::prompt(p, v)
                });
            }
            method::PROMPTS_GET if !catalog.prompts.is_empty() => self.get_prompt(now, req, terms),
            method::RESOURCES_LIST if self.has_resources() => {
                self.list(&req, &terms, "resources", &catalog.resources, |r| {
                    gate::resource(r, v)
                });
            }
            method::RESOURCES_TEMPLATES_LIST if self.has_resources() => {
                let items = &catalog.resource_templates;
                self.list(&req, &terms, "resourceTemplates", items, |r| {
                    gate::resource_template(r, v)
                });
            }
            method::RESOURCES_READ if self.has_resources() => {
                match req.params.get("uri").and_then(Value::as_str) {
                    Some(uri) => {
                        let work = Work::ReadResource {
                            uri: uri.to_owned(),
                        };
                        self.start(now, req, terms, work);
                    }
                    None => self.send_error(
                        Some(&req.id),
                        &ErrorObject::invalid_params("params.uri (a string) is required"),
                    ),
                }
            }
            method::COMPLETION_COMPLETE if self.has_completions() => {
                let work = Work::Complete {
                    params: req.params.clone(),
                };
                self.start(now, req, terms, work);
            }
            m => self.send_error(Some(&req.id), &ErrorObject::method_not_found(m)),
        }
    }

    /// A page of a list result (MCP 2025-11-25, Utilities: Pagination); the cursor is the offset, as text.
    pub(super) fn list<T, U: Serialize>(
        &mut self,
        req: &Request,
        terms: &Terms,
        key: &str,
        items: &[T],
        gate: impl Fn(&T) -> U,
    ) {
        let start = match req.params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => match c.parse::<usize>() {
                Ok(n) if n <= items.len() => n,
                _ => {
                    return self.send_error(
                        Some(&req.id),
                        &ErrorObject::invalid_params(format!(
                            "Invalid cursor: {}",
                            jsonrpc::quote(c)
                        )),
                    )
                }
            },
            Some(_) => {
                return self.send_error(
                    Some(&req.id),
                    &ErrorObject::invalid_params("The cursor must be a string"),
                )
            }
        };
        let end = items.len().min(start + self.config.page_size.max(1));
        let page: Vec<U> = items[start..end].iter().map(gate).collect();
        let mut result = Map::new();
        result.insert(
            key.to_owned(),
            serde_json::to_value(page).unwrap_or(Value::Null),
        );
        if end < items.len() {
            result.insert("nextCursor".into(), Value::String(end.to_string()));
        }
        let result = Value::Object(result);
        if terms.stateless {
            self.send_stateless_result(&req.id, &result, true);
        } else {
            self.send_result(&req.id, &result);
        }
    }

    fn call_tool(&mut self, now: Instant, mut req: Request, terms: Terms) {
        let Value::Object(params) = &mut req.params else {
            return self.send_error(
                Some(&req.id),
                &ErrorObject::invalid_params("tools/call needs params with a tool name"),
            );
        };
        // Taken out, not copied: nothing reads a call's `params.arguments` after this.
        let arguments = params.remove("arguments");
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return self.send_error(
                Some(&req.id),
                &ErrorObject::invalid_params("tools/call needs params.name (a string)"),
            );
        };
        let arguments = match arguments {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(a @ Value::Object(_)) => a,
            Some(_) => {
                return self.send_error(
                    Some(&req.id),
                    &ErrorObject::invalid_params("tools/call params.arguments must be an object"),
                )
            }
        };
        let Some(index) = self.catalog.tool_index(name) else {
            let e = ErrorObject::invalid_params(format!("Unknown tool: {}", jsonrpc::quote(name)));
            return self.send_error(Some(&req.id), &e);
        };
        // A tool that needs a client capability this request lacks (MCP 2026-07-28, request metadata):
        // -32021 in 2026-07-28, a tool error before (the code does not exist there).
        let requires = self
            .catalog
            .tool_requirements
            .get(index)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if let Some(missing) = requires.iter().find(|c| !terms.caps.has(c)) {
            if terms.stateless {
                let e = crate::mcp::missing_capability(missing, &format!("Tool {name}"));
                return self.send_error(Some(&req.id), &e);
            }
            let text = format!("Tool {name} needs the client capability `{missing}`, which this client did not declare");
            let result = gate::call_result(mcp::CallToolResult::error(text), terms.version);
            return self.send_result(&req.id, &result);
        }
        // Arguments that fail the schema are a tool error the model can correct, in every
        // revision (MCP 2025-11-25, Tools: Error Handling). The check was made before the
        // peer was handed the frame, where the caller could ([`Peer::handle_checked`]).
        let checked = self.checked.take(&req.id, index);
        let verdict =
            checked.unwrap_or_else(|| validate_arguments(&self.catalog, index, &arguments));
        if let Err(problem) = verdict {
            let result = gate::call_result(
                mcp::CallToolResult::error(format!(
                    "Invalid arguments for tool {name}: {}",
                    jsonrpc::quote(&problem.to_string())
                )),
                terms.version,
            );
            return if terms.stateless {
                self.send_stateless_result(&req.id, &result, false)
            } else {
                self.send_result(&req.id, &result)
            };
        }
        if self.job_tool(now, &req, &terms, index, &arguments) {
            return;
        }
        self.start(
            now,
            req,
            terms,
            Work::CallTool {
                tool: index,
                arguments,
            },
        );
    }

    fn get_prompt(&mut self, now: Instant, req: Request, terms: Terms) {
        let Some(name) = req.params.get("name").and_then(Value::as_str) else {
            return self.send_error(
                Some(&req.id),
                &ErrorObject::invalid_params("prompts/get needs params.name (a string)"),
            );
        };
        let Some(index) = self.catalog.prompts.iter().position(|p| p.name == name) else {
            return self.send_error(
                Some(&req.id),
                &ErrorObject::invalid_params(format!("Unknown prompt: {}", jsonrpc::quote(name))),
            );
        };
        let arguments = match req.params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(a)) if a.values().all(Value::is_string) => a.clone(),
            Some(_) => {
                let e = ErrorObject::invalid_params(
                    "prompts/get params.arguments must map names to strings",
                );
                return self.send_error(Some(&req.id), &e);
            }
        };
        let missing = self.catalog.prompts[index]
            .arguments
            .iter()
            .flatten()
            .find(|a| a.required == Some(true) && !arguments.contains_key(&a.name));
        if let Some(a) = missing {
            let e = ErrorObject::invalid_params(format!(
                "Missing required argument for prompt {name}: {}",
                a.name
            ));
            return self.send_error(Some(&req.id), &e);
        }
        self.start(
            now,
            req,
            terms,
            Work::GetPrompt {
                prompt: index,
                arguments,
            },
        );
    }

    fn start(&mut self, now: Instant, req: Request, terms: Terms, work: Work) {
        let mut inflight = Inflight::new(now, req.id.clone(), terms.version, terms.stateless);
        if terms.stateless && super::parking::may_ask(&req.method) {
            // Checked by `resume` already; answers the work can take by key.
            inflight.input = super::parking::input_responses(&req.params).unwrap_or_default();
            inflight.target = Some(super::parking::target_of(&req));
        }
        inflight.caps = terms.caps.clone();
        inflight.progress_token = progress_token(&req.params);
        inflight.log_level = terms.log_level;
        inflight.cacheable = matches!(work, Work::ReadResource { .. });
        if let Work::CallTool { tool, arguments } = &work {
            let rule = self
                .catalog
                .tool_timeouts
                .get(*tool)
                .and_then(Option::as_ref);
            inflight.deadline = rule.map(|r| now + r.for_call(arguments));
            let background = self.catalog.tool_background.get(*tool).copied().flatten();
            inflight.background_at = background.and_then(|b| now.checked_add(b));
            inflight.tool = Some(*tool);
            inflight.slots = self.catalog.tool_slots.get(*tool).copied().unwrap_or(1);
        }
        let slots = inflight.slots;
        let deadline = inflight.deadline;
        // A call that may become a job reports its output lines even without a token.
        let wants_progress = inflight.progress_token.is_some() || inflight.background_at.is_some();
        let max = self.config.max_running;
        let start = Admitted {
            id: req.id.clone(),
            work,
            version: terms.version,
            wants_progress,
            client_capabilities: terms.caps,
            deadline,
            slots,
        };
        // Started when admitted: now, or when slots free up (the start waits in the call).
        let admitted = self.calls.admit(&mut inflight, start, max);
        self.calls.insert(req.id.clone(), inflight);
        self.sync_call_timers(&req.id);
        if let Some(start) = admitted {
            self.effects.push_back(Effect::Start(start));
        }
    }

    /// Stops accepting requests: new ones are answered with an error at once; work in flight
    /// goes on.
    pub fn close(&mut self) {
        self.closing = true;
        // No retry can arrive once requests are refused: parked calls stop waiting.
        self.release_all_parked();
    }

    /// Starts shutting down: closes open subscriptions with a final result, cancels all work
    /// in flight, and refuses new requests.
    pub fn shutdown(&mut self) {
        self.closing = true;
        for id in std::mem::take(&mut self.listens) {
            let idv = serde_json::to_value(&id).unwrap_or(Value::Null);
            let result =
                json!({ "resultType": "complete", "_meta": { meta_key::SUBSCRIPTION_ID: idv } });
            self.send_result(&id, &result);
        }
        self.cancel_all();
    }
}
