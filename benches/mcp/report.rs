//! The benchmark's results: each (server, metric)'s runs, their medians and ratios to stdmcp,
//! the JSON document and the summary table.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{json, Map, Value};

use crate::measure::{Kind, Plan, Spec};
use crate::metrics::{Metric, METRICS};

/// Runs and failures of one (server, metric).
#[derive(Default)]
pub(crate) struct Cell {
    pub(crate) runs: Vec<f64>,
    pub(crate) failures: Vec<String>,
    pub(crate) na: Option<String>,
    pub(crate) note: Option<String>,
}

pub(crate) fn median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

pub(crate) fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

pub(crate) fn plan_json(p: &Plan) -> Value {
    json!({
        "quick": p.quick,
        "cold_reps": p.cold_reps, "idle_reps": p.idle_reps, "idle_settle_ms": p.idle_settle.as_millis() as u64,
        "seq_reps": p.seq_reps, "seq_warmup": p.seq_warmup, "seq_calls": p.seq_calls,
        "pipe_reps": p.pipe_reps, "pipe_warmup": p.pipe_warmup, "pipe_calls": p.pipe_calls, "in_flight": p.in_flight,
        "conc_reps": p.conc_reps, "conc_calls": p.conc_calls, "conc_ms": p.conc_ms,
        "progress_reps": p.progress_reps, "progress_ms": p.progress_ms,
        "cancel_reps": p.cancel_reps, "child_reps": p.child_reps,
        "cmd_reps": p.cmd_reps, "cmd_warmup": p.cmd_warmup, "cmd_calls": p.cmd_calls, "cmd_in_flight": p.cmd_in_flight,
        "drain_reps": p.drain_reps, "drain_bytes": p.drain_bytes,
    })
}

/// Every figure measured so far, by (server, metric key).
pub(crate) type Cells = BTreeMap<(String, &'static str), Cell>;

/// Marks every metric in `metrics` as not applicable to `server`.
pub(crate) fn mark_na<'a>(
    cells: &mut Cells,
    server: &str,
    metrics: impl IntoIterator<Item = &'a Metric>,
    why: &str,
) {
    for mt in metrics {
        cells.entry((server.to_owned(), mt.key)).or_default().na = Some(why.to_owned());
    }
}

/// How this run went, for the JSON document's header.
pub(crate) struct Run<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) started: Instant,
    pub(crate) started_unix: u64,
    pub(crate) seq_pinned: Option<String>,
    pub(crate) busy_cpu: Option<usize>,
}

/// The JSON document: the run, the servers, the metrics and the results.
pub(crate) fn document(run: &Run<'_>, all: &[Spec], groups: &[&str], cells: &Cells) -> Value {
    json!({
        "schema": 1,
        "tool": "cargo bench --bench mcp",
        "started_unix": run.started_unix,
        "duration_s": run.started.elapsed().as_secs_f64(),
        "nproc": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "plan": plan_json(run.plan),
        "seq_pinned_cpu": run.seq_pinned,
        "busy_cpu": run.busy_cpu,
        "baseline": "stdmcp",
        "servers": all.iter().map(|s| json!({
            "name": s.name,
            "argv": s.argv,
            "kind": format!("{:?}", s.kind).to_lowercase(),
        })).collect::<Vec<_>>(),
        "groups": groups,
        "metrics": METRICS
            .iter()
            .filter(|m| groups.contains(&m.group))
            .map(|m| json!({"key": m.key, "group": m.group, "label": m.label, "unit": m.unit, "better": m.better}))
            .collect::<Vec<_>>(),
        "results": results(all, groups, cells),
    })
}

/// The median of one (server, metric), unless it is n/a or was never measured.
pub(crate) fn value_of(cells: &Cells, server: &str, key: &'static str) -> Option<f64> {
    cells
        .get(&(server.to_owned(), key))
        .filter(|c| c.na.is_none())
        .and_then(|c| median(&c.runs))
}

/// Medians and ratios to stdmcp, per server and metric, as the JSON document's `results`.
pub(crate) fn results(all: &[Spec], groups: &[&str], cells: &Cells) -> Map<String, Value> {
    let mut results = Map::new();
    for s in all {
        let mut per = Map::new();
        for mt in METRICS {
            if !groups.contains(&mt.group) {
                continue;
            }
            let cell = cells.get(&(s.name.clone(), mt.key));
            if mt.key.ends_with("_fork_per_s") && s.kind != Kind::Floor {
                per.insert(mt.key.into(), json!({"na": "a variant of the spawn floor"}));
                continue;
            }
            let entry = match (cell, value_of(cells, &s.name, mt.key)) {
                (Some(c), _) if c.na.is_some() => json!({"na": c.na}),
                (Some(c), Some(v)) => {
                    let mut e = json!({"value": v, "runs": c.runs});
                    if let Some(base) = value_of(cells, "stdmcp", mt.key) {
                        if base != 0.0 {
                            e["ratio"] = json!(v / base);
                        }
                    }
                    if !c.failures.is_empty() {
                        e["failures"] = json!(c.failures);
                    }
                    if let Some(n) = &c.note {
                        e["what"] = json!(n);
                    }
                    e
                }
                (Some(c), None) if !c.failures.is_empty() => {
                    json!({"na": c.failures[0], "failures": c.failures})
                }
                _ => json!({"na": "not measured"}),
            };
            per.insert(mt.key.into(), entry);
        }
        results.insert(s.name.clone(), Value::Object(per));
    }
    results
}

/// The summary table on stdout, then the reasons for each n/a.
pub(crate) fn print_summary(all: &[Spec], groups: &[&str], doc: &Value) {
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    print!("{:<52}", "figure (median)");
    for n in &names {
        print!(" {n:>18}");
    }
    println!();
    for mt in METRICS.iter().filter(|m| groups.contains(&m.group)) {
        print!("{:<52}", format!("{} [{}]", mt.label, mt.unit));
        for n in &names {
            let e = &doc["results"][*n][mt.key];
            let cell = match (e["value"].as_f64(), e["ratio"].as_f64()) {
                (Some(v), Some(r)) if *n != "stdmcp" => format!("{} ({:.2}x)", fmt_value(v), r),
                (Some(v), _) => fmt_value(v),
                _ => "n/a".into(),
            };
            print!(" {cell:>18}");
        }
        println!();
    }
    for n in &names {
        // Each reason once per server, with the figures it applies to.
        let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
        for mt in METRICS.iter().filter(|m| groups.contains(&m.group)) {
            let e = &doc["results"][*n][mt.key];
            if let Some(why) = e["na"].as_str() {
                if why == "the floor has no tools (canned answers only)" {
                    continue;
                }
                match reasons.iter_mut().find(|(w, _)| *w == why) {
                    Some((_, keys)) => keys.push(mt.key),
                    None => reasons.push((why, vec![mt.key])),
                }
            }
        }
        for (why, keys) in reasons {
            println!("  {n} {}: n/a: {why}", keys.join(", "));
        }
    }
}

pub(crate) fn write_doc(
    out: &std::path::Path,
    doc: &Value,
    started: Instant,
) -> std::process::ExitCode {
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = std::fs::create_dir_all(dir);
    }
    let text = serde_json::to_string_pretty(doc).unwrap_or_default();
    match std::fs::write(out, text + "\n") {
        Ok(()) => {
            eprintln!(
                "bench: wrote {} ({:.0}s)",
                out.display(),
                started.elapsed().as_secs_f64()
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench: cannot write {}: {e}", out.display());
            std::process::ExitCode::FAILURE
        }
    }
}
