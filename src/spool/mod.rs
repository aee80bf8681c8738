//! The output spool: every manifest call's complete stdout and stderr, kept in files so that
//! a result whose text was cut (head and tail kept) loses nothing (README "Output spool").
//!
//! The runner ([`stdmcp::process`]) appends each chunk of output to the call's
//! [`Entry`] as it arrives; nothing is held in memory. The files live in one private
//! directory, `spool/` in the server's private directory ([`stdmcp::process::private_dir`],
//! `$TMPDIR/stdmcp-<random>`, mode 0700), created on the first write and
//! removed when serving ends (and by the watchdog, the runtime's `process/watchdog.rs`, if the server is
//! killed). All calls together keep at most a cap of bytes (`STDMCP_SPOOL_MAX_BYTES`,
//! default [`DEFAULT_MAX_BYTES`]): when a write would pass it, the oldest finished calls are
//! evicted, whole; a call still running is never evicted, and when only running calls are
//! left the writing stream keeps what it has (a prefix) and is marked cut. A full disk
//! (`ENOSPC`, `EDQUOT`) evicts the same way, one finished call at a time, and the write is
//! retried. When the directory cannot be made because the disk is full or descriptors ran out
//! ([`stdmcp::process::private_dir::passing`]), nothing of that call is kept, and the next
//! call tries again (once per call started); any other reason turns the spool off until the
//! server restarts. Either way the cut note says which ([`Entry::why_not_kept`]).

mod find;
mod grep;
mod literal;
mod slice;
pub(crate) mod tool;

pub(crate) use grep::{grep, scan_time, Ended};
pub(crate) use slice::{read_slice, tail_slice, Slice, Stop, DEFAULT_LIMIT, MAX_LIMIT};

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use stdmcp::sync::lock;

use stdmcp::beneath::Dir;
use stdmcp::process::Stream;

/// Default cap on the bytes all kept outputs take together (1 GiB).
pub(crate) const DEFAULT_MAX_BYTES: u64 = 1 << 30;
/// The environment variable that overrides the cap (`0` turns the spool off).
pub(crate) const MAX_BYTES_ENV: &str = "STDMCP_SPOOL_MAX_BYTES";
/// Ids of evicted calls remembered (to say "evicted" rather than "unknown").
const REMEMBER_EVICTED: usize = 4096;
/// Calls kept at once, whatever their size: beyond it the oldest finished call is evicted.
pub(crate) const MAX_CALLS: usize = 4096;

const STREAMS: [Stream; 2] = [Stream::Stdout, Stream::Stderr];

fn index(s: Stream) -> usize {
    match s {
        Stream::Stdout => 0,
        Stream::Stderr => 1,
    }
}

/// The name of a stream as the `output` tool and the URIs spell it.
pub(crate) fn stream_name(s: Stream) -> &'static str {
    match s {
        Stream::Stdout => "stdout",
        Stream::Stderr => "stderr",
    }
}

/// A call id is plain (`<pid>-<hex>-<n>`): anything else never names a spool file.
pub(crate) fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// One kept call.
#[derive(Debug)]
struct Record {
    id: String,
    /// Bytes kept of each stream.
    kept: [u64; 2],
    /// The stream stopped being kept before it ended (cap reached, or a write failed).
    cut: [bool; 2],
    /// Its output may still grow: never evicted.
    running: bool,
}

#[derive(Debug, Default)]
struct State {
    /// Oldest first.
    calls: VecDeque<Record>,
    total: u64,
    evicted: VecDeque<String>,
    /// The directory exists (created on the first write).
    created: bool,
    /// It could not be created, for a reason that does not pass: nothing is kept.
    broken: bool,
    /// It could not be created for a passing reason (a full disk, no descriptor left): not
    /// tried again until the next call starts.
    failed: bool,
}

/// A spool: a directory of kept outputs under a size cap.
#[derive(Debug)]
pub(crate) struct Spool {
    /// Set at the first write for the server's spool (`spool/` in the server's private
    /// directory, made then): a server that never keeps an output makes none, and one that
    /// cannot make it (a full disk) sets nothing and tries again at the next call.
    dir: OnceLock<PathBuf>,
    cap: u64,
    state: Mutex<State>,
}

/// Why a call's output cannot be read from the spool.
#[derive(Debug)]
pub(crate) enum NotKept {
    /// Evicted to make room for newer calls.
    Evicted {
        /// The call.
        id: String,
        /// The spool's size in bytes.
        cap: u64,
    },
    /// Not a call of this server run, or evicted long ago.
    Unknown {
        /// The call.
        id: String,
    },
    /// Kept, but its file cannot be opened.
    Unreadable {
        /// The call.
        id: String,
        /// Why.
        error: io::Error,
    },
}

impl std::fmt::Display for NotKept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotKept::Evicted { id, cap } => write!(
                f,
                "the output of call {id} was evicted from the spool to make room for newer \
                 calls (the spool keeps at most {cap} bytes in all; {MAX_BYTES_ENV} raises it)"
            ),
            NotKept::Unknown { id } => write!(
                f,
                "no kept output for call {id}: not a call of this server run, or evicted long ago"
            ),
            NotKept::Unreadable { id, error } => {
                write!(f, "cannot read the kept output of call {id}: {error}")
            }
        }
    }
}

impl std::error::Error for NotKept {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NotKept::Unreadable { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// What the spool knows about a call's stream.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Kept {
    /// Bytes kept.
    pub bytes: u64,
    /// Only a prefix was kept.
    pub cut: bool,
    /// The call is still running (more may come).
    pub running: bool,
}

impl Spool {
    /// A spool in `dir` (created on the first write, which fails if it already exists)
    /// keeping at most `cap` bytes.
    #[cfg(test)]
    pub(crate) fn new(dir: PathBuf, cap: u64) -> Spool {
        Spool {
            dir: OnceLock::from(dir),
            cap,
            state: Mutex::new(State::default()),
        }
    }

    /// The server's spool (`spool/` in the private directory), capped by
    /// [`MAX_BYTES_ENV`] or [`DEFAULT_MAX_BYTES`].
    pub(crate) fn global() -> &'static Arc<Spool> {
        static SPOOL: OnceLock<Arc<Spool>> = OnceLock::new();
        SPOOL.get_or_init(|| {
            let cap = match std::env::var(MAX_BYTES_ENV) {
                Ok(v) => v.trim().parse().unwrap_or_else(|_| {
                    log::warn!("{MAX_BYTES_ENV}={v} ignored (a number of bytes)");
                    DEFAULT_MAX_BYTES
                }),
                Err(_) => DEFAULT_MAX_BYTES,
            };
            Arc::new(Spool {
                dir: OnceLock::new(),
                cap,
                state: Mutex::new(State::default()),
            })
        })
    }

    /// Starts keeping call `id`'s output; `None` when the spool is off or `id` is not plain.
    pub(crate) fn begin(self: &Arc<Self>, id: &str) -> Option<Entry> {
        if self.cap == 0 || !valid_id(id) {
            return None;
        }
        let mut st = lock(&self.state);
        // A call start may try once more to make a directory a full disk kept from being made.
        st.failed = false;
        while st.calls.len() >= MAX_CALLS && self.evict_oldest(&mut st) {}
        st.calls.push_back(Record {
            id: id.to_owned(),
            kept: [0; 2],
            cut: [false; 2],
            running: true,
        });
        drop(st);
        Some(Entry {
            inner: Arc::new(EntryInner {
                spool: Arc::clone(self),
                id: id.to_owned(),
                files: [Mutex::new(None), Mutex::new(None)],
            }),
        })
    }

    fn file(&self, id: &str, s: Stream) -> Option<PathBuf> {
        Some(self.dir.get()?.join(format!("{id}.{}", stream_name(s))))
    }

    /// What is kept of call `id`'s stream `s`, or why nothing is.
    pub(crate) fn kept(&self, id: &str, s: Stream) -> Result<Kept, NotKept> {
        let st = lock(&self.state);
        if let Some(r) = st.calls.iter().find(|r| r.id == id) {
            return Ok(Kept {
                bytes: r.kept[index(s)],
                cut: r.cut[index(s)],
                running: r.running,
            });
        }
        let id = id.to_owned();
        if st.evicted.iter().any(|e| *e == id) {
            Err(NotKept::Evicted { id, cap: self.cap })
        } else {
            Err(NotKept::Unknown { id })
        }
    }

    /// Opens call `id`'s kept stream for reading (`None`: nothing was written to it yet).
    /// Through descriptors ([`stdmcp::beneath`]): the directory must still be this user's
    /// private one, and the file a regular file in it (a symlink or FIFO put in its place by
    /// a program running as the same user is refused, without blocking).
    pub(crate) fn open(&self, id: &str, s: Stream) -> Result<(Option<File>, Kept), NotKept> {
        let kept = self.kept(id, s)?;
        let name = format!("{id}.{}", stream_name(s));
        let opened = match self.dir.get() {
            Some(dir) => Dir::open_private(dir).and_then(|d| d.file(Path::new(&name))),
            None => Err(io::ErrorKind::NotFound.into()),
        };
        match opened {
            Ok((f, _)) => Ok((Some(f), kept)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Evicted between the two looks, or never written.
                self.kept(id, s).map(|k| (None, k))
            }
            Err(error) => Err(NotKept::Unreadable {
                id: id.to_owned(),
                error,
            }),
        }
    }

    /// Reserves room for `n` more bytes of `id`'s stream `s`: how many may be written.
    fn reserve(&self, id: &str, s: Stream, n: u64) -> u64 {
        let mut st = lock(&self.state);
        let i = index(s);
        // A call forgotten by `clear` (a late write after serving ended) recreates nothing.
        let cut = st
            .calls
            .iter()
            .find(|r| r.id == id)
            .is_none_or(|r| r.cut[i]);
        if cut {
            return 0;
        }
        if !self.ensure_dir(&mut st) {
            // What is kept stays a prefix: nothing of this stream, even once a later call
            // made the directory.
            if let Some(r) = st.calls.iter_mut().find(|r| r.id == id) {
                r.cut[i] = true;
            }
            return 0;
        }
        while st.total + n > self.cap && self.evict_oldest(&mut st) {}
        let allowed = n.min(self.cap.saturating_sub(st.total));
        st.total += allowed;
        if let Some(r) = st.calls.iter_mut().find(|r| r.id == id) {
            r.kept[i] += allowed;
            r.cut[i] = allowed < n;
        }
        allowed
    }

    /// Creates the directory on first use; false if it cannot be (then nothing is kept: for
    /// good, or until the next call starts if the reason may pass).
    fn ensure_dir(&self, st: &mut State) -> bool {
        if st.created {
            return true;
        }
        if st.broken || st.failed {
            return false;
        }
        let made = self.dir_path().and_then(|dir| {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(dir)
                .map_err(|e| (Some(dir), e))
        });
        match made {
            Ok(()) => st.created = true,
            Err((dir, e)) => {
                let passing = stdmcp::process::private_dir::passing(&e);
                let dir = dir.map_or_else(
                    || "in the private directory".into(),
                    |d| d.display().to_string(),
                );
                if passing {
                    log::warn!(
                        "cannot create the output spool {dir} ({e}): this call's complete \
                         output is not kept; the next call tries again"
                    );
                    st.failed = true;
                } else {
                    log::warn!(
                        "cannot create the output spool {dir} ({e}): complete outputs are not kept"
                    );
                    st.broken = true;
                }
            }
        }
        st.created
    }

    /// The directory's path, set now if needed (making the server's private directory).
    fn dir_path(&self) -> Result<&Path, (Option<&Path>, io::Error)> {
        if let Some(d) = self.dir.get() {
            return Ok(d);
        }
        let private = stdmcp::process::private_dir::try_get().map_err(|e| (None, e))?;
        let dir = self.dir.get_or_init(|| private.join("spool"));
        // The watchdog learns the private directory's name now if it did not know it yet.
        stdmcp::process::start_watchdog();
        Ok(dir)
    }

    /// No directory now: nothing is kept (for good, or until a later call makes it).
    pub(crate) fn broken(&self) -> bool {
        let st = lock(&self.state);
        !st.created && (st.broken || st.failed)
    }

    /// Why nothing is kept, when [`Spool::broken`]: said in a cut note, after "the cut part
    /// is lost because".
    fn why_not_kept(&self) -> &'static str {
        if lock(&self.state).broken {
            "the output spool could not be created (the server's log says why)"
        } else {
            "the output spool could not be created this time (the disk is full, or no file \
             descriptor was left; the server's log says why, and a later call tries again)"
        }
    }

    /// Evicts the oldest finished call; false when every kept call is still running.
    fn evict_oldest(&self, st: &mut State) -> bool {
        let Some(pos) = st.calls.iter().position(|r| !r.running) else {
            return false;
        };
        if let Some(old) = st.calls.remove(pos) {
            self.evict(st, old);
        }
        true
    }

    fn evict(&self, st: &mut State, old: Record) {
        st.total -= old.kept[0] + old.kept[1];
        for s in STREAMS {
            if let Some(f) = self.file(&old.id, s) {
                let _ = std::fs::remove_file(f);
            }
        }
        log::debug!("spool: evicted call {}", old.id);
        st.evicted.push_back(old.id);
        if st.evicted.len() > REMEMBER_EVICTED {
            st.evicted.pop_front();
        }
    }

    /// Evicts the oldest finished call to make room on a full disk; false when none is left.
    fn evict_one_finished(&self) -> bool {
        let mut st = lock(&self.state);
        let evicted = self.evict_oldest(&mut st);
        if evicted {
            log::info!("spool: the disk is full; evicted the oldest finished call");
        }
        evicted
    }

    /// `n` reserved bytes were not written after all: the stream is cut there.
    fn unreserve(&self, id: &str, s: Stream, n: u64) {
        let mut st = lock(&self.state);
        let i = index(s);
        let Some(r) = st.calls.iter_mut().find(|r| r.id == id) else {
            return;
        };
        let n = n.min(r.kept[i]);
        r.kept[i] -= n;
        r.cut[i] = true;
        st.total -= n;
    }

    fn finish(&self, id: &str) {
        if let Some(r) = lock(&self.state).calls.iter_mut().find(|r| r.id == id) {
            r.running = false;
        }
    }

    /// Removes the directory and forgets every call (when serving ends); a later call
    /// starts a fresh directory.
    pub(crate) fn clear(&self) {
        let mut st = lock(&self.state);
        if let (true, Some(dir)) = (st.created, self.dir.get()) {
            if let Err(e) = std::fs::remove_dir_all(dir) {
                log::debug!("removing {}: {e}", dir.display());
            }
        }
        let evicted = std::mem::take(&mut st.evicted);
        let calls = std::mem::take(&mut st.calls);
        *st = State {
            evicted,
            ..State::default()
        };
        for r in calls {
            st.evicted.push_back(r.id);
        }
    }

    /// The directory (which may not exist yet); `None` before the server's spool made it.
    #[cfg(test)]
    pub(crate) fn dir(&self) -> Option<&Path> {
        self.dir.get().map(PathBuf::as_path)
    }
}

/// Said in a cut note when a call has no spool entry: the spool is turned off.
pub(crate) const TURNED_OFF: &str = "the output spool is turned off (STDMCP_SPOOL_MAX_BYTES=0)";

/// A call's handle on the spool; when the last clone is
/// dropped the call counts as finished (evictable).
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    inner: Arc<EntryInner>,
}

#[derive(Debug)]
struct EntryInner {
    spool: Arc<Spool>,
    id: String,
    files: [Mutex<Option<File>>; 2],
}

impl EntryInner {
    /// Appends `data` to stream `s`'s file, creating it on the first write.
    fn append(&self, file: &mut Option<File>, s: Stream, data: &[u8]) -> io::Result<()> {
        if let Some(f) = file {
            return f.write_all(data);
        }
        // Through the directory's descriptor: still this user's private directory, and a new
        // file (never through a symlink or into a FIFO put there).
        let name = format!("{}.{}", self.id, stream_name(s));
        let dir = self.spool.dir.get().ok_or(io::ErrorKind::NotFound)?;
        let mut f = Dir::open_private(dir)?.create(Path::new(&name), 0o600)?;
        let r = f.write_all(data);
        *file = Some(f);
        r
    }
}

/// The length of a stream's file (0 before it exists).
fn on_disk(file: &Option<File>) -> u64 {
    file.as_ref()
        .and_then(|f| f.metadata().ok())
        .map_or(0, |m| m.len())
}

/// The disk (or the user's quota) is full: evicting old outputs may make room.
fn is_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
}

impl Drop for EntryInner {
    fn drop(&mut self) {
        self.spool.finish(&self.id);
    }
}

/// The runner's sink for the call's output ([`stdmcp::process::RunSpec::sink`]).
impl stdmcp::process::OutputSink for Entry {
    fn write(&self, s: Stream, data: &[u8]) {
        Entry::write(self, s, data);
    }
}

impl Entry {
    /// Appends `data` to stream `s` (as much as the cap allows).
    pub(crate) fn write(&self, s: Stream, data: &[u8]) {
        let inner = &*self.inner;
        let n = inner.spool.reserve(&inner.id, s, data.len() as u64);
        if n == 0 {
            return;
        }
        let mut file = lock(&inner.files[index(s)]);
        let data = &data[..n as usize];
        let mut written = inner.append(&mut file, s, data);
        // A full disk (or quota): the oldest finished calls give way, one at a time, until
        // the rest fits or none is left (README "Output spool").
        if written.as_ref().is_err_and(is_full) {
            // What the stream had on disk before this write (its count includes `n` now).
            let before = inner.spool.kept(&inner.id, s).map_or(0, |k| k.bytes);
            let before = before.saturating_sub(n);
            while written.as_ref().is_err_and(is_full) && inner.spool.evict_one_finished() {
                let done = on_disk(&file).saturating_sub(before).min(n) as usize;
                written = inner.append(&mut file, s, &data[done..]);
            }
        }
        if let Err(e) = written {
            log::warn!(
                "spool: writing {} of call {}: {e}",
                stream_name(s),
                inner.id
            );
            // What reached the file is unknown: keep nothing more, count what is there.
            let on_disk = on_disk(&file);
            drop(file);
            let kept = inner.spool.kept(&inner.id, s).map_or(0, |k| k.bytes);
            inner
                .spool
                .unreserve(&inner.id, s, kept.saturating_sub(on_disk));
        }
    }

    /// The spool's directory could not be created: nothing of this call is kept.
    pub(crate) fn broken(&self) -> bool {
        self.inner.spool.broken()
    }

    /// Why nothing is kept when [`Entry::broken`]: could not be created for good, or this
    /// time (a full disk; a later call tries again). For a cut note.
    pub(crate) fn why_not_kept(&self) -> &'static str {
        self.inner.spool.why_not_kept()
    }

    /// What is kept of stream `s` so far.
    pub(crate) fn kept(&self, s: Stream) -> Kept {
        self.inner.spool.kept(&self.inner.id, s).unwrap_or(Kept {
            bytes: 0,
            cut: true,
            running: true,
        })
    }
}

#[cfg(test)]
mod tests;
