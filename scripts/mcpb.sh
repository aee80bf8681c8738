#!/usr/bin/env bash
# The Claude Desktop bundle and the MCP registry entry.
#
# usage: scripts/mcpb.sh        (after scripts/dist.sh, which it runs if its binary is missing)
#
# 1. Writes dist/stdmcp-VERSION-linux-x86_64.mcpb from packaging/mcpb-manifest.json
#    (manifest_version 0.4, server.type "binary") and the static binary, with `tools` taken
#    from the built-in manifest's tools/list as the bundled binary answers it; validates and
#    packs it with the official CLI, @anthropic-ai/mcpb (pinned in packaging/package.json,
#    installed into $MCPB_DIR, default target/mcpb).
# 2. Unpacks the bundle and serves it the way Claude Desktop would (command and env from
#    mcp_config, ${__dirname} and ${user_config.*} substituted): its tools/list must equal the
#    manifest's `tools`.
# 3. Writes dist/server.json: server.json with the bundle's SHA-256, and validates both it and
#    server.json against the MCP registry's server.json schema 2025-12-11, as shipped
#    byte-for-byte in the PyPI package skillsaw (pinned below, with the schema's SHA-256),
#    using python jsonschema (pinned) in a venv at $REGISTRY_DIR (default target/registry).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
mcpb_dir=${MCPB_DIR:-$repo/target/mcpb}
registry_dir=${REGISTRY_DIR:-$repo/target/registry}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
name=stdmcp-$version-linux-x86_64
bin=dist/$name
skillsaw=skillsaw==0.22.0
jsonschema=jsonschema==4.26.0
schema_sha256=3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0

say() { printf 'mcpb: %s\n' "$*" >&2; }
fail() { printf 'mcpb: FAIL: %s\n' "$*" >&2; exit 1; }

[ -x "$bin" ] || scripts/dist.sh

# The official CLI, pinned by packaging/package-lock.json; reinstalled when the lock changes.
if ! cmp -s packaging/package-lock.json "$mcpb_dir/package-lock.json"; then
  rm -rf "$mcpb_dir"
  mkdir -p "$mcpb_dir"
  cp packaging/package.json packaging/package-lock.json "$mcpb_dir/"
  (cd "$mcpb_dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
# Zip entries are stamped 1980-01-01 00:00 UTC, the earliest zip time
# (packaging/fixed-date.cjs), so the same binary gives the same bundle and the same SHA-256.
epoch=315532800
mcpb() {
  SOURCE_DATE_EPOCH=$epoch TZ=UTC NODE_OPTIONS="--require $repo/packaging/fixed-date.cjs" \
    "$mcpb_dir/node_modules/.bin/mcpb" "$@"
}

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bundle/server" "$stage/work"
cp "$bin" "$stage/bundle/server/stdmcp"
chmod 755 "$stage/bundle/server/stdmcp"
touch -d "@$epoch" "$stage/bundle/server/stdmcp"
tools=$(STDMCP_ROOT="$stage/work" "$bin" tools --json -- "$bin" serve)
python3 - "$version" "$tools" packaging/mcpb-manifest.json >"$stage/bundle/manifest.json" <<'PY'
import json, sys
version, tools, template = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
m = json.load(open(template))
m["version"] = version
m["tools"] = [{"name": t["name"], "description": t["description"]} for t in tools]
json.dump(m, sys.stdout, indent=2)
print()
PY
mcpb validate "$stage/bundle/manifest.json"
rm -f "dist/$name.mcpb" "dist/$name.mcpb.sha256"
mcpb pack "$stage/bundle" "dist/$name.mcpb" >&2
mcpb info "dist/$name.mcpb" >&2

# Serve the packed bundle as the host would and compare its tools with the manifest's.
mcpb unpack "dist/$name.mcpb" "$stage/unpacked" >&2
served=$(python3 - "$stage/unpacked" "$stage/work" <<'PY'
import json, os, subprocess, sys
d, work = sys.argv[1], sys.argv[2]
m = json.load(open(os.path.join(d, "manifest.json")))
user = {"workspace": work, "manifest": ""}
def sub(s):
    s = s.replace("${__dirname}", d)
    for k, v in user.items():
        s = s.replace("${user_config.%s}" % k, v)
    return s
c = m["server"]["mcp_config"]
env = {"PATH": "/usr/bin:/bin", "HOME": work}
env.update({k: sub(v) for k, v in c.get("env", {}).items()})
cmd = [sub(c["command"])] + [sub(a) for a in c.get("args", [])]
out = subprocess.run([cmd[0], "tools", "--json", "--"] + cmd, env=env, cwd="/",
                     capture_output=True, text=True, check=True).stdout
listed = [{"name": t["name"], "description": t["description"]} for t in json.loads(out)]
if listed != m["tools"]:
    sys.exit("tools/list of the bundle differs from its manifest:\n%s\n%s" % (listed, m["tools"]))
print(len(listed))
PY
)
say "the unpacked bundle serves the $served tools its manifest lists"
(cd dist && sha256sum "$name.mcpb" >"$name.mcpb.sha256")
bundle_sha=$(cut -d' ' -f1 "dist/$name.mcpb.sha256")

# The registry entry, with this bundle's hash, validated against the published schema.
if [ ! -x "$registry_dir/bin/python" ]; then
  python3 -m venv "$registry_dir"
fi
"$registry_dir/bin/python" -m pip install --quiet --disable-pip-version-check "$jsonschema"
"$registry_dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "$skillsaw"
python3 - "$version" "$bundle_sha" server.json >dist/server.json <<'PY'
import json, sys
version, sha, path = sys.argv[1:]
s = json.load(open(path))
for p in s["packages"]:
    if p["registryType"] == "mcpb":
        p["fileSha256"] = sha
json.dump(s, sys.stdout, indent=2)
print()
PY
"$registry_dir/bin/python" packaging/check_server_json.py "$schema_sha256" "$version" \
  server.json dist/server.json
if ! cmp -s server.json dist/server.json; then
  say "note: server.json's mcpb fileSha256 differs from this build's; publish dist/server.json"
fi
say "wrote dist/$name.mcpb ($bundle_sha) and dist/server.json"
