#!/usr/bin/env bash
# The one-file distribution: a fully static Linux x86_64 binary, checked and packed.
#
# usage: scripts/dist.sh
#
# Builds `stdmcp` with scripts/static-build.sh (musl, fully static, non-PIE, optimised for
# size; why musl and a pinned nightly: see there), then checks that
#   - it has no interpreter and no NEEDED entries (readelf), so no shared library is loaded;
#   - it is under MAX_BYTES (default 1.5 MB, 1,500,000 bytes; 1,444,496 on 2026-11-23);
#   - inside an empty root (a directory holding only the binary, a manifest, /tmp and
#     /dev/null; chroot as root, else `unshare -r` chroot), `stdmcp serve` answers tools/list
#     and runs a tool, driven by the same binary as the client.
# Writes into dist/:
#   stdmcp-VERSION-linux-x86_64               the binary
#   stdmcp-VERSION-linux-x86_64.tar.gz        the binary, README.md, docs/manifest.schema.json,
#                                             examples/ (reproducible: sorted, fixed mtime/owner)
#   *.sha256                                  `sha256sum` lines for both
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
max_bytes=${MAX_BYTES:-1500000}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
name=stdmcp-$version-linux-x86_64

say() { printf 'dist: %s\n' "$*" >&2; }
fail() { printf 'dist: FAIL: %s\n' "$*" >&2; exit 1; }

say "building $name (static, release)"
bin=$(scripts/static-build.sh | tail -n 1)

# No dynamic dependencies: no PT_INTERP segment, no DT_NEEDED entry.
if readelf -lW "$bin" | grep -q 'INTERP'; then fail "$bin has a program interpreter"; fi
if readelf -dW "$bin" | grep -q '(NEEDED)'; then fail "$bin needs shared libraries"; fi
say "no interpreter, no shared libraries"

bytes=$(stat -c %s "$bin")
if [ "$bytes" -gt "$max_bytes" ]; then fail "$bin is $bytes bytes, over $max_bytes"; fi
say "size $bytes bytes (limit $max_bytes)"

# An empty root: the binary, a one-tool manifest whose program is the binary itself, /tmp
# and /dev/null (the runner gives every tool stdin from /dev/null).
root=$(mktemp -d "${TMPDIR:-/tmp}/stdmcp-empty-root.XXXXXX")
cleanup() {
  if mountpoint -q "$root/dev/null" 2>/dev/null; then umount "$root/dev/null" || true; fi
  rm -rf "$root"
}
trap cleanup EXIT
mkdir -p "$root/tmp" "$root/dev"
chmod 1777 "$root/tmp"
cp "$bin" "$root/stdmcp"
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
server=("${enter[@]}" /stdmcp serve --config /manifest.json)
listed=$(timeout 30 "$bin" tools --json -- "${server[@]}") || fail "tools/list in the empty root failed"
case $listed in
  *'"name": "version"'* | *'"name":"version"'*) ;;
  *) fail "tools/list in the empty root did not list the tool: $listed" ;;
esac
called=$(timeout 30 "$bin" call version -- "${server[@]}") || fail "the call in the empty root failed"
[ "$called" = "stdmcp $version" ] || fail "the call in the empty root printed: $called"
say "empty root ($(ls -A "$root" | tr '\n' ' ')): serve, tools/list and a call passed"

mkdir -p dist
rm -rf "dist/$name" "dist/$name".*
cp "$bin" "dist/$name"
stage=$(mktemp -d)
mkdir -p "$stage/$name/docs"
cp "$bin" "$stage/$name/stdmcp"
cp README.md "$stage/$name/"
cp docs/manifest.schema.json "$stage/$name/docs/"
cp -r examples "$stage/$name/"
find "$stage/$name/examples" -name '*.rs' -delete
epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
  -C "$stage" -cf - "$name" | gzip -9 -n >"dist/$name.tar.gz"
rm -rf "$stage"
(cd dist && sha256sum "$name" >"$name.sha256" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
say "wrote dist/$name, dist/$name.tar.gz and their .sha256"
cat "dist/$name.sha256" "dist/$name.tar.gz.sha256"
