//! The tools of each session kind (`K_start`, `K_send`, `K_interrupt`, `K_stop`,
//! `K_restart`), the `sessions` tool, and the transcript resources.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use super::ops::{self, Target};
use super::registry::Registry;
use super::tool_parts::{annotations, name_of, object, reply, session_param, with_call};
use crate::spec::session::{signal_name, SessionKind, Workdir};
use stdmcp::jsonrpc::ErrorObject;
use stdmcp::mcp::{CallToolResult, Resource, ResourceContents, ResourceTemplate, ToolAnnotations};
use stdmcp::{Ctx, Server, ToolDef, ToolError, ToolResult};
use stdmcp_proto::peer::Timeout;

/// Longest input of one send, in bytes.
pub(super) const MAX_INPUT: usize = 1024 * 1024;
/// The largest `maxOutputBytes` a send may ask for (or the kind's, if larger).
pub(super) const MAX_SEND_OUTPUT: usize = 1024 * 1024;

fn max_send_output(kind: &SessionKind) -> usize {
    kind.max_output_bytes.max(MAX_SEND_OUTPUT)
}

type Handler = dyn Fn(&Ctx, &Arc<Registry>, &Arc<SessionKind>, &Value) -> ToolResult + Send + Sync;

fn tool(
    reg: &Arc<Registry>,
    kind: &Arc<SessionKind>,
    suffix: &str,
    description: String,
    schema: Value,
    hints: ToolAnnotations,
    handler: Box<Handler>,
) -> ToolDef {
    let (reg, kind) = (reg.clone(), kind.clone());
    ToolDef::new(
        format!("{}_{suffix}", kind.name),
        description,
        schema,
        move |ctx, args| handler(ctx, &reg, &kind, &args),
    )
    .annotations(hints)
}

/// How long a stop may wait for an input under way to give the session back.
const STOP_WAIT: Duration = Duration::from_secs(30);

/// The five tools of one kind.
fn kind_tools(reg: &Arc<Registry>, kind: &Arc<SessionKind>) -> Vec<ToolDef> {
    // How long a start (or restart) may wait for a busy session and then for the greeting.
    let starting = kind.startup_timeout + kind.max_timeout;
    vec![
        start_tool(reg, kind).timeout(starting),
        send_tool(reg, kind),
        tool(
            reg,
            kind,
            "interrupt",
            format!(
                "Interrupt the input the {} session is running ({} to its process group); \
                 the running send then answers with what the program printed.",
                kind.name,
                signal_name(kind.interrupt_signal)
            ),
            session_only(),
            annotations(false, false, false),
            Box::new(|_, reg, kind, args| reply(ops::interrupt(Target { reg, kind, name: &name_of(args)? }))),
        ),
        tool(
            reg,
            kind,
            "stop",
            format!("Stop the {} session: its program is killed, its state lost.", kind.name),
            session_only(),
            annotations(false, true, true),
            Box::new(|ctx, reg, kind, args| {
                let name = name_of(args)?;
                reply(with_call(ctx, |c| ops::stop(Target { reg, kind, name: &name }, c)))
            }),
        )
        .timeout(STOP_WAIT),
        tool(
            reg,
            kind,
            "restart",
            format!(
                "Restart the {} session with a fresh program (its state is lost); returns the greeting.",
                kind.name
            ),
            session_only(),
            annotations(false, true, false),
            Box::new(|ctx, reg, kind, args| {
                let name = name_of(args)?;
                reply(with_call(ctx, |c| ops::restart(Target { reg, kind, name: &name }, c)))
            }),
        )
        .timeout(starting),
    ]
}

/// The input schema of a tool whose only argument is `session`.
fn session_only() -> Value {
    object(json!({"session": session_param()}), &[])
}

fn start_tool(reg: &Arc<Registry>, kind: &Arc<SessionKind>) -> ToolDef {
    let mut props = json!({"session": session_param()});
    if let Workdir::Param {
        root_name, default, ..
    } = &kind.workdir
    {
        props["workdir"] = json!({"type": "string", "description": format!(
            "Working directory, relative to the root {root_name}; used when the session \
             starts (default: where it ran before, else {default:?}). A running session is \
             not moved: asking for another directory is an error."
        )});
    }
    for (name, p) in &kind.params {
        props[name] = crate::call::schema::param_schema(p, &kind.roots);
    }
    let required: Vec<&str> = kind
        .params
        .iter()
        .filter(|(_, p)| p.required)
        .map(|(n, _)| n.as_str())
        .collect();
    let params = if kind.params.is_empty() {
        String::new()
    } else {
        " Start parameters apply when the session (re)starts and are kept across restarts; a \
         running session asked for others says so."
            .into()
    };
    let description = format!(
        "Start the {} session and return its greeting. Idempotent: a running session says so \
         and shows {}; a dead one is restarted (in the same directory).{params} {}",
        kind.name,
        if kind.status.is_some() {
            "its status"
        } else {
            "its last answer"
        },
        kind.description
    );
    let handler: Box<Handler> = Box::new(|ctx, reg, kind, args| {
        let name = name_of(args)?;
        let wd = match args.get("workdir") {
            None | Some(Value::Null) => None,
            Some(Value::String(w)) => Some(w.as_str()),
            Some(_) => return Err(ToolError::msg("workdir must be a string")),
        };
        // Everything else is a start parameter (checked by the kind's `params`).
        let params: serde_json::Map<String, Value> = args
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| !matches!(k.as_str(), "session" | "workdir") && !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        reply(with_call(ctx, |c| {
            ops::start(
                Target {
                    reg,
                    kind,
                    name: &name,
                },
                (wd, params),
                c,
            )
        }))
    });
    let schema = object(props, &required);
    tool(
        reg,
        kind,
        "start",
        description,
        schema,
        annotations(false, false, true),
        handler,
    )
}

fn send_tool(reg: &Arc<Registry>, kind: &Arc<SessionKind>) -> ToolDef {
    let description = format!(
        "Send one input to the {} session and return its answer (stdout and stderr in the \
         order the program wrote them); starts the session if it never ran. State persists \
         across sends; one input runs at a time. Timeout {} s unless `timeout` says otherwise \
         (at most {} s); on timeout the program is interrupted and the session kept. An answer \
         longer than {} bytes (`maxOutputBytes`) is cut (head and tail) and kept whole for the \
         `output` tool. {}",
        kind.name,
        kind.timeout.as_secs_f64(),
        kind.max_timeout.as_secs_f64(),
        kind.max_output_bytes,
        kind.description
    );
    let schema = object(
        json!({
            "session": session_param(),
            "input": {"type": "string", "description": "The input, as typed at the prompt.", "maxLength": MAX_INPUT},
            "timeout": {"type": "number", "description": "Seconds to wait for the answer.",
                        "exclusiveMinimum": 0, "maximum": kind.max_timeout.as_secs_f64()},
            "maxOutputBytes": {"type": "integer", "minimum": 1, "maximum": max_send_output(kind),
                               "description": format!("Bytes of the answer shown (head and tail; default {}); the whole answer is kept for the `output` tool.", kind.max_output_bytes)}
        }),
        &["input"],
    );
    let handler: Box<Handler> = Box::new(|ctx, reg, kind, args| {
        let (name, input, cap) = send_args(kind, args)?;
        // The same rule gave the call its deadline (`send_timeout`); this is for the reply.
        let limit = send_timeout(kind).for_call(args);
        let on = Target {
            reg,
            kind,
            name: &name,
        };
        reply(with_call(ctx, |c| ops::send(on, input, (limit, cap), c)))
    });
    tool(
        reg,
        kind,
        "send",
        description,
        schema,
        annotations(false, true, false),
        handler,
    )
    .timeout_rule(send_timeout(kind))
}

/// A send's session name, input and output cap, checked.
fn send_args<'a>(
    kind: &SessionKind,
    args: &'a Value,
) -> Result<(String, &'a str, usize), ToolError> {
    let name = name_of(args)?;
    let input = args
        .get("input")
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::msg("input (a string) is required"))?;
    if input.len() > MAX_INPUT || (kind.input_nul && input.contains('\0')) {
        return Err(ToolError::msg(format!(
            "input must be at most {MAX_INPUT} bytes (and without NUL for this kind)"
        )));
    }
    match args.get("timeout") {
        None | Some(Value::Null) => {}
        Some(t) if t.as_f64().is_some_and(|t| t > 0.0 && t.is_finite()) => {}
        Some(_) => {
            return Err(ToolError::msg(
                "timeout must be a positive number of seconds",
            ))
        }
    }
    let cap = match args.get("maxOutputBytes") {
        None | Some(Value::Null) => kind.max_output_bytes,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=max_send_output(kind) as u64).contains(&n) => n as usize,
            _ => {
                return Err(ToolError::msg(format!(
                    "maxOutputBytes must be an integer from 1 to {}",
                    max_send_output(kind)
                )))
            }
        },
    };
    Ok((name, input, cap))
}

/// A send's deadline: its `timeout` argument, else the kind's, at most the kind's largest.
fn send_timeout(kind: &SessionKind) -> Timeout {
    Timeout::Argument {
        name: "timeout".into(),
        default: kind.timeout,
        max: kind.max_timeout,
    }
}

/// The `sessions` tool's answer.
fn list(reg: &Registry) -> CallToolResult {
    let mut rows = Vec::new();
    let mut text = String::new();
    reg.each(|(kind, name), e| {
        let now = std::time::Instant::now();
        let (pid, age, started) = match &e.proc {
            Some(p) => (
                Some(p.pid),
                Some(now.duration_since(p.started).as_secs()),
                p.started_at.duration_since(SystemTime::UNIX_EPOCH).ok().map(|d| d.as_secs()),
            ),
            None => (None, None, None),
        };
        let idle_for = now.duration_since(e.last_used);
        let idle = idle_for.as_secs();
        let state = e.state();
        let age_text = e.proc.as_ref().map_or_else(
            || "-".into(),
            |p| stdmcp_proto::human::elapsed(now.duration_since(p.started)),
        );
        // The start parameters the program runs with (else those a restart will use).
        let params = e
            .proc
            .as_ref()
            .map(|p| p.launch.given.clone())
            .or_else(|| e.launch.as_ref().map(|l| l.given.clone()))
            .unwrap_or_default();
        let shown = if params.is_empty() {
            String::new()
        } else {
            format!(", start parameters {}", Value::Object(params.clone()))
        };
        text.push_str(&format!(
            "{kind}/{name}: {state}, pid {}, workdir {}{shown}, age {age_text}, idle {}\n",
            pid.map_or_else(|| "-".into(), |p| p.to_string()),
            e.workdir.display(),
            stdmcp_proto::human::elapsed(idle_for)
        ));
        let mut row = json!({"kind": kind, "name": name, "state": state, "pid": pid, "workdir": e.workdir, "startParameters": params, "ageSeconds": age, "idleSeconds": idle, "startedAt": started, "transcript": uri(kind, name)});
        if let Some(report) = e.proc.as_ref().and_then(|p| p.confined.as_ref()) {
            crate::call::run::confined_fields(&mut row, report);
        }
        rows.push(row);
    });
    if text.is_empty() {
        text = "No sessions.".into();
    }
    CallToolResult {
        structured_content: Some(json!({"sessions": rows})),
        ..CallToolResult::text(text.trim_end())
    }
}

fn uri(kind: &str, name: &str) -> String {
    format!("session://{kind}/{name}/transcript")
}

fn read_transcript(
    reg: &Registry,
    u: &str,
    vars: &HashMap<String, String>,
) -> Result<Vec<ResourceContents>, ErrorObject> {
    let (Some(kind), Some(name)) = (vars.get("kind"), vars.get("name")) else {
        return Err(ErrorObject::invalid_params(format!(
            "not a session transcript: {u}"
        )));
    };
    let key = (kind.clone(), name.clone());
    let text = reg
        .with(&key, |e| stdmcp::sync::lock(&e.transcript).text())
        .ok_or_else(|| {
            ErrorObject::new(
                stdmcp::jsonrpc::ErrorCode::RESOURCE_NOT_FOUND,
                format!("no session {kind}/{name}: {u}"),
            )
        })?;
    Ok(vec![ResourceContents::text(u, "text/plain", text)])
}

/// The sessions of a server: the registry every kind's tools share.
pub(crate) fn registry() -> Arc<Registry> {
    Arc::new(Registry::default())
}

/// Adds the tools of session kind `kind` and its default session's transcript resource.
pub(crate) fn add_kind(mut server: Server, reg: &Arc<Registry>, kind: &Arc<SessionKind>) -> Server {
    for t in kind_tools(reg, kind) {
        server = server.tool(t);
    }
    let r = reg.clone();
    server.resource(
        Resource {
            uri: uri(&kind.name, "default"),
            name: format!("{} session transcript", kind.name),
            title: None,
            description: Some(format!(
                "Recent inputs and output of the default {} session (bounded).",
                kind.name
            )),
            mime_type: Some("text/plain".into()),
        },
        move |_, u| {
            let vars = HashMap::from([
                (
                    "kind".to_owned(),
                    u.split('/').nth(2).unwrap_or_default().to_owned(),
                ),
                ("name".to_owned(), "default".to_owned()),
            ]);
            read_transcript(&r, u, &vars)
        },
    )
}

/// Adds the `sessions` tool and the transcript resource template, once every kind is added;
/// the sessions end when the server does.
pub(crate) fn finish(mut server: Server, reg: Arc<Registry>) -> Server {
    let r = reg.clone();
    server = server.tool(
        ToolDef::new("sessions", "List the interactive sessions: kind, name, state (running, busy, dead with exit status), pid, working directory, age and idle time.", json!({"type": "object", "properties": {}, "additionalProperties": false}), move |_, _| Ok(list(&r)))
            .annotations(annotations(true, false, true)),
    );
    let r = reg.clone();
    server = server.resource_template(
        ResourceTemplate {
            uri_template: "session://{kind}/{name}/transcript".into(),
            name: "session transcript".into(),
            title: None,
            description: Some("Recent inputs and output of a session (bounded).".into()),
            mime_type: Some("text/plain".into()),
        },
        move |_, u, vars| read_transcript(&r, u, vars),
    );
    server.on_shutdown(move || reg.close())
}
