//! The threads of a serving process and its shutdown sequence (see the crate docs' diagram);
//! the timer thread, which the dispatcher starts at the first wake, runs
//! `Shared::run_timer` (`dispatch.rs`).

use std::io::{ErrorKind, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use stdmcp_proto::framing::{self, FrameDecoder};
use stdmcp_proto::peer::{self, Catalog, Peer};

use super::diagnostics::diagnostics_level;
use super::dispatch::{Lifecycle, Shared};
use super::handlers::Handlers;
use super::options::Options;
use super::outbox::{self, outbox, Inbox, Outbox};
use super::worker;
use crate::mailbox::{Closing, Mailbox, NoMessage};

const READ_CHUNK: usize = 64 * 1024;
/// Bytes the writer takes from its queue at a time.
const WRITE_BATCH: usize = 1 << 20;
/// Frames at least this large are written from where they are instead of being copied into
/// the batch buffer.
const WRITE_DIRECT: usize = 64 * 1024;
/// The reader stops reading while this many times the queue limit is queued: only its own
/// answers to a client that writes without reading can get there (workers wait at the limit).
const READER_ROOM: usize = 2;
/// Frames the reader hands to the dispatcher under one lock; between groups it checks the
/// room in the writer's queue, so that a chunk of small requests with large answers (64 KiB
/// of `tools/list`) cannot overshoot the bound by much.
const FRAMES_PER_LOCK: usize = 64;

/// Serves `catalog` with `handlers` on `input` and `output` until the connection ends (see
/// [`super::Server::serve`]); runs `on_shutdown` once the calls were drained or cancelled.
pub(super) fn serve(
    mut catalog: Catalog,
    handlers: Handlers,
    options: Options,
    on_shutdown: Vec<Box<dyn FnOnce() + Send>>,
    input: Box<dyn Read + Send>,
    output: Box<dyn Write + Send>,
    signals: bool,
) -> ExitCode {
    let mut config = peer::Config::default();
    config.heartbeat = options.heartbeat;
    config.max_running = options.max_concurrent_calls.max(1);
    config.handshake_only = options.handshake_only;
    config.park_ttl = options.input_wait;
    config.max_parked = options.max_waiting_calls;
    config.max_jobs = options.max_jobs.max(1);
    config.job_retention = options.job_retention;
    config.fill_random = crate::random::kernel_random;
    config.wall_origin = Some((Instant::now(), std::time::SystemTime::now()));
    config.diagnostics = diagnostics_level();
    if let Err(e) = catalog.add_job_tools() {
        log::error!("no job tools: {e}");
    }
    let peer = Peer::server(Arc::new(catalog), config);
    let (out_tx, out_rx) = outbox(options.max_outgoing_bytes);
    let events = Arc::new(Mailbox::<Lifecycle>::default());
    let shared = Arc::new(Shared::new(
        peer,
        out_tx.clone(),
        Arc::clone(&events),
        move |call| worker::work(&handlers, call),
        &options,
    ));

    // Closed when the writer's thread ends: it wrote everything, or it panicked.
    let written = Arc::new(Mailbox::<()>::default());
    spawn("stdmcp-writer", {
        let (events, done) = (Arc::clone(&events), Closing(Arc::clone(&written)));
        move || {
            writer(output, &out_rx, &events);
            drop(done);
        }
    });
    spawn("stdmcp-reader", {
        let shared = shared.clone();
        let events = Arc::clone(&events);
        let max = options.max_frame_len;
        move || reader(input, shared, &events, max)
    });
    if signals {
        start_signals(Arc::clone(&events));
    }

    // Cancel hooks fired by the shutdown sequence run on this thread: never wait for room.
    outbox::never_wait_on_this_thread();
    let code = shutdown(&shared, &events, &options);
    on_shutdown.into_iter().for_each(|f| f());
    shared.stop_timer();
    out_tx.close();
    flush(&out_tx, &written, options.flush_stall);
    code
}

/// Waits for the writer to write everything queued, as long as the client keeps reading:
/// it gives up only when no byte was accepted for `stall`. (Then the process exits, perhaps
/// in the middle of a frame: a client that stopped reading for that long has gone.)
fn flush(out: &Outbox, written: &Mailbox<()>, stall: Duration) {
    let mut seen = out.written();
    loop {
        match written.recv_until(Some(Instant::now() + stall)) {
            Ok(()) | Err(NoMessage::Closed) => return,
            Err(NoMessage::TimedOut) => {
                let now = out.written();
                if now == seen {
                    log::warn!(
                        "the client read nothing for {stall:?}: exiting with output unwritten"
                    );
                    return;
                }
                seen = now;
            }
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) {
    if let Err(e) = thread::Builder::new().name(name.into()).spawn(f) {
        // Nothing can be served without these threads.
        log::error!("cannot start thread {name}: {e}");
        std::process::abort();
    }
}

/// Waits for the end of the connection and winds down: stdin EOF, SIGTERM and SIGHUP drain
/// calls in flight for `options.drain`, then cancel the rest and wait for them to stop;
/// SIGINT cancels everything at once and exits 130; a closed stdout cancels and exits 0.
fn shutdown(shared: &Arc<Shared>, events: &Mailbox<Lifecycle>, options: &Options) -> ExitCode {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let first = loop {
        match events.recv_until(None) {
            Ok(Lifecycle::Idle) => continue,
            Ok(e) => break e,
            Err(_) => break Lifecycle::InputClosed,
        }
    };
    log::info!("shutting down: {first:?}");
    let immediate = match first {
        Lifecycle::Signal(SIGINT) => true,
        Lifecycle::OutputClosed => true,
        Lifecycle::Signal(s) if s != SIGTERM && s != SIGHUP => true,
        _ => false,
    };
    let mut interrupted = matches!(first, Lifecycle::Signal(SIGINT));
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
fn wait_idle(shared: &Shared, events: &Mailbox<Lifecycle>, deadline: Instant) -> bool {
    loop {
        if shared.calls_in_flight() == 0 {
            return false;
        }
        match events.recv_until(Some(deadline)) {
            Ok(Lifecycle::Signal(signal_hook::consts::SIGINT)) => return true,
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
    events: &Mailbox<Lifecycle>,
    max_frame_len: usize,
) {
    outbox::never_wait_on_this_thread();
    let mut decoder = FrameDecoder::new(max_frame_len);
    let read = framing::read_frames(&mut *input, &mut decoder, |frames| {
        loop {
            let group: Vec<_> = (&mut *frames).take(FRAMES_PER_LOCK).collect();
            if group.is_empty() {
                return true;
            }
            shared.handle_frames(group);
            // Only here does the reader wait, and only at twice the bound: a client that
            // sends requests without reading their answers.
            shared.out.wait_for_room_always(READER_ROOM);
        }
    });
    if let Err(e) = read {
        log::warn!("reading stdin failed: {e}");
    }
    let rest: Vec<_> = std::iter::from_fn(|| decoder.finish()).collect();
    if !rest.is_empty() {
        shared.handle_frames(rest);
    }
    log::debug!("stdin closed");
    events.send(Lifecycle::InputClosed);
}

/// The only owner of stdout. Takes what is queued (up to `WRITE_BATCH` bytes), copies small
/// frames into one buffer so that many frames cost one `write`, and writes large ones from
/// where they are; flushes after each batch. Stops when the queue is closed and everything
/// was written. A broken pipe ends the connection (and what is queued is dropped).
fn writer(mut output: Box<dyn Write + Send>, rx: &Inbox, events: &Mailbox<Lifecycle>) {
    let mut batch = Vec::new();
    let mut buf = Vec::with_capacity(READ_CHUNK);
    while rx.recv(&mut batch, WRITE_BATCH) {
        let mut result = Ok(());
        for frame in batch.drain(..) {
            if result.is_err() {
                continue;
            }
            if frame.len() < WRITE_DIRECT {
                buf.extend_from_slice(&frame);
                continue;
            }
            result = write_counted(&mut *output, &buf, rx)
                .and_then(|()| write_counted(&mut *output, &frame, rx));
            buf.clear();
        }
        let result = result
            .and_then(|()| write_counted(&mut *output, &buf, rx))
            .and_then(|()| output.flush());
        buf.clear();
        if let Err(e) = result {
            if e.kind() == ErrorKind::BrokenPipe {
                log::info!("stdout closed by the client");
            } else {
                log::warn!("writing stdout failed: {e}");
            }
            rx.broken();
            events.send(Lifecycle::OutputClosed);
        }
    }
}

/// `write_all`, counting the bytes stdout accepts as it goes (the shutdown sequence watches
/// them to tell a slow reader from a gone one).
fn write_counted(output: &mut dyn Write, mut bytes: &[u8], rx: &Inbox) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match output.write(bytes) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => {
                rx.wrote(n);
                bytes = &bytes[n..];
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn start_signals(events: Arc<Mailbox<Lifecycle>>) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    match signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]) {
        Ok(mut signals) => spawn("stdmcp-signals", move || {
            for s in signals.forever() {
                events.send(Lifecycle::Signal(s));
            }
        }),
        Err(e) => log::warn!("cannot handle signals: {e}"),
    }
}
