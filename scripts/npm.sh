#!/usr/bin/env bash
# The npm packages of stdmcp, packed from the static binaries in dist/, then installed offline
# into empty projects as a user would.
#
# usage: scripts/npm.sh      (after scripts/dist.sh has put both static binaries in dist/)
#
# 1. Stages packaging/npm/ (the `stdmcp` launcher package and the per-platform packages
#    @stdmcp/linux-x64 and @stdmcp/linux-arm64, with their `os` and `cpu` fields) with the
#    binaries and README.md, and packs each with `npm pack` into dist/ (*.tgz, and .sha256).
#    The platform tarballs must hold the binaries byte for byte, mode 755; the launcher
#    package has no install script.
# 2. x64: `npm install --offline` of the launcher and x64 tarballs into an empty project (npm
#    resolves the launcher's optional dependency to the x64 tarball and skips the arm64 one by
#    its `cpu`); then `npx --offline stdmcp --version`, and `npx --offline stdmcp serve`
#    answering tools/list; `stdmcp call` through the launcher, interrupted with SIGINT, is
#    cancelled and exits 130 (the signal forwarded, the exit code passed back); and a launcher
#    killed with SIGKILL leaves no server behind.
# 3. arm64: the same install with `--cpu=arm64`; the launcher, with process.arch arm64 and its
#    spawn going through qemu-aarch64-static, runs @stdmcp/linux-arm64's binary: --version
#    and serve answering tools/list.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
say() { printf 'npm: %s\n' "$*" >&2; }
fail() { printf 'npm: FAIL: %s\n' "$*" >&2; exit 1; }
npm_quiet=(--no-audit --no-fund --loglevel=error)

for arch in x86_64 aarch64; do
  [ -x "dist/stdmcp-$version-linux-$arch" ] || fail "dist/stdmcp-$version-linux-$arch is missing: run scripts/dist.sh"
done
work=$(mktemp -d "${TMPDIR:-/tmp}/stdmcp-npm.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r packaging/npm "$work/stage"
cp README.md "$work/stage/stdmcp/"
install -m 755 "dist/stdmcp-$version-linux-x86_64" "$work/stage/linux-x64/bin/stdmcp" -D
install -m 755 "dist/stdmcp-$version-linux-aarch64" "$work/stage/linux-arm64/bin/stdmcp" -D
chmod 755 "$work/stage/stdmcp/bin/stdmcp.js"

tarballs=(stdmcp-$version.tgz stdmcp-linux-x64-$version.tgz stdmcp-linux-arm64-$version.tgz)
for t in "${tarballs[@]}"; do rm -f "dist/$t" "dist/$t.sha256"; done
npm pack "${npm_quiet[@]}" --pack-destination "$repo/dist" \
  "$work/stage/stdmcp" "$work/stage/linux-x64" "$work/stage/linux-arm64" >/dev/null
for t in "${tarballs[@]}"; do
  [ -f "dist/$t" ] || fail "npm pack did not write dist/$t"
  (cd dist && sha256sum "$t" >"$t.sha256")
done
for p in x64:x86_64 arm64:aarch64; do
  t=dist/stdmcp-linux-${p%%:*}-$version.tgz
  tar -xzOf "$t" package/bin/stdmcp | cmp - "dist/stdmcp-$version-linux-${p##*:}" ||
    fail "$t does not hold the ${p##*:} binary"
  tar -tvzf "$t" package/bin/stdmcp | grep -q '^-rwxr-xr-x' || fail "$t: bin/stdmcp is not mode 755"
done
tar -xzOf "dist/stdmcp-$version.tgz" package/package.json | python3 -c '
import json, sys
p = json.load(sys.stdin)
assert not any(k in p.get("scripts", {}) for k in ("preinstall", "install", "postinstall")), p
assert p["mcpName"] == "io.github.stdmcp/stdmcp", p
' || fail "the stdmcp package has an install script or no mcpName"
say "packed dist/${tarballs[0]}, dist/${tarballs[1]}, dist/${tarballs[2]} ($(stat -c %s "dist/${tarballs[1]}") and $(stat -c %s "dist/${tarballs[2]}") bytes for the binaries)"

# x64: an empty project, installed offline from the tarballs.
mkdir -p "$work/x64" "$work/arm64" "$work/root"
# An empty project (so that npm does not climb to a package.json above the temp directory).
echo '{"private": true}' >"$work/x64/package.json"
echo '{"private": true}' >"$work/arm64/package.json"
echo hello >"$work/root/marker.txt"
(cd "$work/x64" && npm install --offline "${npm_quiet[@]}" \
  "$repo/dist/${tarballs[0]}" "$repo/dist/${tarballs[1]}" >/dev/null)
[ ! -e "$work/x64/node_modules/@stdmcp/linux-arm64" ] || fail "npm installed the arm64 package on x64"
got=$(cd "$work/x64" && npx --offline stdmcp --version)
[ "$got" = "stdmcp $version" ] || fail "npx stdmcp --version printed: $got"
host=$repo/dist/stdmcp-$version-linux-x86_64
listed=$(cd "$work/x64" && STDMCP_ROOT="$work/root" timeout 60 "$host" tools --json -- \
  npx --offline stdmcp serve) || fail "npx stdmcp serve did not answer tools/list"
case $listed in *'"list_directory"'*) ;; *) fail "tools/list through npx: $listed" ;; esac
say "npm install --offline into an empty project: npx stdmcp --version ($got); npx stdmcp serve answers tools/list"

# The launcher forwards SIGINT to the binary and passes its exit code back: `stdmcp call`
# interrupted mid-call cancels it and exits 130. (The tool is confined: the directory it writes
# its pid in is declared writable.)
cat >"$work/slow.json" <<EOF
{"name": "slow", "version": "1.0.0",
 "tools": [{"name": "slow", "description": "Sleeps a minute.", "program": "sh",
            "writable": ["$work"],
            "args": ["-c", "echo \$\$ > '$work/started'; exec sleep 60"]}]}
EOF
(cd "$work/x64" && exec node node_modules/stdmcp/bin/stdmcp.js call slow -- \
  "$host" serve --config "$work/slow.json" >/dev/null 2>"$work/call.err") &
launcher=$!
for _ in $(seq 1 300); do [ -s "$work/started" ] && break; sleep 0.1; done
[ -s "$work/started" ] || fail "the slow call did not start: $(cat "$work/call.err")"
kill -INT "$launcher"
status=0
wait "$launcher" || status=$?
[ "$status" = 130 ] || fail "the launcher exited $status after SIGINT, not 130: $(cat "$work/call.err")"
# Had the launcher died of the SIGINT instead of forwarding it, the client would still be
# waiting and the tool's sleep still running.
sleep_pid=$(cat "$work/started")
for _ in $(seq 1 50); do kill -0 "$sleep_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$sleep_pid" 2>/dev/null; then
  kill -9 "$sleep_pid"
  fail "SIGINT to the launcher did not cancel the call: the tool's sleep still ran"
fi
say "the launcher forwarded SIGINT (the call cancelled, its tool killed) and exited 130"

# A launcher killed with SIGKILL (nothing to forward) leaves no server behind: the server's
# stdin is the launcher's pipe, so it reads EOF and exits, though the client's end is open.
mkfifo "$work/client"
sleep 60 >"$work/client" &
holder=$!
(cd "$work/x64" && exec node node_modules/stdmcp/bin/stdmcp.js serve <"$work/client" >/dev/null 2>&1) &
launcher=$!
server_pid=
for _ in $(seq 1 100); do
  server_pid=$(ps -o pid= --ppid "$launcher" | tr -d " " || true)
  [ -n "$server_pid" ] && break
  sleep 0.1
done
[ -n "$server_pid" ] || fail "the launcher did not start the server"
kill -9 "$launcher"
wait "$launcher" 2>/dev/null || true
for _ in $(seq 1 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
alive=0
kill -0 "$server_pid" 2>/dev/null && alive=1
kill "$holder" 2>/dev/null || true
if [ "$alive" = 1 ]; then
  kill "$server_pid"
  fail "the server outlived its launcher's SIGKILL by 10 s"
fi
say "the launcher SIGKILLed: its server read EOF and exited"

# arm64: installed for that cpu; the launcher resolves its package; the binary runs under qemu.
# (--force: npm refuses a tarball named on the command line for another cpu even with --cpu.)
(cd "$work/arm64" && npm install --offline --cpu=arm64 --os=linux --force "${npm_quiet[@]}" \
  "$repo/dist/${tarballs[0]}" "$repo/dist/${tarballs[2]}" >/dev/null)
resolved=$work/arm64/node_modules/@stdmcp/linux-arm64/bin/stdmcp
cmp "$resolved" "dist/stdmcp-$version-linux-aarch64" || fail "arm64 install: $resolved is not the aarch64 binary"
# The launcher itself, told it runs on arm64, with its spawn going through qemu (no binfmt_misc
# here): it must pick @stdmcp/linux-arm64 and serve from it.
cat >"$work/arm64.cjs" <<'EOF'
Object.defineProperty(process, "arch", { value: "arm64" });
const cp = require("child_process");
const spawn = cp.spawn;
cp.spawn = (cmd, args, opts) => spawn("qemu-aarch64-static", [cmd, ...args], opts);
EOF
arm_npx=(node --require "$work/arm64.cjs" "$work/arm64/node_modules/stdmcp/bin/stdmcp.js")
got=$("${arm_npx[@]}" --version)
[ "$got" = "stdmcp $version" ] || fail "the launcher on arm64 printed: $got"
listed=$(STDMCP_ROOT="$work/root" timeout 60 "$host" tools --json -- "${arm_npx[@]}" serve) ||
  fail "the launcher on arm64 did not serve tools/list"
case $listed in *'"list_directory"'*) ;; *) fail "tools/list through the arm64 launcher: $listed" ;; esac
say "npm install --offline --cpu=arm64: the launcher runs @stdmcp/linux-arm64 under qemu: --version ($got), serve answers tools/list"
