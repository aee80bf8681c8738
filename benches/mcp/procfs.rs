//! Linux /proc helpers: process trees, resident memory, child lookup, liveness, and a
//! sampler thread that records the peak resident memory of a process tree.

use std::collections::HashMap;
use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// `(pid, ppid, state, comm)` of one process, from `/proc/<pid>/stat`.
fn stat(pid: u32) -> Option<(u32, char, String)> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // comm is in parentheses and may itself contain spaces and parentheses.
    let open = s.find('(')?;
    let close = s.rfind(')')?;
    let comm = s.get(open + 1..close)?.to_owned();
    let mut rest = s.get(close + 1..)?.split_ascii_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((ppid, state, comm))
}

/// Every process: pid → (ppid, comm).
fn all_processes() -> Vec<(u32, u32, String)> {
    let mut out = Vec::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Some((ppid, _, comm)) = stat(pid) {
            out.push((pid, ppid, comm));
        }
    }
    out
}

/// `root` and all its descendants that exist now.
pub(crate) fn tree(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (pid, ppid, _) in all_processes() {
        children.entry(ppid).or_default().push(pid);
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        if let Some(kids) = children.get(&out[i]) {
            out.extend(kids.iter().copied());
        }
        i += 1;
    }
    out
}

/// Direct children of `parent` whose command name is `comm`.
pub(crate) fn children_named(parent: u32, comm: &str) -> Vec<u32> {
    all_processes()
        .into_iter()
        .filter(|(_, ppid, c)| *ppid == parent && c == comm)
        .map(|(pid, _, _)| pid)
        .collect()
}

/// True while `pid` exists and is not a zombie (or dead).
pub(crate) fn alive(pid: u32) -> bool {
    matches!(stat(pid), Some((_, state, _)) if state != 'Z' && state != 'X')
}

/// A `KEY: N kB` field of `/proc/<pid>/status` (0 for a zombie or a vanished process).
fn status_kib(pid: u32, key: &str) -> u64 {
    let Ok(s) = fs::read_to_string(format!("/proc/{pid}/status")) else {
        return 0;
    };
    s.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// VmRSS of one process in KiB.
pub(crate) fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS")
}

/// RssAnon (heap, stacks: memory of its own, no shared library or binary pages), KiB.
pub(crate) fn rss_anon_kib(pid: u32) -> u64 {
    status_kib(pid, "RssAnon")
}

/// Sum of VmRSS over `root` and its descendants, in KiB.
pub(crate) fn tree_rss_kib(root: u32) -> u64 {
    tree(root).into_iter().map(rss_kib).sum()
}

/// Sum of RssAnon over `root` and its descendants, in KiB.
pub(crate) fn tree_rss_anon_kib(root: u32) -> u64 {
    tree(root).into_iter().map(rss_anon_kib).sum()
}

/// What a [`Sampler`] saw.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Peak {
    /// Highest tree VmRSS seen, KiB.
    pub peak_kib: u64,
    /// Number of samples taken.
    pub samples: u64,
    /// Most processes seen in the tree at once.
    pub max_procs: usize,
}

/// Samples the tree's VmRSS every `every` on its own thread; the tree itself (which
/// processes) is rescanned every `rescan`, since scanning all of /proc costs far more than
/// reading a few status files.
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Peak>>,
}

impl Sampler {
    pub(crate) fn start(root: u32, every: Duration, rescan: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::Builder::new()
            .name("rss-sampler".into())
            .spawn(move || {
                let mut peak = Peak::default();
                let mut pids = tree(root);
                let mut scanned = Instant::now();
                loop {
                    let done = flag.load(Ordering::Relaxed);
                    if scanned.elapsed() >= rescan {
                        pids = tree(root);
                        scanned = Instant::now();
                    }
                    let rss: u64 = pids.iter().map(|&p| rss_kib(p)).sum();
                    peak.peak_kib = peak.peak_kib.max(rss);
                    peak.max_procs = peak.max_procs.max(pids.len());
                    peak.samples += 1;
                    if done {
                        return peak;
                    }
                    thread::sleep(every);
                }
            })
            .ok();
        Sampler { stop, handle }
    }

    /// Stops the thread (after one last sample) and returns what it saw.
    pub(crate) fn stop(mut self) -> Peak {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Apparent size in bytes of a file, or of every regular file under a directory (like
/// `du -sb`, symlinks counted as links, not followed).
pub(crate) fn disk_bytes(path: &std::path::Path) -> std::io::Result<u64> {
    let meta = fs::symlink_metadata(path)?;
    if !meta.is_dir() {
        return Ok(meta.len());
    }
    let mut total = meta.len();
    for e in fs::read_dir(path)? {
        let e = e?;
        total += disk_bytes(&e.path()).unwrap_or(0);
    }
    Ok(total)
}
