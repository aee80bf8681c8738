//! Interactive sessions (README "Sessions") through `stdmcp serve`: the engine and its options
//! with sh and python3, and the example manifests with real REPLs and HOL4.

#[path = "../common/mod.rs"]
mod common;

mod engine;
mod hol4;
mod options;
mod repls;
