//! The servers under test: stdmcp, the SDK peers of bench/peers/peers.json, the floor; the
//! CPU to pin to; checks that a server can run at all.
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use crate::measure::{Kind, Spec};

/// The repository root: where the peers' relative argv and the default output live.
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `target/release/examples/everything`, next to this binary (`target/release/deps/mcp-…`).
pub(crate) fn stdmcp_exe() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|e| Some(e.parent()?.parent()?.join("examples/everything")))
        .filter(|p| p.exists())
        .unwrap_or_else(|| root().join("target/release/examples/everything"))
}

/// `target/release/stdmcp`, the command-line binary, beside the examples directory;
/// `STDMCP_BENCH_BIN` replaces it (to compare two builds: stdmcp-serve and the command tools).
pub(crate) fn stdmcp_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("STDMCP_BENCH_BIN").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    stdmcp_exe()
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("stdmcp"))
        .unwrap_or_else(|| root().join("target/release/stdmcp"))
}

/// The static `stdmcp` that scripts/dist.sh ships (scripts/static-build.sh: musl, target
/// x86_64-unknown-linux-musl).
pub(crate) fn static_bin() -> PathBuf {
    root().join("target/x86_64-unknown-linux-musl/release/stdmcp")
}

pub(crate) fn servers() -> Result<Vec<Spec>, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    // STDMCP_BENCH_SERVER overrides stdmcp's argv (whitespace-separated), e.g. to run an
    // unstripped build, or the server under `perf record`.
    let argv = match std::env::var("STDMCP_BENCH_SERVER") {
        Ok(s) if !s.trim().is_empty() => s.split_whitespace().map(str::to_owned).collect(),
        _ => vec![stdmcp_exe().display().to_string()],
    };
    let mut out = vec![Spec {
        name: "stdmcp".into(),
        argv,
        kind: Kind::Stdmcp,
    }];
    // `stdmcp serve` with the built-in manifest (no --config; run from the repository root,
    // with STDMCP_CONFIG unset by the driver, and no ~/.config/stdmcp/stdmcp.json expected).
    out.push(Spec {
        name: "stdmcp-serve".into(),
        argv: vec![stdmcp_bin().display().to_string(), "serve".into()],
        kind: Kind::Serve,
    });
    // The same, statically linked as scripts/dist.sh ships it (no dynamic loader, no
    // relocations at start); built by a full scripts/bench.sh run, else n/a.
    out.push(Spec {
        name: "stdmcp-static".into(),
        argv: vec![static_bin().display().to_string(), "serve".into()],
        kind: Kind::Serve,
    });
    let peers_file = root().join("bench/peers/peers.json");
    match std::fs::read_to_string(&peers_file)
        .map_err(|e| e.to_string())
        .and_then(|s| serde_json::from_str::<Value>(&s).map_err(|e| e.to_string()))
    {
        Ok(Value::Array(peers)) => {
            for p in peers {
                let name = p["name"].as_str().unwrap_or_default().to_owned();
                let argv: Vec<String> = p["argv"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|s| s.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                if name.is_empty() || argv.is_empty() {
                    eprintln!(
                        "bench: skipping a malformed entry of {}: {p}",
                        peers_file.display()
                    );
                    continue;
                }
                out.push(Spec {
                    name,
                    argv,
                    kind: Kind::Peer,
                });
            }
        }
        Ok(_) => eprintln!(
            "bench: {} is not a JSON array; no peers",
            peers_file.display()
        ),
        Err(e) => eprintln!("bench: cannot read {}: {e}; no peers", peers_file.display()),
    }
    out.push(Spec {
        name: "floor".into(),
        argv: vec![exe.display().to_string(), "--floor".into()],
        kind: Kind::Floor,
    });
    Ok(out)
}

/// The last CPU of an affinity list.
pub(crate) fn last_cpu(list: &str) -> Option<String> {
    let last = list.rsplit(',').next()?;
    Some(last.rsplit('-').next()?.trim().to_owned())
}

/// Newest modification time of the files under `dir` (recursively).
pub(crate) fn newest(dir: &Path) -> Option<SystemTime> {
    let meta = std::fs::metadata(dir).ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| newest(&e.path()))
        .max()
}

/// Warns when stdmcp's binary is older than its sources (`cargo bench` does not build
/// examples; scripts/bench.sh does).
pub(crate) fn warn_if_stale(spec: &Spec) {
    let Ok(built) = std::fs::metadata(&spec.argv[0]).and_then(|m| m.modified()) else {
        return;
    };
    let sources = ["src", "crates", "Cargo.toml", "Cargo.lock"]
        .iter()
        .filter_map(|p| newest(&root().join(p)))
        .max();
    if sources.is_some_and(|s| s > built) {
        eprintln!(
            "bench: warning: {} is older than the sources; run cargo build --release --examples",
            spec.argv[0]
        );
    }
}

/// Why a server cannot be checked at all (its program is missing), if so.
pub(crate) fn missing(spec: &Spec) -> Option<String> {
    let prog = Path::new(&spec.argv[0]);
    if prog.components().count() > 1 {
        if !prog.exists() {
            let hint = match spec.kind {
                _ if spec.name == "stdmcp-static" => "a full scripts/bench.sh, or scripts/dist.sh",
                Kind::Stdmcp | Kind::Serve | Kind::Manifest => {
                    "cargo build --release --bins --examples"
                }
                _ => "bash bench/peers/install.sh",
            };
            return Some(format!("{} not found (run {hint})", prog.display()));
        }
    } else if !std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
        .unwrap_or(false)
    {
        return Some(format!("{} not on PATH", prog.display()));
    }
    for a in &spec.argv[1..] {
        let script = a.ends_with(".py") || a.ends_with(".mjs") || a.ends_with(".js");
        if script && !Path::new(a).exists() {
            return Some(format!("{a} not found"));
        }
    }
    None
}

/// Whether a group applies to a server; the reason when not.
pub(crate) fn applies(group: &str, spec: &Spec) -> Result<(), String> {
    match (spec.kind, group) {
        (Kind::Floor, "cold" | "seq" | "pipe" | "cmd" | "drain") => Ok(()),
        (Kind::Serve | Kind::Manifest, "cold") => Ok(()),
        (Kind::Serve | Kind::Manifest, _) => Err(
            "`stdmcp serve` is measured for cold start only; the stdmcp row of the command \
             groups is `stdmcp serve` with bench/stdmcp/tools.json"
                .into(),
        ),
        (Kind::Peer, "drain") => {
            Err("not run: the SDKs' process APIs collect a tool's whole output in memory".into())
        }
        (Kind::Floor, "size") => Err("the floor is this driver binary run as `mcp --floor`".into()),
        (Kind::Stdmcp, "confine") => Ok(()),
        (_, "confine") => Err("stdmcp's own confinement, against itself unconfined".into()),
        (Kind::Floor, _) => Err("the floor has no tools (canned answers only)".into()),
        _ => Ok(()),
    }
}
