#!/usr/bin/env bash
# Smoke run of a static binary of another architecture (aarch64) under qemu-user, driven by
# the host's stdmcp as the client.
#
# usage: scripts/qemu-smoke.sh AARCH64_BINARY HOST_BINARY
#
# Checks, with the aarch64 binary run by qemu-aarch64-static (Debian qemu-user-static; no
# binfmt_misc registration needed):
#   - `--version` prints `stdmcp VERSION`;
#   - `serve` with the built-in manifest answers `initialize` and `tools/list` and runs a
#     built-in tool (`list_directory` over a temporary workspace: the tool itself is the host's
#     `ls`, which qemu-user starts natively);
#   - a call cancelled by the client (`stdmcp call` interrupted with SIGINT sends
#     notifications/cancelled) kills the tool's process: the `sleep` it started is gone.
# What cannot work under qemu-user is listed in README ("Install"): the server's children of
# the guest architecture need binfmt_misc, and `stdmcp config` names qemu, not stdmcp, as the
# command (current_exe is the emulator).
set -euo pipefail

arm=${1:?usage: scripts/qemu-smoke.sh AARCH64_BINARY HOST_BINARY}
host=${2:?usage: scripts/qemu-smoke.sh AARCH64_BINARY HOST_BINARY}
qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
say() { printf 'qemu-smoke: %s\n' "$*" >&2; }
fail() { printf 'qemu-smoke: FAIL: %s\n' "$*" >&2; exit 1; }
[ -n "$qemu" ] || fail "qemu-aarch64-static not found (apt install qemu-user-static)"
readelf -h "$arm" | grep -q 'Machine: *AArch64' || fail "$arm is not an aarch64 executable"

work=$(mktemp -d "${TMPDIR:-/tmp}/stdmcp-qemu.XXXXXX")
pid_file=$work/sleep.pid
cleanup() {
  if [ -s "$pid_file" ]; then kill -9 "$(cat "$pid_file")" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/root"
echo hello >"$work/root/marker.txt"

version=$("$qemu" "$arm" --version)
case $version in "stdmcp "*) ;; *) fail "--version printed: $version" ;; esac
say "--version: $version"

builtin=(env STDMCP_ROOT="$work/root" "$qemu" "$arm" serve)
listed=$(timeout 60 "$host" tools --json -- "${builtin[@]}") || fail "initialize + tools/list failed"
case $listed in *'"list_directory"'*) ;; *) fail "tools/list lacks list_directory: $listed" ;; esac
called=$(timeout 60 "$host" call list_directory -- "${builtin[@]}") || fail "list_directory failed"
case $called in *marker.txt*) ;; *) fail "list_directory did not list marker.txt: $called" ;; esac
say "serve (built-in manifest): initialize, tools/list and list_directory passed"

# A tool that records the pid of the sleep it becomes, then sleeps; its call is cancelled. (It
# is confined: the directory it writes its pid in is declared writable.)
cat >"$work/slow.json" <<EOF
{"name": "slow", "version": "1.0.0",
 "tools": [{"name": "slow", "description": "Sleeps a minute.", "program": "sh",
            "writable": ["$work"],
            "args": ["-c", "echo \$\$ > '$pid_file'; exec sleep 60"], "timeoutSeconds": 120}]}
EOF
timeout 60 "$host" call slow -- "$qemu" "$arm" serve --config "$work/slow.json" \
  >"$work/call.out" 2>"$work/call.err" &
client=$!
for _ in $(seq 1 300); do
  [ -s "$pid_file" ] && break
  kill -0 "$client" 2>/dev/null || fail "the slow call ended early: $(cat "$work/call.err")"
  sleep 0.1
done
[ -s "$pid_file" ] || fail "the slow tool did not start"
sleep_pid=$(cat "$pid_file")
kill -0 "$sleep_pid" 2>/dev/null || fail "the tool's sleep ($sleep_pid) is not running"
kill -INT "$client"
status=0
wait "$client" || status=$?
[ "$status" = 130 ] || fail "the interrupted client exited $status, not 130: $(cat "$work/call.err")"
# The server killed the tool's process group before it answered the client's exit; allow
# the kernel a moment to reap it, as a deadline only.
for _ in $(seq 1 50); do
  kill -0 "$sleep_pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$sleep_pid" 2>/dev/null; then fail "the cancelled tool's sleep ($sleep_pid) still runs"; fi
say "cancel: the client's notifications/cancelled killed the tool's process ($sleep_pid)"
say "passed"
