//! Cancellation token shared by the dispatcher and a tool thread.
//!
//! A [`CancelToken`] is cheap to clone; all clones share one state. The first
//! [`CancelToken::cancel`] sets the flag and the reason, wakes every thread in
//! [`CancelToken::wait_until`] and runs each registered hook exactly once.
//! Hooks run outside of the token's lock, so a hook may itself use the token
//! (check it, register another hook, drop its own guard).
//!
//! In a server, hooks run on the thread that cancels, and never under the server's own
//! lock: the reader thread for the client's `notifications/cancelled`, the timer thread when
//! the call's deadline passes, the main thread at shutdown. A hook may therefore report
//! progress or log through the call's `Ctx` or `Reporter`; it should be quick, since the
//! reader handles no further frames until the hooks it fires have returned.

use crate::sync;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, ThreadId};
use std::time::Instant;

/// Why a token was cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelReason {
    /// The client sent `notifications/cancelled`.
    Client,
    /// The call's deadline passed.
    Deadline,
    /// The server is shutting down.
    Shutdown,
}

type Hook = Box<dyn Fn() + Send>;

#[derive(Default)]
struct State {
    reason: Option<CancelReason>,
    hooks: Vec<(u64, Hook)>,
    /// The hook `cancel()` is running right now, and on which thread.
    running: Option<(u64, ThreadId)>,
}

#[derive(Default)]
struct Inner {
    flag: AtomicBool,
    next_id: AtomicU64,
    state: Mutex<State>,
    /// Signalled when the token is cancelled and whenever a hook finishes.
    cond: Condvar,
}

/// Cancellation token shared by the dispatcher and a tool thread.
#[derive(Clone, Default)]
pub struct CancelToken(Arc<Inner>);

impl fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelToken")
            .field("reason", &self.reason())
            .finish()
    }
}

impl CancelToken {
    /// A fresh, not cancelled token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancel the token. Idempotent: only the first call sets the reason and
    /// runs the hooks (once each, on this thread, outside of any lock).
    pub fn cancel(&self, reason: CancelReason) {
        {
            let mut st = sync::lock(&self.0.state);
            if st.reason.is_some() {
                return;
            }
            st.reason = Some(reason);
            self.0.flag.store(true, Ordering::Release);
        }
        self.0.cond.notify_all();

        let me = thread::current().id();
        loop {
            let hook = {
                let mut st = sync::lock(&self.0.state);
                match st.hooks.pop() {
                    Some((id, hook)) => {
                        st.running = Some((id, me));
                        hook
                    }
                    None => break,
                }
            };
            // A panicking hook must not leave `running` set (that would make
            // the matching guard's drop wait forever) nor skip other hooks.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&hook));
            drop(hook);
            sync::lock(&self.0.state).running = None;
            self.0.cond.notify_all();
            if result.is_err() {
                log::error!("a cancellation hook panicked");
            }
        }
    }

    /// True once [`cancel`](Self::cancel) was called (Acquire load).
    pub fn is_cancelled(&self) -> bool {
        self.0.flag.load(Ordering::Acquire)
    }

    /// The reason given to the first `cancel`, if any.
    pub fn reason(&self) -> Option<CancelReason> {
        sync::lock(&self.0.state).reason
    }

    /// Register a hook run once when cancelled (immediately, on this thread,
    /// if already cancelled). Dropping the guard unregisters it; after drop
    /// returns, the hook is guaranteed not to be running or to run later.
    /// (Exception: a hook that drops its own guard does not wait for itself.)
    pub fn on_cancel(&self, hook: impl Fn() + Send + 'static) -> HookGuard {
        {
            let mut st = sync::lock(&self.0.state);
            if st.reason.is_none() {
                let id = self.0.next_id.fetch_add(1, Ordering::Relaxed);
                st.hooks.push((id, Box::new(hook)));
                return HookGuard {
                    inner: Some(Arc::clone(&self.0)),
                    id,
                };
            }
        }
        hook();
        HookGuard { inner: None, id: 0 }
    }

    /// Block until cancelled or `deadline`; returns true if cancelled.
    pub fn wait_until(&self, deadline: Instant) -> bool {
        let mut st = sync::lock(&self.0.state);
        loop {
            if st.reason.is_some() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            st = sync::wait_timeout(&self.0.cond, st, deadline - now).0;
        }
    }
}

/// Unregisters its hook when dropped (see [`CancelToken::on_cancel`]).
#[must_use = "dropping the guard unregisters the hook"]
pub struct HookGuard {
    inner: Option<Arc<Inner>>,
    id: u64,
}

impl fmt::Debug for HookGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookGuard").field("id", &self.id).finish()
    }
}

impl Drop for HookGuard {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        let me = thread::current().id();
        let mut st = sync::lock(&inner.state);
        if let Some(pos) = st.hooks.iter().position(|(id, _)| *id == self.id) {
            let (_, hook) = st.hooks.swap_remove(pos);
            drop(st);
            drop(hook);
            return;
        }
        // Not registered any more: either it already ran, or `cancel` is
        // running it right now. Wait for the latter, unless we *are* that hook.
        while matches!(st.running, Some((id, t)) if id == self.id && t != me) {
            st = sync::wait(&inner.cond, st);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;
    use std::time::Duration;

    fn counter() -> (Arc<AtomicUsize>, impl Fn() + Send + 'static) {
        let n = Arc::new(AtomicUsize::new(0));
        let m = Arc::clone(&n);
        (n, move || {
            m.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[test]
    fn cancel_runs_hooks_once_and_first_reason_wins() {
        let t = CancelToken::new();
        assert!(!t.is_cancelled());
        assert_eq!(t.reason(), None);
        let (n, hook) = counter();
        let _g = t.on_cancel(hook);
        let clone = t.clone();
        clone.cancel(CancelReason::Deadline);
        t.cancel(CancelReason::Client);
        assert!(t.is_cancelled());
        assert_eq!(t.reason(), Some(CancelReason::Deadline));
        assert_eq!(n.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn hook_registered_after_cancel_runs_immediately() {
        let t = CancelToken::new();
        t.cancel(CancelReason::Shutdown);
        let (n, hook) = counter();
        let g = t.on_cancel(hook);
        assert_eq!(n.load(Ordering::SeqCst), 1);
        drop(g);
        assert_eq!(n.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn dropped_guard_unregisters() {
        let t = CancelToken::new();
        let (n, hook) = counter();
        let (n2, hook2) = counter();
        drop(t.on_cancel(hook));
        let _keep = t.on_cancel(hook2);
        t.cancel(CancelReason::Client);
        assert_eq!(n.load(Ordering::SeqCst), 0);
        assert_eq!(n2.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn wait_until_times_out_and_wakes_on_cancel() {
        let t = CancelToken::new();
        let start = Instant::now();
        assert!(!t.wait_until(start + Duration::from_millis(30)));
        assert!(start.elapsed() >= Duration::from_millis(30));

        let t2 = t.clone();
        let (tx, rx) = mpsc::channel();
        let waiter = thread::spawn(move || {
            tx.send(()).ok();
            t2.wait_until(Instant::now() + Duration::from_secs(30))
        });
        rx.recv().ok();
        let start = Instant::now();
        t.cancel(CancelReason::Client);
        assert_eq!(waiter.join().ok(), Some(true));
        assert!(start.elapsed() < Duration::from_secs(5));
        // Already cancelled: returns at once.
        assert!(t.wait_until(Instant::now() + Duration::from_secs(30)));
    }

    #[test]
    fn guard_drop_waits_for_running_hook() {
        let t = CancelToken::new();
        let (entered_tx, entered_rx) = mpsc::channel::<()>();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Mutex::new(release_rx);
        let finished = Arc::new(AtomicBool::new(false));
        let f = Arc::clone(&finished);
        let guard = t.on_cancel(move || {
            entered_tx.send(()).ok();
            release_rx.lock().map(|rx| rx.recv().ok()).ok();
            f.store(true, Ordering::SeqCst);
        });
        let t2 = t.clone();
        let canceller = thread::spawn(move || t2.cancel(CancelReason::Client));
        entered_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("hook started");
        let releaser = thread::spawn(move || {
            thread::sleep(Duration::from_millis(50));
            release_tx.send(()).ok();
        });
        drop(guard); // must block until the hook returned
        assert!(finished.load(Ordering::SeqCst));
        canceller.join().expect("canceller");
        releaser.join().expect("releaser");
    }

    #[test]
    fn hook_may_drop_its_own_guard_and_use_the_token() {
        let t = CancelToken::new();
        let slot: Arc<Mutex<Option<HookGuard>>> = Arc::new(Mutex::new(None));
        let s = Arc::clone(&slot);
        let t2 = t.clone();
        let (n, inner_hook) = counter();
        let inner_hook = Arc::new(inner_hook);
        let guard = t.on_cancel(move || {
            assert!(t2.is_cancelled());
            let h = Arc::clone(&inner_hook);
            drop(t2.on_cancel(move || h())); // runs immediately
            let g = s.lock().ok().and_then(|mut g| g.take());
            drop(g);
        });
        *slot.lock().expect("lock") = Some(guard);
        t.cancel(CancelReason::Client);
        assert_eq!(n.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn panicking_hook_does_not_stop_others() {
        let t = CancelToken::new();
        let (n, hook) = counter();
        let _a = t.on_cancel(hook);
        let b = t.on_cancel(|| panic!("boom"));
        let (n2, hook2) = counter();
        let _c = t.on_cancel(hook2);
        t.cancel(CancelReason::Client);
        drop(b);
        assert_eq!(n.load(Ordering::SeqCst) + n2.load(Ordering::SeqCst), 2);
    }
}
