//! What the cursor tools do. Each takes the session's turn for its whole sequence
//! ([`Link`], the session's turn API), takes the cursor's state out of the store, checks it against the program
//! (pid and start time) and the file on disk (an edit to the loaded part forces a reload),
//! runs, and puts the state back.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use stdmcp::sync::lock;

use super::engine::{answer, fill, Cursor, Failure, Halt};
use super::file::read_beneath;
use crate::session::{Caller, Key, Link, OpResult, Registry, Said, StopReason};
use crate::spec::cursor::CursorSpec;
use crate::spec::SessionKind;

/// The cursors of a server, one per session.
#[derive(Default)]
pub(crate) struct CursorStore {
    map: Mutex<HashMap<Key, CursorSlot>>,
}

enum CursorSlot {
    Idle(Box<Cursor>),
    /// A cursor call runs; the file it works on.
    Busy(String),
}

impl CursorStore {
    fn take(&self, key: &Key) -> Option<Cursor> {
        let mut map = lock(&self.map);
        match map.remove(key) {
            Some(CursorSlot::Idle(c)) => {
                map.insert(key.clone(), CursorSlot::Busy(c.file.clone()));
                Some(*c)
            }
            Some(busy) => {
                map.insert(key.clone(), busy);
                None
            }
            None => None,
        }
    }

    fn put(&self, key: &Key, c: Cursor) {
        let mut map = lock(&self.map);
        map.insert(key.clone(), CursorSlot::Idle(Box::new(c)));
    }

    /// A copy of the cursor of `key`, or the file a running call works on.
    pub(super) fn peek(&self, key: &Key) -> Option<Result<Cursor, String>> {
        let map = lock(&self.map);
        map.get(key).map(|s| match s {
            CursorSlot::Idle(c) => Ok((**c).clone()),
            CursorSlot::Busy(f) => Err(f.clone()),
        })
    }
}

/// What every action needs.
pub(super) struct Env<'a> {
    pub reg: &'a Arc<Registry>,
    pub kind: &'a Arc<SessionKind>,
    pub spec: &'a CursorSpec,
    pub store: &'a CursorStore,
    pub root: &'a Path,
    pub session: String,
    pub call: &'a Caller<'a>,
    /// The call's cancel token: what a build the cursor runs is stopped by.
    pub token: stdmcp::CancelToken,
}

impl Env<'_> {
    pub(super) fn key(&self) -> Key {
        (self.kind.name.clone(), self.session.clone())
    }

    pub(super) fn tool(&self, suffix: &str) -> String {
        format!("{}_{suffix}", self.kind.name)
    }
}

/// An action under way: the turn, the cursor, and what to say first.
pub(super) struct Run<'a> {
    pub env: &'a Env<'a>,
    pub link: Link<'a>,
    pub cur: Cursor,
    pub notes: Vec<String>,
    /// The program was fresh or restarted: an entered goal must be entered again.
    pub reloaded: bool,
}

/// The directory of `file` (relative to the root), checked.
fn dir_of(root: &Path, file: &str) -> Result<PathBuf, String> {
    let parent = Path::new(file)
        .parent()
        .and_then(Path::to_str)
        .filter(|p| !p.is_empty());
    crate::resolve::dir_within(root, parent.unwrap_or(".")).map_err(|e| e.to_string())
}

fn clean(file: &str) -> String {
    file.trim_start_matches("./").to_owned()
}

/// Takes the turn and the cursor for `file` (or the cursor's own file).
pub(super) fn begin<'a>(env: &'a Env<'a>, file: Option<&str>) -> Result<Run<'a>, String> {
    let key = env.key();
    let named = file.is_some();
    let file = match (file, env.store.peek(&key)) {
        (Some(f), _) => clean(f),
        (None, Some(Ok(c))) => c.file,
        (None, Some(Err(f))) => f,
        (None, None) => {
            return Err(format!(
                "no proof file yet: call {} {{file}} first",
                env.tool("cursor_init")
            ))
        }
    };
    let disk = read_beneath(env.root, &file).map_err(|e| e.to_string())?;
    let dir = dir_of(env.root, &file)?;
    let project = super::project::of(env.spec, env.root, &file)?;
    // The turn first: a cursor call running on this session keeps its state until its end.
    let opened = (dir, project.launch.clone());
    let mut link = Link::open(env.reg, env.kind, &env.session, opened, env.call)?;
    link.noise.clone_from(&env.spec.noise);
    let mut notes = link.notes.clone();
    notes.extend(project.notes.iter().map(|n| {
        format!(
            "In {}: {n}",
            project.file.as_deref().unwrap_or("the project")
        )
    }));
    // Dependencies are brought up to date before a file is loaded: when it is named, or
    // when the program holds none of it (fresh, restarted, or another file's).
    let loads = named
        || !link.notes.is_empty()
        || !matches!(env.store.peek(&key), Some(Ok(c)) if c.file == file && c.identity == Some(link.identity()) && c.loaded > 0);
    if loads {
        let built = super::build::dependencies(env, &project, &file)?;
        notes.extend(built.said());
    }
    let existing = env.store.take(&key);
    let mut run = Run {
        env,
        reloaded: !link.notes.is_empty(),
        notes,
        link,
        cur: Cursor::default(),
    };
    let cur = match existing {
        Some(c) if c.file == file => c,
        Some(c) => {
            if c.loaded > 0 {
                run.notes.push(format!(
                    "The cursor was on {}; a fresh program loads {file}.",
                    c.file
                ));
                run.restart(Cursor::new(&file, disk.clone(), env.spec))?;
            }
            Cursor::new(&file, disk.clone(), env.spec)
        }
        None => Cursor::new(&file, disk.clone(), env.spec),
    };
    run.check(cur, disk)?;
    Ok(run)
}

impl Run<'_> {
    /// A fresh program; on failure the cursor `keep` goes back to the store (reset).
    fn restart(&mut self, mut keep: Cursor) -> Result<(), String> {
        self.reloaded = true;
        self.link.restart().inspect_err(|_| {
            keep.reset();
            self.env.store.put(&self.env.key(), keep);
        })
    }

    /// Checks the cursor against the program and the disk; reloads if either changed.
    fn check(&mut self, mut cur: Cursor, disk: String) -> Result<(), String> {
        let file = cur.file.clone();
        if let Some(id) = cur.identity.filter(|id| *id != self.link.identity()) {
            self.notes.push(format!(
                "The program the cursor had loaded {file} into (pid {}) is gone or was \
                 restarted: {file} is loaded again in pid {}.",
                id.0,
                self.link.identity().0
            ));
            cur.reset();
            self.reloaded = true;
        } else if self.reloaded {
            cur.reset();
        }
        if let Err(line) = cur.sync(disk, self.env.spec) {
            self.notes.push(format!(
                "{file} changed at line {line}, in the part already loaded: the session was \
                 restarted and the file is loaded again."
            ));
            cur.reset();
            self.restart(cur.clone())?;
        }
        if let Some(r) = cur.resume.take() {
            self.notes.push(r);
        }
        if let Some(i) = cur.interrupted.take() {
            if let Err(e) = self.take_back(&mut cur, i) {
                cur.interrupted = Some(i);
                self.env.store.put(&self.env.key(), cur);
                return Err(e);
            }
        }
        if let Some((s, b)) = cur.current.and_then(|i| cur.block(i)) {
            if cur.text.get(s.start..s.end) != Some(cur.current_text.as_str()) {
                self.notes.push(format!(
                    "{} changed on disk since its goal was entered: {} enters it as it is now \
                     ({} does not write over a changed block).",
                    b.name,
                    self.env.tool("cursor_reenter"),
                    self.env.tool("cursor_complete")
                ));
            }
        }
        cur.identity = Some(self.link.identity());
        self.cur = cur;
        Ok(())
    }
}

impl Run<'_> {
    /// Takes back what the interrupted segment `i` left in the program, with the kind's
    /// `rollback` inputs (their errors ignored); where the kind has none (or they need a
    /// name the segment lacks), restarts the program, so that the file is loaded again.
    fn take_back(&mut self, cur: &mut Cursor, i: usize) -> Result<(), String> {
        let spec = self.env.spec;
        let name = cur.block(i).map(|(_, b)| b.name.clone());
        let named = spec.rollback.iter().any(|r| r.contains("{name}"));
        let what = name.clone().unwrap_or_else(|| cur.progress(i));
        if spec.rollback.is_empty() || (named && name.is_none()) {
            self.notes.push(format!(
                "The program cannot take back what the interrupted {what} left: it was restarted and {} is loaded again.",
                cur.file
            ));
            cur.reset();
            return self.restart(cur.clone());
        }
        for r in &spec.rollback {
            let input = fill(r, &[("name", name.as_deref().unwrap_or_default())]);
            answer(self.link.say(&input, spec.timeout)).map_err(|h| match h {
                Halt::Stopped(_) => {
                    "stopped while taking back an interrupted block: call again".to_owned()
                }
                Halt::Died(m) | Halt::Failed(m) => m,
            })?;
        }
        self.notes.push(format!(
            "Took back what the interrupted {what} left ({}) before loading it again.",
            spec.rollback.join(" ")
        ));
        Ok(())
    }

    /// Puts the cursor back and adds the notes to the reply.
    pub(super) fn end(mut self, reply: OpResult) -> OpResult {
        self.cur.identity = Some(self.link.identity());
        self.env.store.put(&self.env.key(), self.cur);
        let head = self.notes.join("\n");
        let join = |t: String| {
            if head.is_empty() {
                t
            } else {
                format!("{head}\n{t}")
            }
        };
        reply.map(join).map_err(join)
    }

    /// Says why a sequence stopped; a stopped load resumes at the next call.
    pub(super) fn halted(&mut self, h: Halt, again: &str) -> String {
        match h {
            Halt::Stopped(why) => {
                let at = if self.cur.loaded < self.cur.outline.segments.len() {
                    self.cur.progress(self.cur.loaded)
                } else {
                    "the end".into()
                };
                let how = if why == StopReason::Cancelled {
                    "cancelled"
                } else {
                    "the call's deadline passed"
                };
                self.cur.resume = Some(format!(
                    "Resuming: the previous cursor call stopped before {at} ({how}); the blocks before it stayed loaded."
                ));
                format!(
                    "Stopped before {at} ({how}); the blocks before it are loaded. Call {} again to resume from there.",
                    self.env.tool(again)
                )
            }
            Halt::Died(m) => {
                self.cur.reset();
                format!("{m}. The cursor's state is lost: the next cursor call starts a fresh program and loads {} again.", self.cur.file)
            }
            Halt::Failed(m) => m,
        }
    }

    /// Rolls back (a fresh program) when segment `target` is already loaded.
    pub(super) fn rollback_to(&mut self, target: usize) -> Result<(), String> {
        if target < self.cur.loaded {
            self.link.restart()?;
            self.cur.reset();
            self.cur.identity = Some(self.link.identity());
            self.notes.push(format!(
                "Rolled back: a fresh program (pid {}) loads {} up to there again.",
                self.link.proc.pid, self.cur.file
            ));
        }
        Ok(())
    }

    /// Loads up to block `i` and enters it (steps recorded in the cursor are replayed).
    pub(super) fn goto(&mut self, i: usize) -> Result<String, Halt> {
        self.cur.load_to(&self.link, self.env.spec, i)?;
        self.cur.enter(&self.link, self.env.spec, i)
    }

    /// After a reload, enters the current block again (with its steps).
    pub(super) fn restore(&mut self) -> Result<(), Halt> {
        if let (true, Some(i)) = (self.reloaded, self.cur.current) {
            self.goto(i)?;
        }
        Ok(())
    }
}

/// `K_cursor_init {file, start_at?}`.
pub(super) fn init(env: &Env<'_>, file: &str, start_at: Option<&str>) -> OpResult {
    let mut run = begin(env, Some(file))?;
    let reply = init_in(&mut run, start_at);
    run.end(reply)
}

fn init_in(run: &mut Run<'_>, start_at: Option<&str>) -> OpResult {
    let spec = run.env.spec;
    run.cur.steps.clear();
    run.cur.current = None;
    let target = match start_at {
        Some(name) => Some(theorem(&run.cur, spec, name)?),
        None => run.cur.next_placeholder(spec, run.cur.loaded),
    };
    if let Some(t) = target {
        run.rollback_to(t)?;
    }
    let until = target.unwrap_or_else(|| blocks_end(&run.cur));
    let mut text = String::new();
    let goal = match run.cur.load_to(&run.link, spec, until) {
        Err(h) => Err(run.halted(h, "cursor_init")),
        Ok(()) => match target {
            Some(t) => run
                .cur
                .enter(&run.link, spec, t)
                .map(Some)
                .map_err(|h| run.halted(h, "cursor_init")),
            None => Ok(None),
        },
    };
    text.push_str(&outline(&run.cur, spec));
    text.push_str(&failures(&run.cur));
    match goal {
        Ok(Some(g)) => Ok(format!("{text}\n{}\n{g}", entered(&run.cur))),
        Ok(None) => Ok(format!(
            "{text}\nNo placeholders left: every block of {} is loaded.",
            run.cur.file
        )),
        Err(e) => Err(format!("{text}\n{e}")),
    }
}

/// The index after the last block.
pub(super) fn blocks_end(c: &Cursor) -> usize {
    c.outline.blocks().last().map_or(0, |(i, _, _)| i + 1)
}

/// The block named `name` whose goal can be entered.
pub(super) fn theorem(c: &Cursor, spec: &CursorSpec, name: &str) -> Result<usize, String> {
    let found = c
        .outline
        .blocks()
        .find(|(_, _, b)| b.name == name && spec.rules[b.rule].goal && b.proof.is_some());
    found.map(|(i, _, _)| i).ok_or_else(|| {
        let names: Vec<&str> = c
            .outline
            .blocks()
            .map(|(_, _, b)| b.name.as_str())
            .collect();
        format!(
            "{} has no theorem {name:?} (its blocks: {})",
            c.file,
            names.join(", ")
        )
    })
}

pub(super) fn entered(c: &Cursor) -> String {
    match c.current.and_then(|i| c.block(i)) {
        Some((s, b)) => {
            let (a, z) = c.outline.lines_of(s);
            format!("Goal of {} (lines {a}-{z}):", b.name)
        }
        None => String::new(),
    }
}

/// The outline: each block, its lines, and whether its proof is a placeholder.
pub(super) fn outline(c: &Cursor, spec: &CursorSpec) -> String {
    let mut out = format!(
        "{}: {} blocks, loaded to line {}.\n",
        c.file,
        c.outline.blocks().count(),
        c.outline.line(c.loaded_end().saturating_sub(1))
    );
    for (i, s, b) in c.outline.blocks() {
        let (a, z) = c.outline.lines_of(s);
        let mark = if b.placeholder { " placeholder" } else { "" };
        let goal = if spec.rules[b.rule].goal {
            ""
        } else {
            " (not a goal)"
        };
        let here = if Some(i) == c.current {
            "  <- cursor"
        } else {
            ""
        };
        out.push_str(&format!("  {} lines {a}-{z}{mark}{goal}{here}\n", b.name));
    }
    out
}

pub(super) fn failures(c: &Cursor) -> String {
    c.failed.iter().map(failure).collect()
}

/// One failure, on one line: a command's, or a block's (after a failed command: that it
/// may be why, rather than the same error again).
pub(super) fn failure(f: &Failure) -> String {
    let (a, z) = f.lines;
    let lines = if a == z {
        format!("line {a}")
    } else {
        format!("lines {a}-{z}")
    };
    if f.command {
        return format!("FAILED {} ({lines}): {}\n", f.name, f.error);
    }
    let admitted = if f.admit_failed {
        "; it failed again with its proof left to later, so its name is unbound"
    } else {
        "; loaded again with its proof left to later"
    };
    match &f.after {
        Some(cause) => format!(
            "FAILED {} ({lines}): after the failed command {cause} ({}){admitted}\n",
            f.name, f.error
        ),
        None => format!("FAILED {} ({lines}): {}{admitted}\n", f.name, f.error),
    }
}

/// `K_cursor_step {tactic}`.
pub(super) fn step(env: &Env<'_>, tactic: &str, limit: Duration) -> OpResult {
    let mut run = begin(env, None)?;
    let reply = step_in(&mut run, tactic, limit);
    run.end(reply)
}

/// The current theorem, entered again (with its steps) when the program was fresh; `again`
/// is the tool to call again when that reload stops early.
pub(super) fn need_goal(run: &mut Run<'_>, again: &str) -> Result<usize, String> {
    let i = run.cur.current.ok_or_else(|| {
        format!(
            "no goal is entered: call {} or {} first",
            run.env.tool("cursor_init"),
            run.env.tool("cursor_goto")
        )
    })?;
    run.restore().map_err(|h| run.halted(h, again))?;
    Ok(i)
}

fn step_in(run: &mut Run<'_>, tactic: &str, limit: Duration) -> OpResult {
    let spec = run.env.spec;
    if let Some(p) = spec.step_pattern.as_ref().filter(|p| !p.is_match(tactic)) {
        return Err(format!(
            "a step of this kind must match /{}/ (for example end with a period); nothing was sent",
            p.as_str().trim_start_matches("(?m)")
        ));
    }
    need_goal(run, "cursor_step")?;
    match run
        .link
        .say(&fill(&spec.step, &[("tactic", tactic)]), limit)
    {
        Said::Answer(a) => {
            if let Some(e) = spec.error_line(&a) {
                return Err(format!(
                    "{a}\n\nThe step failed ({e}); it is not recorded and the goal is as before."
                ));
            }
            run.cur.steps.push(tactic.trim().to_owned());
            run.cur.proved = spec.proved.is_match(&a);
            // A step that printed nothing: show the goals it left.
            let a = if a.is_empty() {
                answer(run.link.say(&spec.goals, spec.timeout)).unwrap_or_default()
            } else {
                a
            };
            let n = run.cur.steps.len();
            let tail = if run.cur.proved {
                format!(
                    "The goal is proved ({n} step{}): call {} to write the proof.",
                    if n == 1 { "" } else { "s" },
                    run.env.tool("cursor_complete")
                )
            } else {
                format!("(step {n} recorded)")
            };
            Ok(format!("{a}\n\n{tail}"))
        }
        Said::Stopped {
            partial,
            alive,
            why,
        } => {
            let how = if why == StopReason::Deadline {
                format!("after its timeout of {:.0} s", limit.as_secs_f64())
            } else {
                "by a cancel".into()
            };
            let state = if alive {
                "the goal is as before".to_owned()
            } else {
                run.cur.reset();
                "the program did not come back and was killed; the next cursor call loads the file again".to_owned()
            };
            Err(format!("The step was interrupted {how}; it is not recorded and {state}.\nOutput so far:\n{partial}"))
        }
        Said::Died(m) => {
            run.cur.reset();
            Err(format!(
                "{m}. The next cursor call starts a fresh program and loads the file again."
            ))
        }
    }
}

/// `K_cursor_undo {}`.
pub(super) fn undo(env: &Env<'_>) -> OpResult {
    let mut run = begin(env, None)?;
    let reply = (|| {
        need_goal(&mut run, "cursor_undo")?;
        if run.cur.steps.is_empty() {
            return Err("no recorded step to undo".to_owned());
        }
        let a = answer(run.link.say(&run.env.spec.undo, run.env.spec.timeout))
            .map_err(|h| run.halted(h, "cursor_undo"))?;
        if let Some(e) = run.env.spec.error_line(&a) {
            return Err(format!("{a}\n\nThe undo failed ({e})."));
        }
        let s = run.cur.steps.pop().unwrap_or_default();
        run.cur.proved = false;
        let goals = answer(run.link.say(&run.env.spec.goals, run.env.spec.timeout))
            .map_err(|h| run.halted(h, "cursor_undo"))?;
        Ok(format!(
            "{goals}\n\nTook back step {} ({s}).",
            run.cur.steps.len() + 1
        ))
    })();
    run.end(reply)
}

/// `K_cursor_reenter {}`.
pub(super) fn reenter(env: &Env<'_>) -> OpResult {
    let mut run = begin(env, None)?;
    let reply = (|| {
        let i = run
            .cur
            .current
            .ok_or_else(|| "no theorem is under the cursor".to_owned())?;
        run.cur.steps.clear();
        let g = run.goto(i).map_err(|h| run.halted(h, "cursor_reenter"))?;
        Ok(format!("{}\n{g}", entered(&run.cur)))
    })();
    run.end(reply)
}

/// `K_cursor_goto {theorem}`.
pub(super) fn goto(env: &Env<'_>, name: &str) -> OpResult {
    let mut run = begin(env, None)?;
    let reply = (|| {
        let i = theorem(&run.cur, run.env.spec, name)?;
        run.cur.steps.clear();
        run.cur.current = None;
        run.rollback_to(i)?;
        let g = run.goto(i).map_err(|h| run.halted(h, "cursor_goto"))?;
        Ok(format!("{}{}\n{g}", failures(&run.cur), entered(&run.cur)))
    })();
    run.end(reply)
}
