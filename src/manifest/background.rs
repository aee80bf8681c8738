//! The manifest's `background` key (README "Long runs: Jobs"): `{"afterSeconds": N}` on a
//! tool or in `defaults`, or `false` on a tool to opt out of the defaults' delay. A call
//! still running after N seconds is answered with a job ([`stdmcp::ToolDef::background`]).

use std::time::Duration;

use serde_json::Value;

use super::json::{Errors, Obj, MAX_SECONDS};
use crate::spec::ToolSpec;

const SHAPE: &str =
    "must be an object {\"afterSeconds\": N} (N a whole number of seconds, at least 1) or false";

/// The `background` key of `o`: `Some(None)` for `false`, `None` when absent or wrong (with
/// the problem in `errs`).
pub(super) fn background(o: &Obj<'_>, errs: &mut Errors) -> Option<Option<Duration>> {
    let path = o.at("background");
    match o.map.get("background")? {
        Value::Bool(false) | Value::Null => Some(None),
        Value::Object(m) => {
            for k in m.keys().filter(|k| k.as_str() != "afterSeconds") {
                errs.add(
                    &format!("{path}.{k}"),
                    "unknown field (expected: afterSeconds)",
                );
            }
            let at = format!("{path}.afterSeconds");
            match m.get("afterSeconds") {
                None => {
                    errs.add(&at, "is required");
                    None
                }
                Some(v) => after_seconds(v, &at, errs).map(Some),
            }
        }
        _ => {
            errs.add(&path, SHAPE);
            None
        }
    }
}

fn after_seconds(v: &Value, at: &str, errs: &mut Errors) -> Option<Duration> {
    let Some(n) = v.as_f64() else {
        errs.add(at, "must be a whole number of seconds (at least 1)");
        return None;
    };
    if n.fract() != 0.0 {
        errs.add(at, format!("must be a whole number of seconds, not {n}"));
        return None;
    }
    if n < 1.0 {
        errs.add(
            at,
            format!("must be at least 1 (got {n}): a job answers a call that is still running after that long"),
        );
        return None;
    }
    if n > MAX_SECONDS {
        errs.add(at, format!("must be at most {MAX_SECONDS} (a year)"));
        return None;
    }
    Some(Duration::from_secs_f64(n))
}

/// A tool's delay: its own `background`, else the defaults'; it must be shorter than the
/// tool's deadline (a call that the deadline ends first would never become a job).
pub(super) fn for_tool(
    o: &Obj<'_>,
    inherited: Option<Duration>,
    timeout: Duration,
    errs: &mut Errors,
) -> Option<Duration> {
    let own = background(o, errs);
    let after = match own {
        Some(own) => own,
        None if o.map.contains_key("background") => return None,
        None => inherited,
    }?;
    if after >= timeout {
        let (at, whose) = match own {
            Some(_) => (o.at("background.afterSeconds"), "it"),
            None => (o.at("timeoutSeconds"), "defaults.background.afterSeconds"),
        };
        errs.add(
            &at,
            format!(
                "{whose} ({}) must be less than the tool's timeoutSeconds ({}): the deadline would end every call before it became a job",
                stdmcp_proto::human::setting(after),
                stdmcp_proto::human::setting(timeout)
            ),
        );
        return None;
    }
    Some(after)
}

/// With a background delay, the names of the built-in job tools are taken.
pub(super) fn check_reserved(tools: &[ToolSpec], errs: &mut Errors) {
    if tools.iter().all(|t| t.background.is_none()) {
        return;
    }
    for (i, t) in tools.iter().enumerate() {
        if stdmcp_proto::peer::JOB_TOOL_NAMES.contains(&t.name.as_str()) {
            errs.add(
                &format!("tools[{i}].name"),
                format!(
                    "{} is the name of a built-in job tool (job_wait, job_cancel, jobs), served when a tool has a background delay",
                    t.name
                ),
            );
        }
    }
}
