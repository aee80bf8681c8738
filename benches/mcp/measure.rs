//! One trial of each measurement against one freshly spawned server.

use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stdmcp::client::{Client, Event};
use stdmcp::jsonrpc::{ErrorObject, RequestId};
use stdmcp::mcp::{Implementation, ProtocolVersion};
use stdmcp::process::ServerProcess;

use crate::procfs;

/// What kind of server a trial talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// stdmcp's `everything` example.
    Stdmcp,
    /// An official-SDK peer from bench/peers/peers.json.
    Peer,
    /// The canned-response floor: no real tools.
    Floor,
    /// `stdmcp serve` with the built-in manifest (cold start only).
    Serve,
    /// `stdmcp serve` with the benchmark manifest bench/stdmcp/tools.json (`true`, `drain`).
    Manifest,
}

/// A server under test.
#[derive(Clone, Debug)]
pub(crate) struct Spec {
    pub name: String,
    pub argv: Vec<String>,
    pub kind: Kind,
}

/// Counts for one run of the driver.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub quick: bool,
    pub cold_reps: usize,
    pub idle_reps: usize,
    pub idle_settle: Duration,
    pub seq_reps: usize,
    pub seq_warmup: usize,
    pub seq_calls: usize,
    pub pipe_reps: usize,
    pub pipe_warmup: usize,
    pub pipe_calls: usize,
    pub in_flight: usize,
    pub conc_reps: usize,
    pub conc_calls: usize,
    pub conc_ms: u64,
    pub progress_reps: usize,
    pub progress_ms: u64,
    pub cancel_reps: usize,
    pub child_reps: usize,
    pub cmd_reps: usize,
    pub cmd_warmup: usize,
    pub cmd_calls: usize,
    pub cmd_in_flight: usize,
    pub drain_reps: usize,
    pub drain_bytes: u64,
}

impl Plan {
    pub(crate) fn full() -> Plan {
        Plan {
            quick: false,
            cold_reps: 15,
            idle_reps: 3,
            idle_settle: Duration::from_millis(500),
            seq_reps: 7,
            seq_warmup: 500,
            seq_calls: 5_000,
            pipe_reps: 7,
            pipe_warmup: 2_000,
            pipe_calls: 20_000,
            in_flight: 64,
            conc_reps: 3,
            conc_calls: 200,
            conc_ms: 1_000,
            progress_reps: 3,
            progress_ms: 2_000,
            cancel_reps: 9,
            child_reps: 9,
            cmd_reps: 5,
            cmd_warmup: 50,
            cmd_calls: 500,
            cmd_in_flight: 16,
            drain_reps: 3,
            drain_bytes: 1 << 30,
        }
    }

    /// Under contention every thread hand-off may wait for the spinner's time slice, so
    /// sequential calls take milliseconds: fewer calls and repetitions keep the run short.
    pub(crate) fn contended(self) -> Plan {
        if self.quick {
            return self;
        }
        Plan {
            seq_reps: 3,
            seq_warmup: 100,
            seq_calls: 1_000,
            pipe_reps: 3,
            cmd_reps: 3,
            drain_reps: 2,
            ..self
        }
    }

    pub(crate) fn quick() -> Plan {
        Plan {
            quick: true,
            cold_reps: 1,
            idle_reps: 1,
            idle_settle: Duration::from_millis(200),
            seq_reps: 1,
            seq_warmup: 20,
            seq_calls: 200,
            pipe_reps: 1,
            pipe_warmup: 200,
            pipe_calls: 2_000,
            in_flight: 64,
            conc_reps: 1,
            conc_calls: 20,
            conc_ms: 1_000,
            progress_reps: 1,
            progress_ms: 500,
            cancel_reps: 1,
            child_reps: 1,
            cmd_reps: 1,
            cmd_warmup: 5,
            cmd_calls: 50,
            cmd_in_flight: 16,
            drain_reps: 1,
            drain_bytes: 256 << 20,
        }
    }
}

/// The figures one trial produced: (metric key, value).
pub(crate) type Figures = Vec<(&'static str, f64)>;

const ECHO_TEXT: &str = "hello";

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A connected server.
pub(crate) struct Conn {
    proc: Option<ServerProcess>,
    client: Option<Client>,
    pub pid: u32,
    kind: Kind,
}

impl Conn {
    /// Spawns the server; no protocol yet.
    pub(crate) fn spawn(spec: &Spec) -> Result<Conn, String> {
        let mut proc = crate::busy::spawn_pinned(|| ServerProcess::spawn(&spec.argv))
            .map_err(|e| format!("cannot spawn: {e}"))?;
        let (reader, writer) = proc.take_pipes();
        Ok(Conn {
            pid: proc.pid(),
            proc: Some(proc),
            client: Some(Client::new(reader, writer)),
            kind: spec.kind,
        })
    }

    fn client(&mut self) -> Result<&mut Client, String> {
        self.client
            .as_mut()
            .ok_or_else(|| "the connection is closed".to_owned())
    }

    pub(crate) fn send(
        &mut self,
        method: &str,
        params: Value,
        progress: bool,
    ) -> Result<RequestId, String> {
        self.client()?
            .send(method, params, progress)
            .map_err(|e| format!("{method}: {e}"))
    }

    /// The next event before `deadline`; server requests are refused on the spot.
    pub(crate) fn event(&mut self, deadline: Instant) -> Result<Event, String> {
        let client = self.client()?;
        loop {
            match client.next_event(Some(deadline)) {
                Ok(Event::Request(r)) => {
                    let refusal = ErrorObject::method_not_found(&r.method);
                    client
                        .respond(&r.id, Err(refusal))
                        .map_err(|e| e.to_string())?;
                }
                Ok(e) => return Ok(e),
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// Waits for the answer to `id`; progress for any request goes to `on_progress`.
    pub(crate) fn wait(
        &mut self,
        id: &RequestId,
        deadline: Instant,
        mut on_progress: impl FnMut(&RequestId, Instant),
    ) -> Result<Value, String> {
        loop {
            match self.event(deadline)? {
                Event::Response(r) if &r.id == id => {
                    return r.result.map_err(|e| format!("error response: {e}"));
                }
                Event::Progress { id, .. } => on_progress(&id, Instant::now()),
                _ => {}
            }
        }
    }

    /// `initialize` (legacy era, as `Client::open` sends it, but with a deadline) and
    /// `notifications/initialized`.
    pub(crate) fn initialize(&mut self, deadline: Instant) -> Result<Value, String> {
        let info = Implementation::new("stdmcp-bench", env!("CARGO_PKG_VERSION"));
        let params = json!({
            "protocolVersion": ProtocolVersion::NEWEST_HANDSHAKE.as_str(),
            "capabilities": {},
            "clientInfo": info,
        });
        let id = self.send("initialize", params, false)?;
        let result = self.wait(&id, deadline, |_, _| {})?;
        self.client()?
            .notify("notifications/initialized", json!({}))
            .map_err(|e| e.to_string())?;
        Ok(result)
    }

    pub(crate) fn tools_list(&mut self, deadline: Instant) -> Result<Value, String> {
        let id = self.send("tools/list", json!({}), false)?;
        let result = self.wait(&id, deadline, |_, _| {})?;
        let wanted: &[&str] = match self.kind {
            Kind::Floor | Kind::Serve => &[],
            Kind::Manifest => &["true", "drain"],
            Kind::Stdmcp | Kind::Peer => &["echo", "sleep", "spawn"],
        };
        {
            let names: Vec<&str> = result["tools"]
                .as_array()
                .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
                .unwrap_or_default();
            for &want in wanted {
                if !names.contains(&want) {
                    return Err(format!("tools/list has no {want} tool: {names:?}"));
                }
            }
        }
        Ok(result)
    }

    /// Spawn + initialize + tools/list.
    pub(crate) fn open(spec: &Spec) -> Result<Conn, String> {
        let mut c = Conn::spawn(spec)?;
        let deadline = Instant::now() + Duration::from_secs(30);
        c.initialize(deadline)?;
        c.tools_list(deadline)?;
        Ok(c)
    }

    /// Checks a tools/call result: not an error, and (for echo, unless the floor) the text.
    fn check(&self, result: &Value, echo: bool) -> Result<(), String> {
        if self.kind == Kind::Floor {
            return Ok(());
        }
        if result["isError"].as_bool() == Some(true) {
            return Err(format!("tool error: {result}"));
        }
        if echo && result.pointer("/content/0/text").and_then(Value::as_str) != Some(ECHO_TEXT) {
            return Err(format!("echo answered {result}"));
        }
        Ok(())
    }

    /// Closes stdin, gives the server `wait` to exit, then kills its group.
    pub(crate) fn finish(mut self, wait: Duration) {
        if let Some(c) = self.client.take() {
            c.close();
        }
        if let Some(p) = self.proc.take() {
            p.finish(wait);
        }
    }
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

fn echo_params() -> Value {
    call("echo", json!({"text": ECHO_TEXT}))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Spawn → initialize response, spawn → tools/list response; with `idle`, also the tree's
/// VmRSS after `settle`.
pub(crate) fn cold(spec: &Spec, plan: &Plan, idle: bool) -> Result<Figures, String> {
    let t0 = Instant::now();
    let mut c = Conn::spawn(spec)?;
    let deadline = t0 + Duration::from_secs(30);
    c.initialize(deadline)?;
    let init = t0.elapsed();
    c.tools_list(deadline)?;
    let list = t0.elapsed();
    let mut figs = vec![("cold_init_ms", ms(init)), ("cold_list_ms", ms(list))];
    if idle {
        thread::sleep(plan.idle_settle);
        let mut samples: Vec<u64> = (0..5)
            .map(|_| {
                thread::sleep(Duration::from_millis(10));
                procfs::tree_rss_kib(c.pid)
            })
            .collect();
        samples.sort_unstable();
        figs.push(("idle_rss_mib", samples[2] as f64 / 1024.0));
        figs.push((
            "idle_anon_mib",
            procfs::tree_rss_anon_kib(c.pid) as f64 / 1024.0,
        ));
    }
    c.finish(Duration::from_secs(2));
    Ok(figs)
}

/// One echo at a time: p50, p99 and mean round trip.
pub(crate) fn sequential(spec: &Spec, plan: &Plan) -> Result<Figures, String> {
    let mut c = Conn::open(spec)?;
    let params = echo_params();
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut lat = Vec::with_capacity(plan.seq_calls);
    for i in 0..plan.seq_warmup + plan.seq_calls {
        let t = Instant::now();
        let id = c.send("tools/call", params.clone(), false)?;
        let r = c.wait(&id, deadline, |_, _| {})?;
        let took = t.elapsed();
        if i == 0 || i == plan.seq_warmup {
            c.check(&r, true)?;
        }
        if i >= plan.seq_warmup {
            lat.push(took.as_secs_f64() * 1e6);
        }
    }
    c.finish(Duration::from_secs(2));
    let mean = lat.iter().sum::<f64>() / lat.len().max(1) as f64;
    lat.sort_by(f64::total_cmp);
    Ok(vec![
        ("seq_p50_us", percentile(&lat, 50.0)),
        ("seq_p99_us", percentile(&lat, 99.0)),
        ("seq_mean_us", mean),
    ])
}

/// `n` calls of `params` with `in_flight` outstanding; returns calls/s. Every answer must not
/// be an error; with `echo`, the first must carry the echoed text.
pub(crate) fn run_calls(
    c: &mut Conn,
    params: &Value,
    n: usize,
    in_flight: usize,
    deadline: Instant,
    echo: bool,
) -> Result<f64, String> {
    let t = Instant::now();
    let mut sent = 0;
    let mut done = 0;
    while sent < n.min(in_flight) {
        c.send("tools/call", params.clone(), false)?;
        sent += 1;
    }
    while done < n {
        if let Event::Response(r) = c.event(deadline)? {
            let result = r.result.map_err(|e| format!("error response: {e}"))?;
            c.check(&result, echo && done == 0)?;
            done += 1;
            if sent < n {
                c.send("tools/call", params.clone(), false)?;
                sent += 1;
            }
        }
    }
    Ok(n as f64 / t.elapsed().as_secs_f64())
}

pub(crate) fn pipelined(spec: &Spec, plan: &Plan) -> Result<Figures, String> {
    let mut c = Conn::open(spec)?;
    let deadline = Instant::now() + Duration::from_secs(300);
    let echo = echo_params();
    run_calls(
        &mut c,
        &echo,
        plan.pipe_warmup,
        plan.in_flight,
        deadline,
        true,
    )?;
    let rate = run_calls(
        &mut c,
        &echo,
        plan.pipe_calls,
        plan.in_flight,
        deadline,
        true,
    )?;
    c.finish(Duration::from_secs(2));
    Ok(vec![("pipe_calls_per_s", rate)])
}

/// `conc_calls` sleeps at once: wall time until all answered, peak tree VmRSS meanwhile.
pub(crate) fn concurrent(spec: &Spec, plan: &Plan) -> Result<Figures, String> {
    let mut c = Conn::open(spec)?;
    let before = procfs::tree_rss_kib(c.pid);
    let sampler =
        procfs::Sampler::start(c.pid, Duration::from_millis(2), Duration::from_millis(50));
    let params = call("sleep", json!({"ms": plan.conc_ms}));
    let t = Instant::now();
    let deadline = t + Duration::from_millis(plan.conc_ms) + Duration::from_secs(60);
    let mut pending = std::collections::HashSet::new();
    for _ in 0..plan.conc_calls {
        pending.insert(c.send("tools/call", params.clone(), false)?);
    }
    let mut first_err = None;
    while !pending.is_empty() {
        match c.event(deadline) {
            Ok(Event::Response(r)) => {
                pending.remove(&r.id);
                let checked = r
                    .result
                    .map_err(|e| format!("error response: {e}"))
                    .and_then(|v| c.check(&v, false));
                if let Err(e) = checked {
                    first_err.get_or_insert(e);
                }
            }
            Ok(_) => {}
            Err(e) => {
                first_err.get_or_insert(format!(
                    "{e} ({} of {} unanswered)",
                    pending.len(),
                    plan.conc_calls
                ));
                break;
            }
        }
    }
    let wall = t.elapsed();
    let peak = sampler.stop();
    c.finish(Duration::from_secs(2));
    if let Some(e) = first_err {
        return Err(e);
    }
    Ok(vec![
        ("conc_wall_ms", ms(wall)),
        (
            "conc_peak_rss_mib",
            peak.peak_kib.max(before) as f64 / 1024.0,
        ),
        ("conc_peak_procs", peak.max_procs as f64),
    ])
}

/// `sleep {progress_ms}` with a progress token: how many notifications, and the gaps
/// between the request and successive notifications.
pub(crate) fn progress(spec: &Spec, plan: &Plan) -> Result<Figures, String> {
    let mut c = Conn::open(spec)?;
    let t = Instant::now();
    let id = c.send(
        "tools/call",
        call("sleep", json!({"ms": plan.progress_ms})),
        true,
    )?;
    let mut times = vec![t];
    let deadline = t + Duration::from_millis(plan.progress_ms) + Duration::from_secs(30);
    let r = c.wait(&id, deadline, |pid, at| {
        if *pid == id {
            times.push(at);
        }
    });
    let total = t.elapsed();
    c.finish(Duration::from_secs(2));
    let r = r?;
    if spec.kind != Kind::Floor && r["isError"].as_bool() == Some(true) {
        return Err(format!("tool error: {r}"));
    }
    let count = times.len() - 1;
    if count == 0 {
        return Err("no progress notifications".into());
    }
    let gaps: Vec<f64> = times.windows(2).map(|w| ms(w[1] - w[0])).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let max = gaps.iter().copied().fold(0.0, f64::max);
    Ok(vec![
        ("progress_count", count as f64),
        ("progress_mean_ms", mean),
        ("progress_max_ms", max),
        ("progress_total_ms", ms(total)),
    ])
}

/// `sleep 60 s` with progress; after the first notification: cancel, then echo at once;
/// time from the cancel sent to the echo answered.
pub(crate) fn cancel_next(spec: &Spec, _plan: &Plan) -> Result<Figures, String> {
    let mut c = Conn::open(spec)?;
    let id = c.send("tools/call", call("sleep", json!({"ms": 60_000})), true)?;
    let deadline = Instant::now() + Duration::from_secs(15);
    let result = (|| {
        loop {
            match c.event(deadline)? {
                Event::Progress { id: p, .. } if p == id => break,
                Event::Response(r) if r.id == id => {
                    return Err(format!("sleep answered early: {:?}", r.result))
                }
                _ => {}
            }
        }
        let t = Instant::now();
        c.client()?
            .cancel(&id, Some("bench"))
            .map_err(|e| e.to_string())?;
        let eid = c.send("tools/call", echo_params(), false)?;
        let r = c.wait(&eid, deadline, |_, _| {})?;
        let took = t.elapsed();
        c.check(&r, true)?;
        Ok(vec![("cancel_next_ms", ms(took))])
    })();
    c.finish(Duration::from_secs(2));
    result
}

/// `spawn 60 s`; once the child `sleep` runs: cancel, and time until the child is gone
/// (no such pid, or a zombie).
pub(crate) fn cancel_child(spec: &Spec, _plan: &Plan) -> Result<Figures, String> {
    let mut c = Conn::open(spec)?;
    let id = c.send("tools/call", call("spawn", json!({"ms": 60_000})), false)?;
    let pid = c.pid;
    let result = (|| {
        let found_by = Instant::now() + Duration::from_secs(15);
        let kid = loop {
            let kids = procfs::children_named(pid, "sleep");
            if let Some(&k) = kids.first() {
                break k;
            }
            if Instant::now() > found_by {
                return Err("no child `sleep` appeared within 15 s".to_owned());
            }
            thread::sleep(Duration::from_millis(1));
        };
        let t = Instant::now();
        c.client()?
            .cancel(&id, Some("bench"))
            .map_err(|e| e.to_string())?;
        let gone = loop {
            if !procfs::alive(kid) {
                break t.elapsed();
            }
            if t.elapsed() > Duration::from_secs(10) {
                return Err(format!(
                    "child sleep {kid} still alive 10 s after the cancel"
                ));
            }
            thread::yield_now();
        };
        Ok(vec![("child_gone_ms", ms(gone))])
    })();
    c.finish(Duration::from_secs(2));
    result
}
