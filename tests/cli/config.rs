//! `stdmcp config CLIENT`: every client's output parses and names absolute paths and a long
//! enough timeout; `--install` keeps foreign entries, backs up, and is idempotent.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{stdmcp_bin, temp_dir};
use serde_json::{json, Value};

const CLIENTS: [&str; 7] = [
    "claude-code",
    "claude-desktop",
    "cursor",
    "vscode",
    "codex",
    "gemini",
    "windsurf",
];

/// A manifest whose longest tool may run 300 s (kill grace 2 s).
const MANIFEST: &str = r#"{
  "name": "long tools",
  "version": "1.0.0",
  "defaults": {"timeoutSeconds": 20, "killGraceMs": 2000},
  "tools": [
    {"name": "quick", "description": "Prints a word.", "program": "echo", "args": ["hi"]},
    {"name": "slow", "description": "Waits.", "program": "sleep", "args": ["1"],
     "timeoutSeconds": 300}
  ]
}"#;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `stdmcp ARGS` in `cwd` with HOME=`home` and no client-specific variables.
fn run(cwd: &Path, home: &Path, args: &[&str]) -> Out {
    let out = Command::new(stdmcp_bin())
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME")
        .env_remove("STDMCP_CONFIG")
        .env_remove("STDMCP_ROOT")
        .output()
        .unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// The server entry of `name` in a client's printed document, as JSON (Codex's TOML too).
fn entry_of(client: &str, stdout: &str, name: &str) -> Value {
    match client {
        "codex" => {
            let doc: toml::Table = toml::from_str(stdout).unwrap();
            let v = serde_json::to_value(&doc).unwrap();
            v["mcp_servers"][name].clone()
        }
        "claude-code" => {
            let (line, json) = stdout.split_once("\n\n").unwrap();
            assert!(
                line.starts_with("claude mcp add --transport stdio --scope user "),
                "{line}"
            );
            assert!(line.contains(&format!(" {name} -- ")), "{line}");
            let doc: Value = serde_json::from_str(json).unwrap();
            doc["mcpServers"][name].clone()
        }
        "vscode" => {
            let doc: Value = serde_json::from_str(stdout).unwrap();
            assert_eq!(doc["servers"][name]["type"], "stdio");
            doc["servers"][name].clone()
        }
        _ => {
            let doc: Value = serde_json::from_str(stdout).unwrap();
            doc["mcpServers"][name].clone()
        }
    }
}

fn setup(name: &str) -> (PathBuf, PathBuf) {
    let dir = temp_dir(name);
    let home = dir.join("home");
    let project = dir.join("project");
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(project.join("sub")).unwrap();
    fs::write(project.join("long.json"), MANIFEST).unwrap();
    (home, project)
}

#[test]
fn every_client_gets_absolute_paths_and_a_long_enough_timeout() {
    let (home, project) = setup("print");
    let exe = stdmcp_bin().canonicalize().unwrap();
    let manifest = project.join("long.json");
    for client in CLIENTS {
        let out = run(
            &project,
            &home,
            &["config", client, "--config", "long.json"],
        );
        assert_eq!(out.code, 0, "{client}: {}", out.stderr);
        let e = entry_of(client, &out.stdout, "long-tools");
        assert_eq!(e["command"], exe.display().to_string(), "{client}");
        assert_eq!(
            e["args"],
            json!(["serve", "--config", manifest.display().to_string()]),
            "{client}"
        );
        assert!(
            out.stderr.contains("long-tools serves"),
            "{client}: {}",
            out.stderr
        );
        // 300 s deadline + 2 s grace + margin; where the client has no setting, the notes say so.
        match client {
            "codex" => assert!(e["tool_timeout_sec"].as_u64().unwrap() >= 302, "{e}"),
            "gemini" => assert!(e["timeout"].as_u64().unwrap() >= 302_000, "{e}"),
            "claude-code" => assert!(out.stderr.contains("MCP_TOOL_TIMEOUT"), "{}", out.stderr),
            _ => assert!(
                out.stderr.contains("allows 312 s"),
                "{client}: {}",
                out.stderr
            ),
        }
    }
}

#[test]
fn the_built_in_manifest_gets_its_workspace_and_codex_its_variables() {
    let (home, project) = setup("builtin");
    for client in CLIENTS {
        let out = run(&project, &home, &["config", client, "--root", "sub"]);
        assert_eq!(out.code, 0, "{client}: {}", out.stderr);
        let e = entry_of(client, &out.stdout, "stdmcp");
        assert_eq!(e["args"], json!(["serve"]), "{client}");
        assert_eq!(
            e["env"]["STDMCP_ROOT"],
            project.join("sub").display().to_string(),
            "{client}"
        );
        if client == "codex" {
            assert_eq!(e["env_vars"], json!(["LC_CTYPE"]), "{e}");
        }
    }
    // Without --root the workspace is where the command runs, pinned as an absolute path.
    let out = run(&project.join("sub"), &home, &["config", "cursor"]);
    let e = entry_of("cursor", &out.stdout, "stdmcp");
    assert_eq!(
        e["env"]["STDMCP_ROOT"],
        project.join("sub").display().to_string()
    );
    // A stdmcp.json here is what `serve` would find: it is pinned by absolute path.
    fs::copy(project.join("long.json"), project.join("stdmcp.json")).unwrap();
    let out = run(&project, &home, &["config", "codex", "--name", "mine"]);
    let e = entry_of("codex", &out.stdout, "mine");
    let pinned = project.join("stdmcp.json").display().to_string();
    assert_eq!(e["args"], json!(["serve", "--config", pinned]));
    // `--flag=value` reads as `--flag value`.
    let inline = run(&project, &home, &["config", "codex", "--name=mine"]);
    assert_eq!(inline.stdout, out.stdout);
    let out = run(&project, &home, &["config", "vscode", "--root=sub"]);
    let e = entry_of("vscode", &out.stdout, "stdmcp");
    assert_eq!(
        e["env"]["STDMCP_ROOT"],
        project.join("sub").display().to_string()
    );
}

#[test]
fn via_uvx_and_npx_start_the_registry_packages_for_every_client() {
    let (home, project) = setup("via");
    let exe = stdmcp_bin().canonicalize().unwrap().display().to_string();
    let manifest = project.join("long.json").display().to_string();
    let forms: [(&str, &str, &[&str]); 4] = [
        ("uvx", "uvx", &["stdmcp", "serve"]),
        ("npx", "npx", &["-y", "stdmcp", "serve"]),
        ("path", &exe, &["serve"]),
        ("", &exe, &["serve"]),
    ];
    for client in CLIENTS {
        for (via, command, prefix) in forms {
            let mut args = vec!["config", client, "--config", "long.json"];
            if !via.is_empty() {
                args.extend(["--via", via]);
            }
            let out = run(&project, &home, &args);
            assert_eq!(out.code, 0, "{client} {via}: {}", out.stderr);
            let e = entry_of(client, &out.stdout, "long-tools");
            assert_eq!(e["command"], command, "{client} {via}");
            let mut want: Vec<&str> = prefix.to_vec();
            want.extend(["--config", &manifest]);
            assert_eq!(e["args"], json!(want), "{client} {via}");
            if client == "claude-code" {
                let line = out.stdout.lines().next().unwrap();
                assert!(
                    line.ends_with(&format!(
                        " -- {command} {} --config {manifest}",
                        prefix.join(" ")
                    )),
                    "{line}"
                );
            }
            // The built-in manifest keeps its pinned workspace whatever starts it.
            let out = run(
                &project,
                &home,
                &[
                    "config",
                    client,
                    "--root",
                    "sub",
                    "--via",
                    if via.is_empty() { "path" } else { via },
                ],
            );
            let e = entry_of(client, &out.stdout, "stdmcp");
            assert_eq!(e["command"], command, "{client} {via}");
            assert_eq!(e["args"], json!(prefix), "{client} {via}");
            assert_eq!(
                e["env"]["STDMCP_ROOT"],
                project.join("sub").display().to_string()
            );
        }
    }
}

#[test]
fn bad_requests_are_usage_errors() {
    let (home, project) = setup("usage");
    for args in [
        &["config"][..],
        &["config", "emacs"],
        &["config", "codex", "--name", "a b"],
        &["config", "codex", "--name", "x.y"],
        &["config", "codex", "--config", "long.json", "--root", "sub"],
        &["config", "codex", "--frobnicate"],
        &["config", "codex", "--install=yes"],
        &["config", "codex", "--name"],
        &["config", "codex", "--via", "pipx"],
        &["config", "codex", "--via"],
    ] {
        let out = run(&project, &home, args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let out = run(
        &project,
        &home,
        &["config", "codex", "--config", "missing.json"],
    );
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("missing.json"), "{}", out.stderr);
}

/// The file `--install` writes for `client`, given HOME and the project directory.
fn client_file(client: &str, home: &Path, project: &Path) -> PathBuf {
    match client {
        "claude-code" => project.join(".mcp.json"),
        "vscode" => project.join(".vscode/mcp.json"),
        "claude-desktop" if cfg!(target_os = "macos") => {
            home.join("Library/Application Support/Claude/claude_desktop_config.json")
        }
        "claude-desktop" => home.join(".config/Claude/claude_desktop_config.json"),
        "cursor" => home.join(".cursor/mcp.json"),
        "codex" => home.join(".codex/config.toml"),
        "gemini" => home.join(".gemini/settings.json"),
        "windsurf" => home.join(".codeium/windsurf/mcp_config.json"),
        other => panic!("{other}"),
    }
}

const CODEX_BEFORE: &str = r#"model = "o4"  # keep me

[mcp_servers.other]
command = "/usr/bin/other"
args = ["--flag"]

[mcp_servers.long-tools]
command = "/old/stdmcp"

[mcp_servers.long-tools.env]
OLD = "1"

[profiles.fast]
model = "o4-mini"
"#;

fn foreign_file(client: &str) -> String {
    if client == "codex" {
        return CODEX_BEFORE.to_owned();
    }
    let key = if client == "vscode" {
        "servers"
    } else {
        "mcpServers"
    };
    let doc = json!({
        "theme": "dark",
        key: {"other": {"command": "/usr/bin/other", "args": ["--flag"]}}
    });
    serde_json::to_string_pretty(&doc).unwrap()
}

#[test]
fn install_keeps_other_servers_backs_up_and_changes_nothing_the_second_time() {
    let (home, project) = setup("install");
    for client in CLIENTS {
        let file = client_file(client, &home, &project);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        let before = foreign_file(client);
        fs::write(&file, &before).unwrap();
        let args = ["config", client, "--config", "long.json", "--install"];
        let out = run(&project, &home, &args);
        assert_eq!(out.code, 0, "{client}: {}", out.stderr);
        assert!(out.stdout.contains("backup: "), "{client}: {}", out.stdout);
        let verb = if client == "codex" {
            "replaced"
        } else {
            "added"
        };
        assert!(out.stdout.contains(verb), "{client}: {}", out.stdout);
        let backup = file.with_file_name(format!(
            "{}.stdmcp.bak",
            file.file_name().unwrap().to_str().unwrap()
        ));
        assert_eq!(fs::read_to_string(&backup).unwrap(), before, "{client}");
        let after = fs::read_to_string(&file).unwrap();
        let printed = run(
            &project,
            &home,
            &["config", client, "--config", "long.json"],
        );
        let ours = entry_of(client, &printed.stdout, "long-tools");
        if client == "codex" {
            check_codex(&after, &ours);
        } else {
            let doc: Value = serde_json::from_str(&after).unwrap();
            let key = if client == "vscode" {
                "servers"
            } else {
                "mcpServers"
            };
            assert_eq!(doc["theme"], "dark", "{client}");
            assert_eq!(doc[key]["other"]["command"], "/usr/bin/other", "{client}");
            assert_eq!(doc[key]["long-tools"], ours, "{client}");
        }
        // Second run: nothing written, not even a new backup.
        fs::remove_file(&backup).unwrap();
        let again = run(&project, &home, &args);
        assert_eq!(again.code, 0, "{client}: {}", again.stderr);
        assert!(
            again.stdout.contains("unchanged"),
            "{client}: {}",
            again.stdout
        );
        assert_eq!(fs::read_to_string(&file).unwrap(), after, "{client}");
        assert!(!backup.exists(), "{client}");
    }
}

fn check_codex(after: &str, ours: &Value) {
    let doc: toml::Table = toml::from_str(after).unwrap();
    let v = serde_json::to_value(&doc).unwrap();
    assert_eq!(v["model"], "o4");
    assert_eq!(v["profiles"]["fast"]["model"], "o4-mini");
    assert_eq!(v["mcp_servers"]["other"]["args"], json!(["--flag"]));
    // The old table and its sub-table are gone, replaced by exactly the printed entry.
    assert_eq!(&v["mcp_servers"]["long-tools"], ours);
    assert!(after.contains("model = \"o4\"  # keep me\n"), "{after}");
    assert!(!after.contains("OLD"), "{after}");
}

#[test]
fn install_creates_missing_files_and_refuses_what_it_cannot_merge() {
    let (home, project) = setup("create");
    let out = run(&project, &home, &["config", "gemini", "--install"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("created"), "{}", out.stdout);
    let file = home.join(".gemini/settings.json");
    let doc: Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        doc["mcpServers"]["stdmcp"]["env"]["STDMCP_ROOT"],
        json!(project.display().to_string())
    );
    assert!(!file.with_file_name("settings.json.stdmcp.bak").exists());

    // JSON with comments is not rewritten.
    let cursor = home.join(".cursor/mcp.json");
    fs::create_dir_all(cursor.parent().unwrap()).unwrap();
    let commented = "{\n  // mine\n  \"mcpServers\": {}\n}\n";
    fs::write(&cursor, commented).unwrap();
    let out = run(&project, &home, &["config", "cursor", "--install"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("left untouched"), "{}", out.stderr);
    assert_eq!(fs::read_to_string(&cursor).unwrap(), commented);

    // A Codex server defined as an inline table is not edited at table level.
    let codex = home.join(".codex/config.toml");
    fs::create_dir_all(codex.parent().unwrap()).unwrap();
    let inline = "[mcp_servers]\nstdmcp = { command = \"/old\" }\n";
    fs::write(&codex, inline).unwrap();
    let out = run(&project, &home, &["config", "codex", "--install"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("inline table"), "{}", out.stderr);
    assert_eq!(fs::read_to_string(&codex).unwrap(), inline);
}
