//! The threads of a serving process and its shutdown sequence (see the crate docs' diagram).

use std::io::{ErrorKind, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::dispatch::{Event, Shared};
use super::outbox::{outbox, Inbox};
use super::Server;
use crate::framing::FrameDecoder;
use crate::peer::{self, Peer};

const READ_CHUNK: usize = 64 * 1024;
/// Bytes the writer gathers from its queue before one write.
const WRITE_BATCH: usize = 1 << 20;
/// How long exit waits for the writer to flush what was queued.
const FLUSH_WAIT: Duration = Duration::from_secs(2);

pub(super) fn serve(
    server: Server,
    input: Box<dyn Read + Send>,
    output: Box<dyn Write + Send>,
    signals: bool,
) -> ExitCode {
    let options = server.options.clone();
    let on_shutdown = server.shutdown;
    let config = peer::Config {
        heartbeat: options.heartbeat,
        ..peer::Config::default()
    };
    let peer = Peer::server(Arc::new(server.catalog), config);
    let (out_tx, out_rx) = outbox();
    let (ev_tx, ev_rx) = crossbeam_channel::unbounded::<Event>();
    let (timer_tx, timer_rx) = crossbeam_channel::bounded::<()>(1);
    let shared = Arc::new(Shared::new(
        peer,
        out_tx.clone(),
        ev_tx.clone(),
        timer_tx,
        server.handlers,
        options.clone(),
    ));

    let (written_tx, written_rx) = crossbeam_channel::bounded::<()>(1);
    spawn("stdmcp-writer", {
        let ev = ev_tx.clone();
        move || writer(output, out_rx, ev, written_tx)
    });
    spawn("stdmcp-reader", {
        let shared = shared.clone();
        let ev = ev_tx.clone();
        let max = options.max_frame_len;
        move || reader(input, shared, ev, max)
    });
    spawn("stdmcp-timer", {
        let shared = shared.clone();
        move || timer(shared, timer_rx)
    });
    if signals {
        start_signals(ev_tx);
    }

    let code = shutdown(&shared, &ev_rx, &options);
    on_shutdown.into_iter().for_each(|f| f());
    shared.stop_timer();
    out_tx.send(Vec::new()); // tells the writer to flush and stop
    if written_rx.recv_timeout(FLUSH_WAIT).is_err() {
        log::warn!("the writer did not finish flushing in time");
    }
    code
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) {
    if let Err(e) = thread::Builder::new().name(name.into()).spawn(f) {
        // Nothing can be served without these threads.
        log::error!("cannot start thread {name}: {e}");
        std::process::abort();
    }
}

/// Waits for the end of the session and winds down: stdin EOF, SIGTERM and SIGHUP drain
/// calls in flight for `options.drain`, then cancel the rest and wait for them to stop;
/// SIGINT cancels everything at once and exits 130; a closed stdout cancels and exits 0.
fn shutdown(shared: &Arc<Shared>, events: &Receiver<Event>, options: &super::Options) -> ExitCode {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let first = loop {
        match events.recv() {
            Ok(Event::Idle) => continue,
            Ok(e) => break e,
            Err(_) => break Event::InputClosed,
        }
    };
    log::info!("shutting down: {first:?}");
    let immediate = match first {
        Event::Signal(SIGINT) => true,
        Event::OutputClosed => true,
        Event::Signal(s) if s != SIGTERM && s != SIGHUP => true,
        _ => false,
    };
    let mut interrupted = matches!(first, Event::Signal(SIGINT));
    if !immediate && shared.close(false) > 0 {
        let deadline = Instant::now() + options.drain;
        interrupted |= wait_idle(shared, events, deadline);
    }
    if shared.close(true) > 0 {
        let wait = if interrupted {
            Duration::from_millis(250)
        } else {
            options.stop_wait
        };
        interrupted |= wait_idle(shared, events, Instant::now() + wait);
    }
    if interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    }
}

/// Waits until no call is in flight or `deadline`; true if SIGINT arrived meanwhile.
fn wait_idle(shared: &Shared, events: &Receiver<Event>, deadline: Instant) -> bool {
    loop {
        if shared.calls_in_flight() == 0 {
            return false;
        }
        match events.recv_deadline(deadline) {
            Ok(Event::Signal(signal_hook::consts::SIGINT)) => return true,
            Ok(_) => continue,
            Err(_) => {
                log::warn!(
                    "{} calls still running at shutdown",
                    shared.calls_in_flight()
                );
                return false;
            }
        }
    }
}

fn reader(
    mut input: Box<dyn Read + Send>,
    shared: Arc<Shared>,
    events: Sender<Event>,
    max_frame_len: usize,
) {
    let mut decoder = FrameDecoder::new(max_frame_len);
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                decoder.push(&buf[..n]);
                let frames: Vec<_> = std::iter::from_fn(|| decoder.next_frame()).collect();
                if !frames.is_empty() {
                    shared.handle_frames(frames);
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => {
                log::warn!("reading stdin failed: {e}");
                break;
            }
        }
    }
    let rest: Vec<_> = std::iter::from_fn(|| decoder.finish()).collect();
    if !rest.is_empty() {
        shared.handle_frames(rest);
    }
    log::debug!("stdin closed");
    let _ = events.send(Event::InputClosed);
}

/// The only owner of stdout. Gathers what is queued, writes it in one go and flushes when
/// the queue is empty. An empty message means: flush and stop. A broken pipe ends the session.
fn writer(mut output: Box<dyn Write + Send>, rx: Inbox, events: Sender<Event>, done: Sender<()>) {
    let mut buf = Vec::with_capacity(READ_CHUNK);
    let mut broken = false;
    'outer: while let Some(first) = rx.recv() {
        let mut stop = first.is_empty();
        buf.extend_from_slice(&first);
        while !stop && buf.len() < WRITE_BATCH {
            match rx.try_recv() {
                Some(m) if m.is_empty() => stop = true,
                Some(m) => buf.extend_from_slice(&m),
                None => break,
            }
        }
        if !broken && !buf.is_empty() {
            if let Err(e) = output.write_all(&buf).and_then(|()| output.flush()) {
                if e.kind() == ErrorKind::BrokenPipe {
                    log::info!("stdout closed by the client");
                } else {
                    log::warn!("writing stdout failed: {e}");
                }
                broken = true;
                let _ = events.send(Event::OutputClosed);
            }
        }
        buf.clear();
        if stop {
            break 'outer;
        }
    }
    let _ = done.send(());
}

/// Sends heartbeats and fires deadlines; sleeps until the next one or until woken.
fn timer(shared: Arc<Shared>, wake: Receiver<()>) {
    loop {
        let (next, stopped) = shared.next_wake();
        if stopped {
            return;
        }
        let woken = match next {
            Some(t) => wake.recv_deadline(t),
            None => wake.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match woken {
            Ok(()) => continue,
            Err(RecvTimeoutError::Timeout) => shared.on_timer(),
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

fn start_signals(events: Sender<Event>) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    match signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]) {
        Ok(mut signals) => spawn("stdmcp-signals", move || {
            for s in signals.forever() {
                let _ = events.send(Event::Signal(s));
            }
        }),
        Err(e) => log::warn!("cannot handle signals: {e}"),
    }
}
