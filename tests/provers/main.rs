//! Provers and portfolios through `stdmcp serve`: `examples/provers.json` with the real E
//! prover, SPASS, Z3 and CVC5 (`example`), portfolios with deterministic members
//! (`portfolio`), and `examples/slurm.json` on a real single-node Slurm (`slurm`).

#[path = "../common/mod.rs"]
mod common;

mod example;
mod portfolio;
mod slurm;
