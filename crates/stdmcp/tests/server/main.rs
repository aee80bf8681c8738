//! The runtime's server over real pipes, against its `everything` example: the protocol and
//! the lifecycle (`runtime`), flow control (`backpressure`), asking the client in both eras
//! (`mrtr`), the tasks extension (`tasks`), the waiting line (`queued`, a server in-process),
//! and the README's API example built as an outside crate would (`hello_crate`). The runner
//! itself, in-process, is tests/process/: a binary of its own, since it makes its process a
//! subreaper and opens a descriptor without `O_CLOEXEC` that other tests' children would
//! inherit.

#[path = "../support/mod.rs"]
mod support;

mod backpressure;
mod hello_crate;
mod mrtr;
mod queued;
mod runtime;
mod tasks;
