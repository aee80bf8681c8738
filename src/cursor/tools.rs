//! The cursor tools of a kind: `K_cursor_init`, `K_cursor_step`, `K_cursor_undo`,
//! `K_cursor_complete`, `K_cursor_goto`, `K_cursor_reenter`, `K_cursor_status`,
//! `K_state_at`, `K_check`.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};

use super::env::Env;
use super::ops;
use super::reply::Answer;
use super::store::CursorStore;
use super::{attempt, check, search, state_at, steps, write_proof};
use crate::session::{annotations, name_of, object, session_param, with_call, Registry};
use crate::spec::cursor::CursorSpec;
use crate::spec::session::{SessionKind, Workdir};
use stdmcp::{Ctx, ToolDef, ToolError};
use stdmcp_proto::peer::Timeout;

type Action = dyn Fn(&Env<'_>, &Value) -> Result<Answer, ToolError> + Send + Sync;

struct Ctxt {
    reg: Arc<Registry>,
    kind: Arc<SessionKind>,
    spec: Arc<CursorSpec>,
    store: Arc<CursorStore>,
    root: PathBuf,
}

fn string<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() && !s.contains('\0') => Ok(Some(s)),
        Some(_) => Err(ToolError::msg(format!("{key} must be a non-empty string"))),
    }
}

fn required<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    string(args, key)?.ok_or_else(|| ToolError::msg(format!("{key} (a string) is required")))
}

impl Ctxt {
    fn tool(
        self: &Arc<Self>,
        suffix: &str,
        description: String,
        props: Value,
        req: &[&str],
        long: bool,
        action: Box<Action>,
    ) -> ToolDef {
        let mut all = json!({"session": session_param()});
        if let (Some(a), Some(p)) = (all.as_object_mut(), props.as_object()) {
            a.extend(p.clone());
        }
        let me = Arc::clone(self);
        let def = ToolDef::new(
            format!("{}_{suffix}", self.kind.name),
            description,
            object(all, req),
            move |ctx: &Ctx, args: Value| {
                let session = name_of(&args)?;
                let r = with_call(ctx, |call| {
                    let env = Env {
                        reg: &me.reg,
                        kind: &me.kind,
                        spec: &me.spec,
                        store: &me.store,
                        root: &me.root,
                        session,
                        call,
                        token: ctx.cancel_token().clone(),
                    };
                    action(&env, &args)
                })?;
                Ok(super::reply::result(r))
            },
        )
        .annotations(annotations(suffix == "cursor_status", false, false));
        if long {
            let def = def.timeout(self.spec.timeout);
            match self.spec.background {
                Some(d) => def.background(d),
                None => def,
            }
        } else {
            def.timeout(self.spec.timeout.min(self.kind.max_timeout))
        }
    }
}

/// The cursor tools of `kind` (which has a cursor and a `workdir` root).
pub(crate) fn tools(
    reg: &Arc<Registry>,
    kind: &Arc<SessionKind>,
    store: &Arc<CursorStore>,
) -> Vec<ToolDef> {
    let (
        Some(spec),
        Workdir::Param {
            root, root_name, ..
        },
    ) = (&kind.cursor, &kind.workdir)
    else {
        return Vec::new();
    };
    let c = Arc::new(Ctxt {
        reg: reg.clone(),
        kind: kind.clone(),
        spec: spec.clone(),
        store: store.clone(),
        root: root.clone(),
    });
    let file = json!({"type": "string", "description": format!("The proof file, relative to the root {root_name}.")});
    let mut v = c.moving(&file);
    v.extend(c.reading(&file));
    // Only the tools the kind declares what they need for (a search input).
    if !spec.search.is_empty() {
        v.push(c.search());
    }
    v
}

impl Ctxt {
    /// The tools that move the cursor: init, step, undo, complete, goto, reenter.
    fn moving(self: &Arc<Self>, file: &Value) -> Vec<ToolDef> {
        let (c, k, kind, spec) = (self, &self.kind.name, &self.kind, &self.spec);
        let write = if spec.write {
            "splices the proof over the placeholder in the file (when the block is unchanged since it was loaded)"
        } else {
            "returns the proof (this cursor does not write files)"
        };
        vec![
        c.tool("cursor_init", format!(
            "Open a proof file in the {k} session (started in the file's directory): loads its blocks one by one up to the first placeholder (or `start_at`, a theorem name) and enters that goal. Returns the outline (each block, its lines, placeholder or not), the blocks that failed (each loaded again with its proof left to later, so later blocks still see its name), and the goal. Then {k}_cursor_step, {k}_cursor_complete."),
            json!({"file": file, "start_at": {"type": "string", "description": "Theorem to enter instead of the first placeholder."}}),
            &["file"], true,
            Box::new(|env, a| Ok(ops::init(env, required(a, "file")?, string(a, "start_at")?)))),
        c.tool("cursor_step", format!(
            "Apply one step (tactic) to the goal under the {k} cursor. Recorded only when it succeeds; an error or a timeout is isError and leaves the goal as it was. Says when the goal is proved."),
            json!({"tactic": {"type": "string", "description": "The step, as you would write it in the proof.", "maxLength": 65536},
                   "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": kind.max_timeout.as_secs_f64(), "description": "Seconds the step may take."}}),
            &["tactic"], false,
            Box::new(|env, a| {
                let limit = step_timeout(env.kind).for_call(a);
                Ok(steps::step(env, required(a, "tactic")?, limit))
            })).timeout_rule(step_timeout(kind)),
        c.tool("cursor_try", format!(
            "Try several tactics (1-{max}) on the goal under the {k} cursor, each from the same goal, none recorded: for each, whether it proves the goal, the goals it leaves (how many, and their text), its error, or that it passed its timeout (it is interrupted and the next one runs). The goal is as it was afterwards; then {k}_cursor_step the one to keep.", max = attempt::MAX_TACTICS),
            json!({"tactics": {"type": "array", "minItems": 1, "maxItems": attempt::MAX_TACTICS, "items": {"type": "string", "minLength": 1, "maxLength": 65536}, "description": "The tactics, each as you would write it as a step."},
                   "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": kind.max_timeout.as_secs_f64(), "description": "Seconds each tactic may take."},
                   "stopAtProof": {"type": "boolean", "description": "Stop at the first tactic that proves the goal."}}),
            &["tactics"], true,
            Box::new(|env, a| {
                let tactics: Vec<String> = a["tactics"].as_array().into_iter().flatten().filter_map(|t| t.as_str().map(str::to_owned)).collect();
                if tactics.is_empty() || tactics.len() > attempt::MAX_TACTICS {
                    return Err(ToolError::msg(format!("tactics must hold 1-{} strings", attempt::MAX_TACTICS)));
                }
                let ask = attempt::Ask {
                    limit: step_timeout(env.kind).for_call(a),
                    stop_at_proof: a["stopAtProof"].as_bool().unwrap_or(false),
                    tactics: &tactics,
                };
                Ok(attempt::try_tactics(env, &ask))
            })),
        c.tool("cursor_undo", format!("Take back the last recorded step of the {k} cursor."), json!({}), &[], false,
            Box::new(|env, _| Ok(steps::undo(env)))),
        c.tool("cursor_complete", format!(
            "Join the recorded steps into the proof, check the whole block in the {k} session, and {write}; then move to the next placeholder (loading the blocks in between) and enter its goal. Returns the proof, the changed lines and the next goal."),
            json!({}), &[], true, Box::new(|env, _| Ok(write_proof::complete(env)))),
        c.tool("cursor_goto", format!("Drop the current proof of the {k} cursor and enter another theorem of the file (forward: loads the blocks in between; backward: a fresh program loads up to it)."),
            json!({"theorem": {"type": "string", "description": "The theorem's name."}}), &["theorem"], true,
            Box::new(|env, a| Ok(steps::goto(env, required(a, "theorem")?)))),
        c.tool("cursor_reenter", format!("Drop all proof state of the {k} cursor and enter the current theorem again (no steps)."),
            json!({}), &[], true, Box::new(|env, _| Ok(steps::reenter(env)))),
        ]
    }

    /// The tools that report: status, state at a line, check.
    fn reading(self: &Arc<Self>, file: &Value) -> Vec<ToolDef> {
        let (c, k) = (self, &self.kind.name);
        vec![
        c.tool("cursor_status", format!("The {k} cursor: its file and whether it changed since loading, the line loaded to, the current theorem, the recorded steps, the placeholders left."),
            json!({}), &[], false, Box::new(|env, _| Ok(super::report::status(env)))),
        c.tool("state_at", format!("The goals before and after one step of a proof in a file, in the {k} session: the step at `line` (and `column`, to pick one of several steps on a line; else the line's last), with the steps before it applied, then it. The state before it stays recorded, so {k}_cursor_step tries another step in its place."),
            json!({"file": file, "line": {"type": "integer", "minimum": 1, "description": "1-based line inside a proof."},
                   "column": {"type": "integer", "minimum": 1, "description": "1-based column (in characters) of the step on the line."}}), &["file", "line"], true,
            Box::new(|env, a| {
                let n = |k: &str| a.get(k).and_then(Value::as_u64).filter(|l| *l >= 1).map(|l| usize::try_from(l).unwrap_or(usize::MAX));
                let line = n("line").ok_or_else(|| ToolError::msg("line must be a positive integer"))?;
                if a.get("column").is_some_and(|c| !c.is_null()) && n("column").is_none() {
                    return Err(ToolError::msg("column must be a positive integer"));
                }
                let at = state_at::Position { line, column: n("column") };
                Ok(state_at::state_at(env, required(a, "file")?, at))
            })),
        c.tool("check", format!("Check a proof file in the {k} session: every block after the loaded point (or only `theorem`) loaded from disk and reported OK, FAILED (first error line and the answer) or placeholder; isError when one failed."),
            json!({"file": file, "theorem": {"type": "string", "description": "Check only this block."}}), &["file"], true,
            Box::new(|env, a| Ok(check::check(env, required(a, "file")?, string(a, "theorem")?)))),

        ]
    }
}

impl Ctxt {
    /// `K_search`, for a kind whose cursor declares how to search.
    fn search(self: &Arc<Self>) -> ToolDef {
        let (c, k) = (self, &self.kind.name);
        c.tool("search", format!("Search the library loaded in the {k} session (with the cursor's file loaded as far as it is) for lemmas: by name, or by a pattern of their statement. The answer is cut to `limit` bytes (head and tail); the whole of it is kept in the output spool."),
            json!({"query": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "A name (or part of one), or a statement pattern such as (_ + 0 = _)."},
                   "limit": {"type": "integer", "minimum": 1, "maximum": search::MAX_LIMIT, "description": "Most bytes of the answer shown."}}), &["query"], false,
            Box::new(|env, a| {
                let query = required(a, "query")?;
                let limit = a.get("limit").and_then(Value::as_u64).map_or(env.kind.max_output_bytes, |l| usize::try_from(l).unwrap_or(search::MAX_LIMIT).clamp(1, search::MAX_LIMIT));
                Ok(search::search(env, query, limit))
            }))
    }
}

fn step_timeout(kind: &SessionKind) -> Timeout {
    Timeout::Argument {
        name: "timeout".into(),
        default: kind.timeout,
        max: kind.max_timeout,
    }
}
