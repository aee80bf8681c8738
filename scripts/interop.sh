#!/usr/bin/env bash
# Interoperability checks: drive stdmcp's stdio servers with the official MCP clients.
#
# usage: scripts/interop.sh [--server CMD [ARGS...]]
#
#   --server CMD...          server under test (the "everything" example); all remaining
#                            arguments form the command. Default: $STDMCP_SERVER, else
#                            target/debug/examples/everything
#   STDMCP_SERVER            same, as one shell command string
#   STDMCP_MANIFEST_SERVER   optional second target, e.g.
#                            "target/debug/stdmcp serve --config scripts/interop/test-manifest.json";
#                            connect, tools/list and calls of its tools run on it
#   INTEROP_DIR              install dir for the pinned SDKs (default target/interop); reused while
#                            scripts/interop/requirements.txt and package-lock.json are unchanged
#
# Clients (pinned in scripts/interop/requirements.txt, package.json, package-lock.json):
#   py     Python SDK `mcp` (ClientSession + stdio_client)       eras: default, auto
#   ts-v1  @modelcontextprotocol/sdk 1.x                          eras: default (auto is SKIPped)
#   ts-v2  @modelcontextprotocol/client 2.x                       eras: default, auto
#          (also answers an elicitation and roots/list: requests in default, input_required
#          results fulfilled and retried in auto, the 2026-07-28 multi-round-trip flow)
#   insp   @modelcontextprotocol/inspector --cli                  eras: default, auto, modern
# Every result is one line `PASS|FAIL|SKIP <sdk> <era> <target>/<check>`; the last line is
# `N passed, M failed` and the exit status is non-zero when M > 0. Client stderr (and the
# server's) goes to $INTEROP_DIR/logs/. The SDKs start servers with a filtered environment
# (HOME, PATH, USER, ...): put variables the server needs into the command (`env RUST_LOG=...`).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
here=$repo/scripts/interop
dir=${INTEROP_DIR:-$repo/target/interop}
cd "$repo"

server=${STDMCP_SERVER:-target/debug/examples/everything}
if [[ ${1:-} == --server ]]; then
  shift
  [[ $# -gt 0 ]] || { echo "interop.sh: --server needs a command" >&2; exit 2; }
  server=$(printf '%q ' "$@")
elif [[ $# -gt 0 ]]; then
  sed -n '3,12p' "$repo/scripts/interop.sh" >&2
  exit 2
fi

# The targets: (name, shell command). Only the target named "everything" gets the full suite.
target_names=(everything)
target_cmds=("$server")
if [[ -n ${STDMCP_MANIFEST_SERVER:-} ]]; then
  target_names+=(manifest)
  target_cmds+=("$STDMCP_MANIFEST_SERVER")
fi

# --- install the pinned clients (reused while the pins are unchanged) ---
mkdir -p "$dir/logs"
rm -f "$dir"/logs/*
py_stamp="$(python3 --version) $(sha256sum <"$here/requirements.txt")"
if [[ ! -x $dir/venv/bin/python || $(cat "$dir/venv/.interop-stamp" 2>/dev/null) != "$py_stamp" ]]; then
  echo "interop: installing Python SDK into $dir/venv" >&2
  rm -rf "$dir/venv"
  python3 -m venv "$dir/venv"
  "$dir/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
  echo "$py_stamp" >"$dir/venv/.interop-stamp"
fi
node_stamp="$(node --version) $(cat "$here/package.json" "$here/package-lock.json" | sha256sum)"
if [[ ! -d $dir/node/node_modules || $(cat "$dir/node/.interop-stamp" 2>/dev/null) != "$node_stamp" ]]; then
  echo "interop: installing TypeScript SDKs and Inspector into $dir/node" >&2
  rm -rf "$dir/node"
  mkdir -p "$dir/node"
  cp "$here/package.json" "$here/package-lock.json" "$dir/node/"
  # --ignore-scripts: the Inspector's postinstall only matters in its own source checkout.
  (cd "$dir/node" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
  echo "$node_stamp" >"$dir/node/.interop-stamp"
fi
# Node resolves ESM imports next to the importing file, so the TS clients run from $dir/node.
cp "$here"/*.mjs "$dir/node/"

# --- run ---
results=$dir/results.txt
: >"$results"
report() { echo "$*" | tee -a "$results"; }

# run_client SDK ERA TARGET WRAPPER CMD...: run a client program under a hard deadline.
run_client() {
  local sdk=$1 era=$2 target=$3 log=$dir/logs/$1-$2-$3.log rc=0 out
  shift 3
  out=$(timeout 180 "$@" 2>"$log") || rc=$?
  [[ -z $out ]] || echo "$out" | tee -a "$results"
  if ((rc == 124)); then
    report "FAIL $sdk $era $target/client: killed after 180 s (see $log)"
  elif ((rc != 0)) || [[ -z $out ]]; then
    report "FAIL $sdk $era $target/client: exited with status $rc (see $log)"
  fi
}

# inspector ERA TARGET CHECK JS-ASSERTION INSPECTOR-ARGS...: one `--cli` call, output checked by
# a JS expression over `r` (the JSON result) that evaluates to an error string or to true/a note.
inspector() {
  local era=$1 target=$2 check=$3 assertion=$4 log=$dir/logs/insp-$1-$2.log out rc=0 verdict
  shift 4
  local era_args=()
  [[ $era == default ]] || era_args=(--protocol-era "$era")
  # The server goes before the method options: --tool-arg is variadic and would swallow it.
  out=$(timeout 60 "$dir/node/node_modules/.bin/mcp-inspector" --cli "${era_args[@]}" --format json \
    "$dir/server-$target.sh" "$@" 2>"$log.last") || rc=$?
  cat "$log.last" >>"$log"
  # On failure the Inspector prints its JSON error envelope on stderr instead of stdout.
  [[ -n $out ]] || out=$(tail -n 1 "$log.last")
  verdict=$(printf '%s' "$out" | node -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      let r; try { r = JSON.parse(s).result; } catch { console.log("FAIL: " + (s ? "unparsable output: " + s.slice(0, 200) : "no output")); return; }
      if (!r) { console.log("FAIL: " + (JSON.parse(s).error?.message ?? s.slice(0, 200))); return; }
      const v = ('"$assertion"');
      console.log(v === true ? "PASS" : typeof v === "string" && v.startsWith("note:") ? "PASS " + v.slice(5) : "FAIL: " + v);
    });')
  case $verdict in
    PASS) report "PASS insp $era $target/$check" ;;
    PASS*) report "PASS insp $era $target/$check (${verdict#PASS })" ;;
    *) report "FAIL insp $era $target/$check: ${verdict#FAIL: }$( ((rc == 0)) || echo " (exit $rc)")" ;;
  esac
}

for i in "${!target_names[@]}"; do
  target=${target_names[$i]}
  cmd=${target_cmds[$i]}
  # Every client starts the server through this wrapper, so commands keep their shell quoting.
  printf '#!/bin/sh\ncd %q || exit 1\nexec %s\n' "$repo" "$cmd" >"$dir/server-$target.sh"
  chmod +x "$dir/server-$target.sh"
  first=$(eval "set -- $cmd"; echo "${1:-}")
  if ! command -v "$first" >/dev/null; then
    report "FAIL setup - $target/server: '$first' not found (build it first, or pass --server)"
    continue
  fi
  wrapper=$dir/server-$target.sh

  for era in default auto; do
    run_client py "$era" "$target" "$dir/venv/bin/python" "$here/py_client.py" "$target" "$era" "$wrapper"
  done
  for era in default auto; do
    run_client ts-v1 "$era" "$target" node "$dir/node/ts_v1_client.mjs" "$target" "$era" "$wrapper"
  done
  for era in default auto; do
    run_client ts-v2 "$era" "$target" node "$dir/node/ts_v2_client.mjs" "$target" "$era" "$wrapper"
  done

  for era in default auto modern; do
    want=$([[ $era == default ]] && echo "" || echo 2026-07-28)
    inspector "$era" "$target" initialize \
      "'$want' && r.protocolVersion !== '$want' ? 'negotiated ' + r.protocolVersion + ', want $want' : 'note:protocolVersion=' + r.protocolVersion" \
      --method initialize
    if [[ $target == everything ]]; then
      inspector "$era" "$target" tools/list \
        "((n) => ['echo','add','sleep','fail'].every((t) => n.includes(t)) || 'tools: ' + n)(r.tools.map((t) => t.name))" \
        --method tools/list
      inspector "$era" "$target" tools/call-echo \
        "(!r.isError && r.content[0]?.text === 'hi') || JSON.stringify(r).slice(0, 200)" \
        --method tools/call --tool-name echo --tool-arg text=hi
    else
      inspector "$era" "$target" tools/list "r.tools.length > 0 || 'no tools'" --method tools/list
      inspector "$era" "$target" tools/call-echo_args \
        "(!r.isError && r.content[0]?.text === 'hi\\n') || JSON.stringify(r).slice(0, 200)" \
        --method tools/call --tool-name echo_args --tool-arg text=hi
    fi
  done
done

passed=$(grep -c '^PASS ' "$results" || true)
failed=$(grep -c '^FAIL ' "$results" || true)
echo "$passed passed, $failed failed"
((failed == 0))
