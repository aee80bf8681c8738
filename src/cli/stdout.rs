//! The only `print!`s of the command: help and version text, asked for on the command line.
//! `serve` never reaches them (stdout belongs to the protocol writer), which is why
//! `clippy::print_stdout` is allowed here and nowhere else in the binary.

/// `stdmcp --help` (also `stdmcp serve --help`).
#[allow(clippy::print_stdout)]
pub(super) fn help() {
    print!("{}", super::say::HELP);
}

/// `stdmcp --version`.
#[allow(clippy::print_stdout)]
pub(super) fn version() {
    println!("stdmcp {}", env!("CARGO_PKG_VERSION"));
}
