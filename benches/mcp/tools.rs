//! What a command tool costs: calls/s of a tool running `/bin/true` (one at a time and 16
//! in flight), and draining a tool's large output; with their floors, a plain program that
//! spawns and reaps `/bin/true` in a loop and `head -c N /dev/zero | cat > /dev/null`.
#![allow(clippy::disallowed_methods)] // the floors are bare programs, started as controls

use std::collections::HashMap;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::busy::spawn_pinned;
use crate::measure::{run_calls, Conn, Figures, Kind, Plan, Spec};
use crate::procfs;

/// The program every command tool runs.
pub(crate) const TRUE: &str = "/bin/true";

/// stdmcp's row in the command-tool groups: `stdmcp serve` with the benchmark manifest
/// (bench/stdmcp/tools.json: `true` and `drain`), i.e. manifest tools as users write them.
fn served(spec: &Spec) -> Spec {
    match spec.kind {
        Kind::Stdmcp => Spec {
            name: spec.name.clone(),
            argv: vec![
                crate::servers::stdmcp_bin().display().to_string(),
                "serve".into(),
                "--config".into(),
                crate::servers::root()
                    .join("bench/stdmcp/tools.json")
                    .display()
                    .to_string(),
            ],
            kind: Kind::Manifest,
        },
        _ => spec.clone(),
    }
}

/// The `true` tool: calls/s one at a time and with 16 in flight.
pub(crate) fn command(spec: &Spec, plan: &Plan) -> Result<Figures, String> {
    if spec.kind == Kind::Floor {
        let (n, k) = (plan.cmd_calls, plan.cmd_in_flight);
        return Ok(vec![
            ("cmd_seq_per_s", spawn_floor(n, 1, false)?),
            ("cmd_par_per_s", spawn_floor(n, k, false)?),
            ("cmd_seq_fork_per_s", spawn_floor(n, 1, true)?),
            ("cmd_par_fork_per_s", spawn_floor(n, k, true)?),
        ]);
    }
    let mut c = Conn::open(&served(spec))?;
    let params = json!({"name": "true", "arguments": {}});
    let deadline = Instant::now() + Duration::from_secs(300);
    run_calls(&mut c, &params, plan.cmd_warmup, 1, deadline, false)?;
    let seq = run_calls(&mut c, &params, plan.cmd_calls, 1, deadline, false)?;
    let k = plan.cmd_in_flight;
    let par = run_calls(&mut c, &params, plan.cmd_calls, k, deadline, false)?;
    c.finish(Duration::from_secs(2));
    Ok(vec![("cmd_seq_per_s", seq), ("cmd_par_per_s", par)])
}

/// What confinement costs a call: the `true` tool (confined, as every manifest tool by
/// default) against `true_unconfined` (`"confine": "off"`), alternately on one server, one
/// at a time and 16 in flight; the cost is the confined call's extra time in percent of the
/// unconfined call's.
pub(crate) fn confine(spec: &Spec, plan: &Plan) -> Result<Figures, String> {
    let mut c = Conn::open(&served(spec))?;
    let on = json!({"name": "true", "arguments": {}});
    let off = json!({"name": "true_unconfined", "arguments": {}});
    let deadline = Instant::now() + Duration::from_secs(300);
    run_calls(&mut c, &on, plan.cmd_warmup, 1, deadline, false)?;
    run_calls(&mut c, &off, plan.cmd_warmup, 1, deadline, false)?;
    let mut rates = [[0.0; 2]; 2];
    for (i, k) in [1, plan.cmd_in_flight].into_iter().enumerate() {
        // Halves in turn, so that a change of the machine's load hits both alike.
        let half = plan.cmd_calls.div_ceil(2);
        let mut took = [0.0; 2];
        for _ in 0..2 {
            for (j, params) in [&on, &off].into_iter().enumerate() {
                took[j] += half as f64 / run_calls(&mut c, params, half, k, deadline, false)?;
            }
        }
        rates[i] = took.map(|t| 2.0 * half as f64 / t);
    }
    c.finish(Duration::from_secs(2));
    let cost = |[on, off]: [f64; 2]| (off / on - 1.0) * 100.0;
    Ok(vec![
        ("confine_seq_on_per_s", rates[0][0]),
        ("confine_seq_off_per_s", rates[0][1]),
        ("confine_seq_cost_pct", cost(rates[0])),
        ("confine_par_on_per_s", rates[1][0]),
        ("confine_par_off_per_s", rates[1][1]),
        ("confine_par_cost_pct", cost(rates[1])),
    ])
}

/// Runs this driver as `mcp --spawn-floor N K [fork]` (on the busy CPU under `--busy`) and
/// reads the calls/s it prints.
fn spawn_floor(n: usize, in_flight: usize, fork: bool) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut args = vec![
        "--spawn-floor".to_owned(),
        n.to_string(),
        in_flight.to_string(),
    ];
    if fork {
        args.push("fork".into());
    }
    let mut child = spawn_pinned(|| {
        Command::new(exe)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
    })
    .map_err(|e| format!("cannot start the spawn floor: {e}"))?;
    let mut out = String::new();
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut out).map_err(|e| e.to_string())?;
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("the spawn floor failed ({status})"));
    }
    out.trim()
        .parse()
        .map_err(|_| format!("the spawn floor printed {out:?}"))
}

/// `mcp --spawn-floor N K [fork]`: spawns `/bin/true` N times with K running at once (std's
/// `Command`, which uses posix_spawn when nothing runs between fork and exec; with `fork`,
/// an empty `pre_exec` hook makes it fork and exec, as stdmcp's runner must for its
/// hardening), reaps each with `waitpid(-1)`, and prints calls/s.
#[allow(unsafe_code)]
pub(crate) fn spawn_floor_main(args: &[String]) -> Result<(), String> {
    let num = |i: usize| -> Result<usize, String> {
        args.get(i)
            .and_then(|s| s.parse().ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| "usage: mcp --spawn-floor CALLS IN_FLIGHT".to_owned())
    };
    let (n, k) = (num(0)?, num(1)?);
    let fork = args.get(2).map(String::as_str) == Some("fork");
    let start = || {
        let mut cmd = Command::new(TRUE);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if fork {
            use std::os::unix::process::CommandExt;
            // SAFETY: the hook does nothing; it only makes std fork instead of posix_spawn.
            unsafe {
                cmd.pre_exec(|| Ok(()));
            }
        }
        cmd.spawn().map_err(|e| format!("{TRUE}: {e}"))
    };
    let t = Instant::now();
    let mut running: HashMap<u32, Child> = HashMap::new();
    let mut started = 0;
    while started < n.min(k) {
        let c = start()?;
        running.insert(c.id(), c);
        started += 1;
    }
    while !running.is_empty() {
        let pid = reap_any()?;
        running.remove(&pid);
        if started < n {
            let c = start()?;
            running.insert(c.id(), c);
            started += 1;
        }
    }
    let rate = n as f64 / t.elapsed().as_secs_f64();
    #[allow(clippy::print_stdout)] // the driver reads this
    {
        println!("{rate}");
    }
    Ok(())
}

/// Reaps any child; its pid.
#[allow(unsafe_code)]
fn reap_any() -> Result<u32, String> {
    let mut status = 0;
    // SAFETY: waitpid writes the status into a valid c_int.
    let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
    if pid <= 0 {
        return Err(format!("waitpid: {}", std::io::Error::last_os_error()));
    }
    Ok(pid as u32)
}

/// A tool printing `drain_bytes`: call → answer time, peak tree RSS; the floor: the same
/// `head` piped to `cat > /dev/null`, spawn → exit.
pub(crate) fn drain(spec: &Spec, plan: &Plan) -> Result<Figures, String> {
    let bytes = plan.drain_bytes;
    if spec.kind == Kind::Floor {
        let script = format!("head -c {bytes} /dev/zero | cat > /dev/null");
        let t = Instant::now();
        let mut child = spawn_pinned(|| Command::new("/bin/sh").args(["-c", &script]).spawn())
            .map_err(|e| format!("cannot start sh: {e}"))?;
        let sampler = procfs::Sampler::start(
            child.id(),
            Duration::from_millis(5),
            Duration::from_millis(50),
        );
        let status = child.wait().map_err(|e| e.to_string())?;
        let took = t.elapsed();
        let peak = sampler.stop();
        if !status.success() {
            return Err(format!("{script}: {status}"));
        }
        return Ok(figures(took, peak.peak_kib, bytes));
    }
    let mut c = Conn::open(&served(spec))?;
    let before = procfs::tree_rss_kib(c.pid);
    let sampler =
        procfs::Sampler::start(c.pid, Duration::from_millis(5), Duration::from_millis(50));
    let t = Instant::now();
    let id = c.send(
        "tools/call",
        json!({"name": "drain", "arguments": {"bytes": bytes}}),
        false,
    )?;
    let r = c.wait(&id, t + Duration::from_secs(300), |_, _| {});
    let took = t.elapsed();
    let peak = sampler.stop();
    c.finish(Duration::from_secs(2));
    let r = r?;
    if r["isError"].as_bool() == Some(true) {
        return Err(format!("tool error: {r}"));
    }
    Ok(figures(took, peak.peak_kib.max(before), bytes))
}

fn figures(took: Duration, peak_kib: u64, bytes: u64) -> Figures {
    let secs = took.as_secs_f64();
    vec![
        ("drain_ms", secs * 1e3),
        ("drain_mib_per_s", bytes as f64 / (1024.0 * 1024.0) / secs),
        ("drain_peak_rss_mib", peak_kib as f64 / 1024.0),
    ]
}
