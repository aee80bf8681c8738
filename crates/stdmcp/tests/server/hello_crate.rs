//! `crates/stdmcp/examples/hello.rs` is the README's API example: it must build in a new crate
//! whose only dependency is stdmcp, as a tool author would copy it, and the workspace's README
//! must show it as it is.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // a test; it runs cargo, not a tool

use std::path::Path;
use std::process::Command;

/// The runtime crate's directory, crates/stdmcp.
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// hello.rs without its leading comment lines, as the README shows it.
fn example_body() -> String {
    let text = std::fs::read_to_string(Path::new(ROOT).join("examples/hello.rs")).unwrap();
    let code: String = text
        .lines()
        .filter(|l| !l.starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect();
    code.trim_start().to_string()
}

#[test]
fn the_readme_shows_hello_rs_as_it_is() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("../../README.md")).unwrap();
    let start = readme
        .find("`crates/stdmcp/examples/hello.rs`")
        .expect("README names crates/stdmcp/examples/hello.rs");
    let block = &readme[start..];
    let open = block.find("```rust\n").expect("a rust block follows") + "```rust\n".len();
    let close = block[open..].find("```\n").expect("the block ends") + open;
    assert_eq!(block[open..close], example_body());
}

#[test]
fn hello_rs_builds_in_a_crate_that_depends_only_on_stdmcp() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hello-crate");
    // The runtime library, as a tool author depends on it (not the workspace's command).
    let runtime = Path::new(ROOT);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\nstdmcp = {{ path = {runtime:?} }}\n\n[workspace]\n"
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(
        Path::new(ROOT).join("examples/hello.rs"),
        dir.join("src/main.rs"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO"))
        .args(["build", "--offline", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "hello.rs does not build in a new crate:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
