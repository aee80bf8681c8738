//! Spawner threads: one per distinct ruleset, each of which entered its Landlock domain once
//! and then starts programs in it with `posix_spawn` (the child inherits the domain of the
//! thread that made it), so that a confined call costs no ruleset and no thread of its own.
//!
//! A spawner is keyed by its ruleset's content ([`Key`]): the Landlock ABI, TCP, whether runs
//! get a private `TMPDIR`, and each place its rules name, by the identity of what is there
//! (device and inode; a place that is not there is part of the key too, so a tree built
//! later, or a root swapped for another directory, makes another spawner). Calls whose rules
//! differ per call (the held places of a path parameter with `"write": true`) are not started
//! by spawners, nor programs started with `fork` (`PR_SET_PDEATHSIG` follows the forking
//! thread: a spawner's end must never kill a program).
//!
//! Each run still gets its own fresh `TMPDIR`, `tmp/sK/N`, inside the spawner's `tmp/sK`,
//! which the spawner's ruleset makes writable (see `private_tmp.rs`).
//!
//! A spawner thread (`stdmcp-spawner`) runs nothing but spawns handed to it in a
//! [`Mailbox`], and answers each with the child or the error. There are at most
//! [`MAX_SPAWNERS`]; a spawner unused for [`IDLE`] is ended at the next look-up, and all of
//! them at the server's end ([`stop`]). A run whose spawner cannot be had (the limit, a thread
//! that cannot be started, a ruleset that cannot be built or entered) is started as before, with
//! a ruleset of its own.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::confine::{Confinement, Network};
use super::private_tmp::PrivateTmp;
use super::ruleset::{build, open_path, places, restrict, Rights};
use super::tmp_pool::Pool;
use crate::mailbox::{Closing, Mailbox};

/// Spawners at most: distinct rulesets (tools, roots) started with `posix_spawn` at once.
const MAX_SPAWNERS: usize = 16;
/// Threads per spawner at most (see [`threads_per_spawner`]).
const MAX_THREADS: usize = 4;
/// A spawner unused this long is ended at the next look-up.
const IDLE: Duration = Duration::from_secs(30);

/// What a ruleset holds, as a spawner's key: the ABI, TCP, a private `TMPDIR` or not, and the
/// places with their rights, each by device and inode (`None`: not there).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    abi: u32,
    network: Network,
    private_tmp: bool,
    places: Vec<(Rights, Option<(u64, u64)>)>,
}

/// A spawn handed to a spawner's thread: the command, and where its answer goes (closed if
/// the spawner ends without one).
struct Request {
    cmd: Command,
    reply: Closing<io::Result<Child>>,
}

/// A spawner: its thread's mailbox, and the pool its runs' `TMPDIR`s come from.
pub(super) struct Spawner {
    requests: Arc<Mailbox<Request>>,
    tmp: Option<Arc<Pool>>,
}

impl Spawner {
    /// A fresh private `TMPDIR` for a run it starts, removed after the run (`None`: its runs
    /// get none, or none could be made).
    pub(super) fn private_tmp(&self) -> Option<PrivateTmp> {
        self.tmp.as_ref()?.take()
    }

    /// Starts `cmd` from the spawner's thread, in its domain (the command is taken; `cmd` is
    /// left empty).
    #[allow(clippy::disallowed_methods)] // an empty command in place of the one taken
    pub(super) fn spawn(&self, cmd: &mut Command) -> io::Result<Child> {
        let cmd = std::mem::replace(cmd, Command::new(""));
        let reply = Arc::new(Mailbox::default());
        let request = Request {
            cmd,
            reply: Closing(Arc::clone(&reply)),
        };
        if !self.requests.send(request) {
            return Err(io::Error::other("the server is shutting down"));
        }
        reply
            .recv()
            .unwrap_or_else(|| Err(io::Error::other("the spawner thread ended")))
    }
}

/// One spawner in the registry.
struct Entry {
    spawner: Arc<Spawner>,
    threads: Vec<JoinHandle<()>>,
    used: Instant,
}

/// Every spawner, by key.
#[derive(Default)]
struct Registry {
    by_key: HashMap<Key, Entry>,
    /// The server is ending: no spawner is made any more.
    stopped: bool,
    /// When the idle ones were last looked for.
    swept: Option<Instant>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

/// The spawner of `c`'s rules for a run of `program` on Landlock ABI `abi`, made if there is
/// none yet; `None` when none can be had (the run then gets a ruleset of its own).
pub(super) fn of(c: &Confinement, abi: u32, program: &Path) -> Option<Arc<Spawner>> {
    let named = places(c, program);
    let key = Key {
        abi,
        network: c.network.clone(),
        private_tmp: c.private_tmp,
        places: named
            .iter()
            .map(|(p, r)| (*r, std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))))
            .collect(),
    };
    let mut ended = Vec::new();
    let found = {
        let mut guard = crate::sync::lock(&REGISTRY);
        let reg = guard.get_or_insert_with(Registry::default);
        let now = Instant::now();
        if reg
            .swept
            .is_none_or(|s| now.duration_since(s) >= Duration::from_secs(1))
        {
            reg.swept = Some(now);
            ended = reg.end_idle(now);
        }
        reg.get(&key, now, || make(&key, &named))
    };
    join(ended);
    found
}

impl Registry {
    /// The spawner of `key`, made by `make` if there is none and there is room.
    fn get(
        &mut self,
        key: &Key,
        now: Instant,
        make: impl FnOnce() -> Option<(Spawner, Vec<JoinHandle<()>>)>,
    ) -> Option<Arc<Spawner>> {
        if let Some(e) = self.by_key.get_mut(key) {
            e.used = now;
            return Some(Arc::clone(&e.spawner));
        }
        if self.stopped || self.by_key.len() >= MAX_SPAWNERS {
            return None;
        }
        let (spawner, threads) = make()?;
        let spawner = Arc::new(spawner);
        self.by_key.insert(
            key.clone(),
            Entry {
                spawner: Arc::clone(&spawner),
                threads,
                used: now,
            },
        );
        Some(spawner)
    }

    /// Takes out the spawners unused for [`IDLE`] that no run holds, their mailboxes closed.
    fn end_idle(&mut self, now: Instant) -> Vec<Entry> {
        let idle: Vec<Key> = self
            .by_key
            .iter()
            .filter(|(_, e)| {
                now.duration_since(e.used) >= IDLE && Arc::strong_count(&e.spawner) == 1
            })
            .map(|(k, _)| k.clone())
            .collect();
        idle.iter()
            .filter_map(|k| self.by_key.remove(k))
            .inspect(|e| e.spawner.requests.close())
            .collect()
    }
}

/// Waits for the threads of `ended` spawners (they do what was queued, then end); then their
/// `TMPDIR` parents go, once no run holds them.
fn join(ended: Vec<Entry>) {
    for t in ended.into_iter().flat_map(|e| e.threads) {
        if t.join().is_err() {
            log::warn!("a spawner thread panicked");
        }
    }
}

/// Makes the spawner of `key`: opens its places (they must still be those of the key), builds
/// its ruleset with its `TMPDIR` parent, and starts its thread, which enters the ruleset and
/// says so before it takes requests. `None` (logged) if any of this fails.
fn make(
    key: &Key,
    named: &[(std::path::PathBuf, Rights)],
) -> Option<(Spawner, Vec<JoinHandle<()>>)> {
    let opened: Vec<Option<OwnedFd>> = named.iter().map(|(p, _)| open_path(p).ok()).collect();
    let same = opened.iter().zip(&key.places).all(|(fd, (_, id))| {
        let now = fd.as_ref().and_then(|fd| {
            let m = std::fs::File::from(fd.try_clone().ok()?).metadata().ok()?;
            Some((m.dev(), m.ino()))
        });
        now == *id
    });
    if !same {
        // A place changed since the key was read: this run gets a ruleset of its own.
        return None;
    }
    let tmp = match key.private_tmp {
        true => Some(Pool::make()?),
        false => None,
    };
    let tmp_fd = match &tmp {
        Some(t) => Some(open_path(t.parent()).ok()?),
        None => None,
    };
    let rules = opened
        .iter()
        .zip(&key.places)
        .filter_map(|(fd, (rights, _))| Some((fd.as_ref()?.as_fd(), *rights)))
        .chain(tmp_fd.as_ref().map(|fd| (fd.as_fd(), Rights::Write)));
    let ruleset = match build(key.abi, &key.network, rules) {
        Ok(fd) => fd,
        Err(e) => {
            log::debug!("no spawner for these rules: {e}");
            return None;
        }
    };
    let requests = Arc::new(Mailbox::default());
    let ruleset = Arc::new(ruleset);
    let mut threads = Vec::new();
    for _ in 0..threads_per_spawner() {
        match start(Arc::clone(&ruleset), Arc::clone(&requests)) {
            Some(t) => threads.push(t),
            None => break,
        }
    }
    if threads.is_empty() {
        return None;
    }
    Some((Spawner { requests, tmp }, threads))
}

/// Threads per spawner: one per CPU the server may run on, at most [`MAX_THREADS`] (a
/// `posix_spawn` holds its thread until the program has been loaded, and calls in flight
/// should not wait for each other's).
fn threads_per_spawner() -> usize {
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, MAX_THREADS)
}

/// Starts a spawner thread on `ruleset`; returns it once it has entered the ruleset
/// (`None`, logged, if it could not be started or could not enter it).
fn start(ruleset: Arc<OwnedFd>, requests: Arc<Mailbox<Request>>) -> Option<JoinHandle<()>> {
    let ready = Arc::new(Mailbox::<io::Result<()>>::default());
    let said = Closing(Arc::clone(&ready));
    let thread = std::thread::Builder::new()
        .name("stdmcp-spawner".into())
        .stack_size(256 * 1024)
        .spawn(move || {
            let entered = restrict(ruleset.as_raw_fd());
            drop(ruleset);
            let ok = entered.is_ok();
            said.send(entered);
            drop(said);
            if ok {
                serve(&requests);
            }
        });
    let thread = match thread {
        Ok(t) => t,
        Err(e) => {
            log::debug!("no spawner thread: {e}");
            return None;
        }
    };
    match ready.recv() {
        Some(Ok(())) => Some(thread),
        Some(Err(e)) => {
            log::warn!("a spawner could not enter its Landlock ruleset: {e}");
            let _ = thread.join();
            None
        }
        None => {
            let _ = thread.join();
            None
        }
    }
}

/// A spawner thread's life: each request spawned and answered, nothing else, until the
/// mailbox is closed and empty. If it ends otherwise (a panic), the requests still queued are
/// answered with their mailbox's close, and no more are taken.
fn serve(requests: &Mailbox<Request>) {
    struct Drain<'a>(&'a Mailbox<Request>);
    impl Drop for Drain<'_> {
        fn drop(&mut self) {
            self.0.close();
            while self.0.recv().is_some() {}
        }
    }
    let _drain = Drain(requests);
    while let Some(Request { mut cmd, reply }) = requests.recv() {
        let spawned = cmd.spawn();
        // The command's own descriptors (a pipe's other end given to the child) go now.
        drop(cmd);
        reply.send(spawned);
    }
}

/// Ends every spawner (their queued spawns are served first) and waits for their threads; no
/// spawner is made afterwards. For the server's end, once its calls are over.
pub(crate) fn stop() {
    let entries: Vec<Entry> = {
        let mut guard = crate::sync::lock(&REGISTRY);
        let reg = guard.get_or_insert_with(Registry::default);
        reg.stopped = true;
        reg.by_key.drain().map(|(_, e)| e).collect()
    };
    for e in &entries {
        e.spawner.requests.close();
    }
    join(entries);
}
