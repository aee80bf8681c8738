//! `stdmcp tools|call|ping -- SERVER_CMD...`: talk to any stdio MCP server.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use stdmcp::client::{Client, ClientError, EraChoice, Event};
use stdmcp::mcp::Implementation;
use stdmcp::process::ServerProcess;

use super::say::{arg_error, emit, usage};

/// How long Ctrl-C waits for the server to settle after the cancel is sent.
const SETTLE: Duration = Duration::from_millis(500);
/// Exit codes.
const TOOL_ERROR: u8 = 1;
const PROTOCOL_ERROR: u8 = 2;

struct Opts {
    era: EraChoice,
    json: bool,
    timeout: Option<Duration>,
    positional: Vec<String>,
    args: Vec<(String, String)>,
    server: Vec<String>,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let split = args
        .iter()
        .position(|a| a == "--")
        .ok_or("the server command must follow `--`")?;
    let server = args[split + 1..].to_vec();
    if server.is_empty() {
        return Err("no server command after `--`".into());
    }
    let mut o = Opts {
        era: EraChoice::Auto,
        json: false,
        timeout: None,
        positional: Vec::new(),
        args: Vec::new(),
        server,
    };
    parse_options(&args[..split], &mut o)?;
    Ok(o)
}

/// The options before `--` (`--flag value` and `--flag=value` alike) and the positionals.
fn parse_options(args: &[String], o: &mut Opts) -> Result<(), String> {
    use lexopt::prelude::*;
    let err = arg_error("stdmcp");
    let mut p = lexopt::Parser::from_args(args);
    while let Some(arg) = p.next().map_err(&err)? {
        match arg {
            Long("era") => {
                o.era = match p.value().map_err(&err)?.string().map_err(&err)?.as_str() {
                    // `legacy` and `modern`: the names of earlier releases.
                    "handshake" | "legacy" => EraChoice::Handshake,
                    "stateless" | "modern" => EraChoice::Stateless,
                    "auto" => EraChoice::Auto,
                    other => {
                        return Err(format!(
                            "--era takes handshake, stateless or auto, not {other:?}"
                        ))
                    }
                }
            }
            Long("json") => o.json = true,
            Long("timeout") => {
                let secs: f64 = p
                    .value()
                    .map_err(&err)?
                    .string()
                    .map_err(&err)?
                    .parse()
                    .map_err(|_| "--timeout takes seconds")?;
                o.timeout = Some(Duration::from_secs_f64(secs.max(0.0)));
            }
            Short('a') | Long("arg") => {
                let kv = p.value().map_err(&err)?.string().map_err(&err)?;
                let (k, v) = kv
                    .split_once('=')
                    .ok_or(format!("--arg takes KEY=VALUE, not {kv:?}"))?;
                o.args.push((k.to_owned(), v.to_owned()));
            }
            Value(v) => o.positional.push(v.string().map_err(&err)?),
            _ => return Err(err(arg.unexpected())),
        }
    }
    Ok(())
}

fn connect(o: &Opts) -> Result<(ServerProcess, Client), ExitCode> {
    let mut server = ServerProcess::spawn(&o.server).map_err(|e| {
        eprintln!("stdmcp: cannot start {}: {e}", o.server[0]);
        ExitCode::from(PROTOCOL_ERROR)
    })?;
    let (reader, writer) = server.take_pipes();
    let mut client = Client::new(reader, writer);
    let info = Implementation::new("stdmcp", env!("CARGO_PKG_VERSION"));
    match client.open(o.era, info) {
        Ok(era) => log::info!("connected in the {era:?} era"),
        Err(e) => {
            eprintln!("stdmcp: {e}");
            return Err(ExitCode::from(PROTOCOL_ERROR));
        }
    }
    Ok((server, client))
}

fn finish(server: ServerProcess, client: Client, code: ExitCode) -> ExitCode {
    client.close();
    server.finish(Duration::from_secs(2));
    code
}

pub(super) fn ping(args: &[String]) -> ExitCode {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => return usage(&e),
    };
    let start = Instant::now();
    let (server, mut client) = match connect(&o) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let connected = start.elapsed();
    // `ping` exists only in the handshake era; 2026-07-28 servers answer `server/discover` instead.
    let method = if client.version.is_some_and(|v| !v.is_handshake_era()) {
        "server/discover"
    } else {
        "ping"
    };
    let t = Instant::now();
    let code = match client.request(
        method,
        json!({}),
        o.timeout.map(|d| Instant::now() + d),
        |_, _| {},
    ) {
        Ok(_) => {
            let name = client.server_info.pointer("/serverInfo/name").or_else(|| {
                client
                    .server_info
                    .pointer("/_meta/io.modelcontextprotocol~1serverInfo/name")
            });
            let version = client.version.map_or("?", |v| v.as_str());
            emit(&format!(
                "{} answered {method} in {:.2} ms (connected in {:.1} ms, protocol {version})\n",
                name.and_then(Value::as_str).unwrap_or("the server"),
                t.elapsed().as_secs_f64() * 1000.0,
                connected.as_secs_f64() * 1000.0
            ))
        }
        Err(e) => {
            eprintln!("stdmcp: {method} failed: {e}");
            ExitCode::from(PROTOCOL_ERROR)
        }
    };
    finish(server, client, code)
}

fn list_tools(client: &mut Client) -> Result<Vec<Value>, ClientError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor
            .as_ref()
            .map_or_else(|| json!({}), |c| json!({ "cursor": c }));
        let page = client.request("tools/list", params, None, |_, _| {})?;
        tools.extend(page["tools"].as_array().cloned().unwrap_or_default());
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) if cursor.as_deref() != Some(c) => cursor = Some(c.to_owned()),
            _ => return Ok(tools),
        }
    }
}

fn describe_type(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let v: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        return format!("one of {}", v.join(", "));
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "array" => format!(
            "array of {}",
            describe_type(schema.get("items").unwrap_or(&Value::Null))
        ),
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ if schema.get("$ref").is_some() => "object".into(),
        _ => "any".into(),
    }
}

pub(super) fn tools(args: &[String]) -> ExitCode {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => return usage(&e),
    };
    let (server, mut client) = match connect(&o) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let code = match list_tools(&mut client) {
        Ok(tools) if o.json => emit(&format!(
            "{}\n",
            serde_json::to_string_pretty(&tools).unwrap_or_default()
        )),
        Ok(tools) => {
            let mut out = String::new();
            for t in &tools {
                let title = t
                    .get("title")
                    .and_then(Value::as_str)
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default();
                let _ = writeln!(out, "{}{title}", t["name"].as_str().unwrap_or("?"));
                if let Some(d) = t.get("description").and_then(Value::as_str) {
                    for line in d.lines() {
                        let _ = writeln!(out, "    {line}");
                    }
                }
                let schema = &t["inputSchema"];
                let required: Vec<&str> = schema["required"]
                    .as_array()
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if let Some(props) = schema["properties"].as_object() {
                    for (name, p) in props {
                        let req = if required.contains(&name.as_str()) {
                            ", required"
                        } else {
                            ""
                        };
                        let desc = p
                            .get("description")
                            .and_then(Value::as_str)
                            .map(|d| format!(": {d}"))
                            .unwrap_or_default();
                        let _ = writeln!(out, "    - {name} ({}{req}){desc}", describe_type(p));
                    }
                }
            }
            let _ = writeln!(out, "{} tool(s)", tools.len());
            emit(&out)
        }
        Err(e) => {
            eprintln!("stdmcp: tools/list failed: {e}");
            ExitCode::from(PROTOCOL_ERROR)
        }
    };
    finish(server, client, code)
}

/// Builds the arguments object: a JSON object, or `--arg k=v` pairs typed by the tool's schema.
fn arguments(o: &Opts, client: &mut Client, tool: &str) -> Result<Value, String> {
    let mut args = match o.positional.get(1) {
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            _ => return Err(format!("the arguments must be a JSON object, not {text:?}")),
        },
        None => Map::new(),
    };
    if o.args.is_empty() {
        return Ok(Value::Object(args));
    }
    let tools = list_tools(client).map_err(|e| format!("tools/list failed: {e}"))?;
    let schema = tools
        .iter()
        .find(|t| t["name"] == tool)
        .map(|t| t["inputSchema"].clone())
        .unwrap_or(Value::Null);
    for (k, v) in &o.args {
        let ty = schema
            .pointer(&format!("/properties/{k}/type"))
            .and_then(Value::as_str);
        let value = match ty {
            Some("string") => Value::String(v.clone()),
            _ => serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.clone())),
        };
        args.insert(k.clone(), value);
    }
    Ok(Value::Object(args))
}

pub(super) fn call(args: &[String]) -> ExitCode {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => return usage(&e),
    };
    let Some(tool) = o.positional.first().cloned() else {
        return usage("call needs a tool name");
    };
    if o.positional.len() > 2 {
        return usage("call takes a tool name and at most one JSON object of arguments");
    }
    let mut interrupts = match signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("stdmcp: cannot handle Ctrl-C: {e}");
            return ExitCode::from(PROTOCOL_ERROR);
        }
    };
    let (server, mut client) = match connect(&o) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let arguments = match arguments(&o, &mut client, &tool) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("stdmcp: {e}");
            return finish(server, client, ExitCode::from(PROTOCOL_ERROR));
        }
    };
    let id = match client.send(
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
        true,
    ) {
        Ok(id) => id,
        Err(e) => {
            eprintln!("stdmcp: {e}");
            return finish(server, client, ExitCode::from(PROTOCOL_ERROR));
        }
    };
    let code = await_answer(&mut client, &id, &tool, &o, &mut interrupts);
    finish(server, client, code)
}

/// Waits for the answer to call `id`, showing progress and log messages meanwhile; cancels the
/// call on Ctrl-C or when the client's timeout passes. Returns the exit code to finish with.
fn await_answer(
    client: &mut Client,
    id: &stdmcp::jsonrpc::RequestId,
    tool: &str,
    o: &Opts,
    interrupts: &mut signal_hook::iterator::Signals,
) -> ExitCode {
    let deadline = o.timeout.map(|d| Instant::now() + d);
    let mut bar = ProgressView::new();
    loop {
        if interrupts.pending().next().is_some() {
            bar.clear();
            eprintln!("stdmcp: cancelling {tool}");
            let _ = client.cancel(id, Some("interrupted by the user"));
            settle(client);
            break ExitCode::from(130);
        }
        let step = Instant::now() + Duration::from_millis(50);
        match client.next_event(Some(deadline.map_or(step, |d| d.min(step)))) {
            Ok(Event::Response(r)) if r.id == *id => {
                bar.clear();
                break match r.result {
                    Ok(result) => print_result(&result, o.json),
                    Err(e) => {
                        eprintln!("stdmcp: {tool} failed: {e}");
                        ExitCode::from(PROTOCOL_ERROR)
                    }
                };
            }
            Ok(Event::Progress { params, .. }) => bar.show(&params),
            Ok(Event::Notification(n)) if n.method == "notifications/message" => {
                bar.clear();
                eprintln!(
                    "[{}] {}",
                    n.params["level"].as_str().unwrap_or("log"),
                    n.params["data"]
                );
            }
            Ok(Event::Request(r)) => {
                let e = stdmcp::jsonrpc::ErrorObject::method_not_found(&r.method);
                let _ = client.respond(&r.id, Err(e));
            }
            Ok(_) => {}
            Err(ClientError::Timeout) if deadline.is_some_and(|d| Instant::now() >= d) => {
                bar.clear();
                eprintln!("stdmcp: no answer in time; cancelling {tool}");
                let _ = client.cancel(id, Some("the client's timeout passed"));
                settle(client);
                break ExitCode::from(PROTOCOL_ERROR);
            }
            Err(ClientError::Timeout) => {}
            Err(e) => {
                bar.clear();
                eprintln!("stdmcp: {e}");
                break ExitCode::from(PROTOCOL_ERROR);
            }
        }
    }
}

/// After a cancel, gives the server a moment to stop its work (and drops what it still sends).
fn settle(client: &mut Client) {
    let until = Instant::now() + SETTLE;
    while client.next_event(Some(until)).is_ok() {}
}

fn print_result(result: &Value, json: bool) -> ExitCode {
    let is_error = result.get("isError") == Some(&Value::Bool(true));
    let code = if is_error {
        ExitCode::from(TOOL_ERROR)
    } else {
        ExitCode::SUCCESS
    };
    if json {
        let _ = emit(&format!(
            "{}\n",
            serde_json::to_string_pretty(result).unwrap_or_default()
        ));
        return code;
    }
    let mut out = String::new();
    for block in result["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => out.push_str(block["text"].as_str().unwrap_or("")),
            Some("resource") => {
                let r = &block["resource"];
                match r.get("text").and_then(Value::as_str) {
                    Some(t) => out.push_str(t),
                    None => {
                        out.push_str(&format!("[resource {}]", r["uri"].as_str().unwrap_or("?")))
                    }
                }
            }
            Some("resource_link") => {
                out.push_str(&format!("[link {}]", block["uri"].as_str().unwrap_or("?")))
            }
            Some(kind) => out.push_str(&format!(
                "[{kind} {}, {} bytes of base64]",
                block["mimeType"].as_str().unwrap_or("?"),
                block["data"].as_str().map_or(0, str::len)
            )),
            None => {}
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    if is_error {
        eprint!("{out}");
    } else {
        let _ = emit(&out);
    }
    code
}

/// Progress on stderr: a redrawn bar on a terminal, one line per notification otherwise.
struct ProgressView {
    tty: bool,
    drawn: bool,
}

impl ProgressView {
    fn new() -> ProgressView {
        ProgressView {
            tty: std::io::stderr().is_terminal(),
            drawn: false,
        }
    }

    fn show(&mut self, p: &Value) {
        let progress = p["progress"].as_f64().unwrap_or(0.0);
        let total = p["total"].as_f64();
        let message = p["message"].as_str().unwrap_or("");
        let mut err = std::io::stderr().lock();
        if !self.tty {
            let _ = match total {
                Some(t) => writeln!(err, "progress {progress}/{t} {message}"),
                None => writeln!(err, "progress {progress} {message}"),
            };
            return;
        }
        const WIDTH: usize = 30;
        let line = match total.filter(|t| *t > 0.0) {
            Some(t) => {
                let frac = (progress / t).clamp(0.0, 1.0);
                let filled = (frac * WIDTH as f64).round() as usize;
                format!(
                    "[{}{}] {:3.0}% {message}",
                    "#".repeat(filled),
                    "-".repeat(WIDTH - filled),
                    frac * 100.0
                )
            }
            None => format!("[{progress}] {message}"),
        };
        let line: String = line.chars().take(100).collect();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    fn clear(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
            self.drawn = false;
        }
    }
}
