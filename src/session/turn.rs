//! The cursor's hold on its session: the session's turn for a whole sequence of inputs (no
//! `K_send` interleaves), the program started or restarted in the file's directory, and one
//! exchange at a time with the kind's answer rule, interrupt and resynchronisation.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::child::Proc;
use super::exchange::{exchange, Caller, ExchangeEnd, ExchangeWait, StopReason};
use super::launch::ProjectLaunch;
use super::ops::{refused, start_in_turn};
use super::registry::{key_of, Registry, Turn};
use crate::spec::SessionKind;

/// "for project F" or "without a project", for what the cursor says of a restart.
fn for_project(p: Option<&ProjectLaunch>) -> String {
    p.map_or_else(
        || "without a project".to_owned(),
        |p| format!("for the project {}", p.file),
    )
}

/// Which program the cursor's state lives in: pid and start time.
pub(crate) type Identity = (u32, SystemTime);

/// The session's turn and its running program.
pub(crate) struct Link<'a> {
    reg: &'a Arc<Registry>,
    kind: &'a Arc<SessionKind>,
    turn: Turn,
    pub proc: Arc<Proc>,
    call: &'a Caller<'a>,
    /// Said about the program while taking the turn (started, restarted, why).
    pub notes: Vec<String>,
    /// Removed from every answer.
    pub noise: Option<regex_lite::Regex>,
}

/// How one input went.
pub(crate) enum Said {
    /// The whole answer.
    Answer(String),
    /// Cancelled or past the deadline; the program was interrupted. `alive`: it came back and
    /// keeps its state.
    Stopped {
        why: StopReason,
        partial: String,
        alive: bool,
    },
    /// The program ended.
    Died(String),
}

impl<'a> Link<'a> {
    /// Takes the turn of session `name` and makes sure its program runs in `dir` for
    /// `project` (started, or restarted when it runs elsewhere, for another project, or
    /// died).
    pub(crate) fn open(
        reg: &'a Arc<Registry>,
        kind: &'a Arc<SessionKind>,
        name: &str,
        (dir, project): (PathBuf, Option<ProjectLaunch>),
        call: &'a Caller<'a>,
    ) -> Result<Link<'a>, String> {
        let key = key_of(kind, name);
        let turn = reg
            .turn(kind, &key, || dir.clone(), call.cancelled, call.deadline)
            .map_err(|r| refused(&key, r, kind))?;
        let (proc, workdir, mut alive, was) = reg
            .with(&key, |e| {
                let was = e.project.clone();
                (e.proc.clone(), e.workdir.clone(), e.alive(), was)
            })
            .ok_or("the session vanished")?;
        if alive
            && proc
                .as_ref()
                .is_some_and(|p| stdmcp::process::has_ended(p.pid))
        {
            // Killed from outside and not reaped yet: wait for its status.
            reg.kill(&key, "it had died (found by the proof cursor)");
            alive = false;
        }
        let mut notes = Vec::new();
        let proc = match proc {
            Some(p) if alive && workdir == dir && was == project => p,
            old => {
                if let Some(p) = &old {
                    if alive && workdir == dir {
                        reg.kill(&key, "the proof cursor's file is of another project");
                        notes.push(format!(
                            "The {} session `{name}` (pid {}) ran {}; it was restarted {}.",
                            kind.name,
                            p.pid,
                            for_project(was.as_ref()),
                            for_project(project.as_ref())
                        ));
                    } else if alive {
                        reg.kill(&key, "the proof cursor moved it to another directory");
                        notes.push(format!(
                            "The {} session `{name}` ran in {} (pid {}); it was restarted in {}.",
                            kind.name,
                            workdir.display(),
                            p.pid,
                            dir.display()
                        ));
                    } else {
                        let how = p
                            .exit()
                            .map_or_else(|| "stopped".to_owned(), |s| p.describe(&s));
                        notes.push(format!(
                            "The {} session `{name}`'s program (pid {}) is gone ({how}); a fresh one was started.",
                            kind.name, p.pid
                        ));
                    }
                }
                reg.with(&key, |e| {
                    e.workdir.clone_from(&dir);
                    e.project.clone_from(&project);
                });
                let (p, _) = start_in_turn(reg, kind, &turn, call)?;
                reg.activity();
                p
            }
        };
        Ok(Link {
            reg,
            kind,
            turn,
            proc,
            call,
            notes,
            noise: None,
        })
    }

    /// The kind's name.
    pub(crate) fn kind_name(&self) -> &str {
        &self.kind.name
    }

    /// The program's identity.
    pub(crate) fn identity(&self) -> Identity {
        (self.proc.pid, self.proc.started_at)
    }

    /// Kills the program and starts a fresh one in the same directory (a rollback).
    pub(crate) fn restart(&mut self) -> Result<(), String> {
        self.reg.kill(
            &self.turn.key,
            "the proof cursor rolled back (restart and reload)",
        );
        let (p, _) = start_in_turn(self.reg, self.kind, &self.turn, self.call)?;
        self.proc = p;
        Ok(())
    }

    /// The call was cancelled or its deadline passed.
    pub(crate) fn stopped(&self) -> Option<StopReason> {
        if (self.call.cancelled)() {
            Some(StopReason::Cancelled)
        } else if Instant::now() >= self.call.deadline {
            Some(StopReason::Deadline)
        } else {
            None
        }
    }

    /// Sets the heartbeat's status line.
    pub(crate) fn status(&self, line: &str) {
        (self.call.status)(line);
    }

    /// Sends `input` and waits for its answer, at most `limit` (and the call's deadline).
    pub(crate) fn say(&self, input: &str, limit: Duration) -> Said {
        let waiting = ExchangeWait {
            caller: Caller {
                cancelled: self.call.cancelled,
                shutdown: self.call.shutdown,
                deadline: (Instant::now() + limit).min(self.call.deadline),
                status: &|_| {},
            },
            interrupt: true,
        };
        match exchange(self.kind, &self.proc, Some(input), &waiting) {
            ExchangeEnd::Answer(t) => {
                self.reg
                    .with(&self.turn.key, |e| e.last_answer.clone_from(&t));
                Said::Answer(match &self.noise {
                    Some(n) => n.replace_all(&t, "").trim().to_owned(),
                    None => t,
                })
            }
            ExchangeEnd::Died { partial, how } => Said::Died(format!(
                "the program (pid {}) {}{}",
                self.proc.pid,
                how,
                if partial.is_empty() {
                    String::new()
                } else {
                    format!("; its output:\n{partial}")
                }
            )),
            ExchangeEnd::Interrupted {
                why,
                partial,
                recovered,
            } => {
                if !recovered {
                    // It did not come back: its state is unknown, the next call starts afresh.
                    self.reg.kill(
                        &self.turn.key,
                        "it did not come back from an interrupt of the proof cursor",
                    );
                }
                Said::Stopped {
                    why,
                    partial,
                    alive: recovered,
                }
            }
        }
    }
}
