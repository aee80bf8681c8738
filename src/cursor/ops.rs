//! What the cursor tools do. Each takes the session's turn for its whole sequence
//! ([`Link`], the session's turn API), takes the cursor's state out of the store, checks it against the program
//! (pid and start time) and the file on disk (an edit to the loaded part forces a reload),
//! runs, and puts the state back.

use std::path::{Path, PathBuf};

use super::engine::Cursor;
use super::env::Env;
use super::file::read_beneath;
use super::input::{answer, fill, Halt};
use super::reply::{Answer, Reply};
use super::report::{blocks_end, entered, failures, outline, theorem};
use crate::session::{Link, StopReason};

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

    /// Puts the cursor back; the answer is `reply` after the notes, with the cursor's state
    /// and the notes among its fields.
    pub(super) fn end<T: Into<Reply>, E: Into<Reply>>(mut self, reply: Result<T, E>) -> Answer {
        self.cur.identity = Some(self.link.identity());
        let head = self.notes.join("\n");
        let mut state = super::reply::state(&self.cur, self.env.spec);
        state.insert("notes".into(), serde_json::json!(self.notes));
        self.env.store.put(&self.env.key(), self.cur);
        let finish = |r: Reply| {
            let mut r = r.after(&head);
            for (k, v) in &state {
                r.data.entry(k.clone()).or_insert_with(|| v.clone());
            }
            r
        };
        match reply {
            Ok(r) => Ok(finish(r.into())),
            Err(r) => Err(finish(r.into())),
        }
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

    /// A fresh program, the cursor's loaded prefix forgotten (its theorem and steps kept).
    pub(super) fn fresh_program(&mut self) -> Result<(), String> {
        self.link.restart()?;
        self.cur.reset();
        self.cur.identity = Some(self.link.identity());
        Ok(())
    }

    /// Rolls back (a fresh program) when segment `target` is already loaded.
    pub(super) fn rollback_to(&mut self, target: usize) -> Result<(), String> {
        if target < self.cur.loaded {
            self.fresh_program()?;
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
pub(super) fn init(env: &Env<'_>, file: &str, start_at: Option<&str>) -> Answer {
    let mut run = begin(env, Some(file))?;
    let reply = init_in(&mut run, start_at);
    run.end(reply)
}

fn init_in(run: &mut Run<'_>, start_at: Option<&str>) -> Result<Reply, String> {
    let spec = run.env.spec;
    run.cur.steps.clear();
    run.cur.current = None;
    let target = match start_at {
        Some(name) => Some(theorem(&run.cur, spec, name)?),
        // The first placeholder of the file (a check may have loaded past it).
        None => run.cur.next_placeholder(spec, 0),
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
        Ok(Some(g)) => {
            let text = format!("{text}\n{}\n{g}", entered(&run.cur));
            Ok(Reply::from(text).with("goals", g.as_str()))
        }
        Ok(None) => Ok(Reply::from(format!(
            "{text}\nNo placeholders left: every block of {} is loaded.",
            run.cur.file
        ))),
        Err(e) => Err(format!("{text}\n{e}")),
    }
}
