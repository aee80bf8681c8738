//! A machine without some of a manifest's programs: the built-in manifest serves the tools it
//! can and says which are missing (stderr and `instructions`); a user's manifest refuses to
//! start with the precise message unless it sets `"missingPrograms": "skip"`.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests start the server binary as a client would

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{stdmcp_bin, temp_dir, Proc};
use serde_json::{json, Value};

/// `stdmcp serve ARGS` in `dir` with PATH set to `path` only.
fn serve(dir: &Path, path: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(stdmcp_bin());
    cmd.arg("serve")
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", dir)
        .env("STDMCP_ROOT", dir)
        .env_remove("STDMCP_CONFIG")
        .env_remove("XDG_CONFIG_HOME");
    cmd
}

/// A PATH directory holding only the named programs (symlinks to the host's).
fn bin_with(dir: &Path, programs: &[&str]) -> std::path::PathBuf {
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    for p in programs {
        let real = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(p))
            .find(|p| p.is_file())
            .unwrap();
        std::os::unix::fs::symlink(real, bin.join(p)).unwrap();
    }
    bin
}

fn tool_names(p: &mut Proc) -> Vec<String> {
    p.request(json!(1), "tools/list", json!({}));
    let r = p.response(&json!(1));
    r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_built_in_manifest_serves_what_it_can_and_names_what_is_missing() {
    let dir = temp_dir("missing-some");
    fs::write(dir.join("a.txt"), "hello\n").unwrap();
    let bin = bin_with(&dir, &["ls", "uname"]);
    let mut p = Proc::start(serve(&dir, &bin, &[]));
    let init = p.initialize("2025-06-18");
    let instructions = init["result"]["instructions"].as_str().unwrap().to_owned();
    let names = tool_names(&mut p);
    assert!(names.contains(&"list_directory".to_owned()), "{names:?}");
    assert!(names.contains(&"system_info".to_owned()), "{names:?}");
    for gone in [
        "read_file",
        "search_text",
        "find_files",
        "count_lines",
        "disk_usage",
    ] {
        assert!(!names.contains(&gone.to_owned()), "{gone} in {names:?}");
        assert!(instructions.contains(gone), "{gone} not in {instructions}");
    }
    p.call(json!(2), "list_directory", json!({}), None);
    let r = p.response(&json!(2));
    assert_ne!(r["result"]["isError"], json!(true), "{r}");
    assert!(r.to_string().contains("a.txt"), "{r}");
    let (_, status) = p.finish();
    assert!(status.success());
    let stderr = p_stderr(&dir, &bin);
    assert!(
        stderr.contains(
            "tool search_text left out (missingPrograms: skip): `grep` was not found on PATH"
        ),
        "{stderr}"
    );
}

/// The stderr of a server started and ended at once (stdin closed).
fn p_stderr(dir: &Path, path: &Path) -> String {
    let out = serve(dir, path, &[])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn with_no_programs_at_all_it_still_starts_and_answers_tools_list() {
    let dir = temp_dir("missing-all");
    let empty = dir.join("empty");
    fs::create_dir_all(&empty).unwrap();
    let mut p = Proc::start(serve(&dir, &empty, &[]));
    let init = p.initialize("2025-06-18");
    assert!(
        init["result"]["instructions"]
            .as_str()
            .unwrap()
            .contains("list_directory, read_file, search_text"),
        "{init}"
    );
    assert_eq!(tool_names(&mut p), Vec::<String>::new());
    let (_, status) = p.finish();
    assert!(status.success());
    let stderr = p_stderr(&dir, &empty);
    for prog in ["ls", "head", "grep", "find", "wc", "du", "uname"] {
        assert!(
            stderr.contains(&format!("`{prog}` was not found on PATH")),
            "{prog}: {stderr}"
        );
    }
}

#[test]
fn a_user_manifest_refuses_unless_it_opts_in() {
    let dir = temp_dir("missing-user");
    let bin = bin_with(&dir, &["echo"]);
    let mut manifest = json!({
        "name": "mine",
        "tools": [
            {"name": "hi", "description": "Says hi.", "program": "echo", "args": ["hi"]},
            {"name": "prove", "description": "Proves.", "program": "no-such-prover-stdmcp"}
        ]
    });
    fs::write(dir.join("m.json"), manifest.to_string()).unwrap();
    let out = serve(&dir, &bin, &["--config", "m.json"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("tools[1].program: `no-such-prover-stdmcp` was not found on PATH"),
        "{stderr}"
    );

    manifest["missingPrograms"] = Value::from("skip");
    fs::write(dir.join("m.json"), manifest.to_string()).unwrap();
    let mut p = Proc::start(serve(&dir, &bin, &["--config", "m.json"]));
    let init = p.initialize("2025-06-18");
    assert!(
        init["result"]["instructions"]
            .as_str()
            .unwrap()
            .ends_with(": prove."),
        "{init}"
    );
    let names = tool_names(&mut p);
    assert!(names.contains(&"hi".to_owned()) && !names.contains(&"prove".to_owned()));
    let (_, status) = p.finish();
    assert!(status.success());
}

#[test]
fn an_empty_root_with_no_home_and_no_programs_still_serves() {
    // What a chroot holding only the binary looks like: started in `/`, HOME not there, no
    // program on PATH. (scripts/dist.sh runs the static binary in a real empty root.)
    let dir = temp_dir("missing-root");
    let empty = dir.join("empty");
    fs::create_dir_all(&empty).unwrap();
    let mut cmd = serve(Path::new("/"), &empty, &[]);
    cmd.env("HOME", dir.join("no-such-home"))
        .env_remove("STDMCP_ROOT");
    let mut p = Proc::initialized(cmd, "2025-06-18");
    assert_eq!(tool_names(&mut p), Vec::<String>::new());
    let stderr = p.stderr.clone();
    let (_, status) = p.finish();
    let stderr = stderr.lock().unwrap().clone();
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains("serving the built-in manifest over / "),
        "{stderr}"
    );
}
