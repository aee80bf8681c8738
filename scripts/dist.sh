#!/usr/bin/env bash
# Every distribution artifact, built into dist/, checked, then installed from dist/ as a user
# would.
#
# usage: scripts/dist.sh
#
# 1. The static binaries, x86_64 and aarch64 (scripts/static-build.sh: musl, fully static,
#    non-PIE, optimised for size; why musl and a pinned nightly: see there). Each must have no
#    interpreter and no NEEDED entry (readelf) and be under MAX_BYTES (default 2 MB,
#    2,000,000 bytes; on 2026-11-26, with the proof cursor, portfolios and the descriptor-based
#    file access, x86_64 1,701,584 and aarch64 1,508,328; before them 1,426,864 and 1,284,848;
#    after the workspace and peer restructuring of #22, 1,759,664 and 1,553,768).
# 2. x86_64 in an empty root (a directory holding only the binary, /tmp and /dev/null; chroot
#    as root, else `unshare -r` chroot): `stdmcp serve` with the built-in manifest starts,
#    answers tools/list and says on stderr which tools it left out for want of their programs;
#    with a one-tool manifest (its program the binary itself) it lists and runs the tool.
# 3. aarch64 under qemu-user (scripts/qemu-smoke.sh): --version, serve with initialize and
#    tools/list, a built-in tool call, a cancel that kills the tool's process.
# 4. dist/: stdmcp-VERSION-linux-ARCH (the binary) and .tar.gz (the binary, README.md,
#    docs/manifest.schema.json, examples/; reproducible: sorted, fixed mtime and owner), then
#    the wheels (scripts/wheels.sh), the npm tarballs (scripts/npm.sh), the Claude Desktop
#    bundle and dist/server.json (scripts/mcpb.sh); each of those scripts installs its
#    artifacts from dist/ offline and runs them. A `.sha256` file beside every artifact, and
#    SHA256SUMS with all of them.
# 5. The static binary installed from dist/ as README "Install" says (sha256sum -c, install),
#    and packaging/check_versions.py: one name and version in Cargo.toml, server.json, the
#    package.json files, the wheels' metadata and README's mcp-name line.
# Time on 2 cores shared with other work (2026-11-26): 164 to 278 s after a change to the
# crate, of which the two release builds take 1 to 1.7 minutes each (std is rebuilt too when
# the target directory is new: about 2 minutes more each); 72 s when both are already built.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
max_bytes=${MAX_BYTES:-2000000}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
started=$(date +%s)

say() { printf 'dist: %s\n' "$*" >&2; }
fail() { printf 'dist: FAIL: %s\n' "$*" >&2; exit 1; }

declare -A bins
for arch in x86_64 aarch64; do
  say "building stdmcp-$version-linux-$arch (static, release)"
  bin=$(scripts/static-build.sh "$arch" | tail -n 1)
  # No dynamic dependencies: no PT_INTERP segment, no DT_NEEDED entry.
  if readelf -lW "$bin" | grep -q 'INTERP'; then fail "$bin has a program interpreter"; fi
  if readelf -dW "$bin" | grep -q '(NEEDED)'; then fail "$bin needs shared libraries"; fi
  bytes=$(stat -c %s "$bin")
  if [ "$bytes" -gt "$max_bytes" ]; then fail "$bin is $bytes bytes, over $max_bytes"; fi
  say "$arch: no interpreter, no shared libraries, $bytes bytes (limit $max_bytes)"
  bins[$arch]=$bin
done
bin=${bins[x86_64]}

# An empty root: the binary, /tmp and /dev/null (the runner gives every tool stdin from
# /dev/null); then a one-tool manifest whose program is the binary itself.
root=$(mktemp -d "${TMPDIR:-/tmp}/stdmcp-empty-root.XXXXXX")
cleanup() {
  if mountpoint -q "$root/dev/null" 2>/dev/null; then umount "$root/dev/null" || true; fi
  rm -rf "$root"
}
trap cleanup EXIT
mkdir -p "$root/tmp" "$root/dev"
chmod 1777 "$root/tmp"
cp "$bin" "$root/stdmcp"
if [ "$(id -u)" = 0 ]; then
  mknod -m 666 "$root/dev/null" c 1 3
  enter=(chroot "$root")
else
  # Unprivileged: a user namespace (root inside) with its own mount namespace; /dev/null is
  # bind-mounted from the host inside it.
  touch "$root/dev/null"
  enter=(unshare --user --map-root-user --mount sh -c
    'mount --bind /dev/null "$0/dev/null" && exec chroot "$0" "$@"' "$root")
fi
contents=$(ls -A "$root" | tr '\n' ' ')
listed=$(timeout 30 "$bin" tools --json -- "${enter[@]}" /stdmcp serve 2>"$root.err") ||
  fail "the built-in manifest in the empty root did not answer tools/list: $(cat "$root.err")"
grep -q "tool list_directory left out (missingPrograms: skip): \`ls\` was not found" "$root.err" ||
  fail "the built-in manifest in the empty root did not say what is missing: $(cat "$root.err")"
say "empty root ($contents): serve with the built-in manifest answered tools/list ($(printf '%s' "$listed" | tr -d ' \n' | head -c 60)) and said: $(grep -c 'left out' "$root.err") tools left out, e.g. $(grep -m1 'left out' "$root.err" | cut -c1-90)…"
rm -f "$root.err"
cat >"$root/manifest.json" <<'EOF'
{
  "name": "empty-root",
  "version": "1.0.0",
  "tools": [
    {"name": "version", "description": "Prints the version of the stdmcp binary.",
     "program": "/stdmcp", "args": ["--version"], "timeoutSeconds": 10}
  ]
}
EOF
server=("${enter[@]}" /stdmcp serve --config /manifest.json)
listed=$(timeout 30 "$bin" tools --json -- "${server[@]}") || fail "tools/list in the empty root failed"
case $listed in
  *'"name": "version"'* | *'"name":"version"'*) ;;
  *) fail "tools/list in the empty root did not list the tool: $listed" ;;
esac
called=$(timeout 30 "$bin" call version -- "${server[@]}") || fail "the call in the empty root failed"
[ "$called" = "stdmcp $version" ] || fail "the call in the empty root printed: $called"
say "empty root with a manifest: serve, tools/list and a call passed"

scripts/qemu-smoke.sh "${bins[aarch64]}" "$bin"

mkdir -p dist
epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
for arch in x86_64 aarch64; do
  name=stdmcp-$version-linux-$arch
  rm -rf "dist/$name" "dist/$name".*
  cp "${bins[$arch]}" "dist/$name"
  stage=$(mktemp -d)
  mkdir -p "$stage/$name/docs"
  cp "${bins[$arch]}" "$stage/$name/stdmcp"
  cp README.md "$stage/$name/"
  cp docs/manifest.schema.json "$stage/$name/docs/"
  cp -r examples "$stage/$name/"
  find "$stage/$name/examples" -name '*.rs' -delete
  tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
    -C "$stage" -cf - "$name" | gzip -9 -n >"dist/$name.tar.gz"
  rm -rf "$stage"
  (cd dist && sha256sum "$name" >"$name.sha256" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
  say "wrote dist/$name and dist/$name.tar.gz, with .sha256"
done

scripts/wheels.sh
scripts/npm.sh
scripts/mcpb.sh

# The static binary as README "Install" has a user install it.
install_dir=$(mktemp -d)
(cd dist && sha256sum -c --quiet "stdmcp-$version-linux-x86_64.sha256") || fail "sha256sum -c failed"
install -m 755 "dist/stdmcp-$version-linux-x86_64" "$install_dir/stdmcp"
got=$("$install_dir/stdmcp" --version)
rm -rf "$install_dir"
[ "$got" = "stdmcp $version" ] || fail "the installed static binary printed: $got"
say "sha256sum -c and install of dist/stdmcp-$version-linux-x86_64: $got"

python3 packaging/check_versions.py dist
(cd dist && cat ./*.sha256 >SHA256SUMS)
say "dist/ ($(( $(date +%s) - started )) s):"
(cd dist && ls -l --time-style=+ | awk 'NR > 1 { printf "  %10s  %s\n", $5, $NF }') >&2
