#!/usr/bin/env bash
# The PyPI wheels of stdmcp, built from the static binaries in dist/, then installed offline as
# a user would.
#
# usage: scripts/wheels.sh      (after scripts/dist.sh has put both static binaries in dist/)
#
# 1. packaging/wheel.py writes dist/stdmcp-VERSION-py3-none-{manylinux…,musllinux…}_ARCH.whl
#    for x86_64 and aarch64: the binary as the `stdmcp` script and nothing else (the layout
#    maturin writes with `bindings = "bin"`), the README (with its `mcp-name:` line) as the
#    long description, RECORD hashes checked here by pip itself at install.
# 2. x86_64: `pip install --no-index ./stdmcp-…whl` into a fresh venv; the installed script is
#    byte-for-byte the static binary; `stdmcp serve` answers tools/list; and
#    `uvx --offline --from ./stdmcp-…whl stdmcp --version` with uv pinned from PyPI
#    (UV_VERSION, installed into $UV_DIR, default target/uv) and an empty uv cache.
# 3. aarch64: pip installs it for its platform (--platform manylinux2014_aarch64 --target) and
#    the installed script, the same bytes as the aarch64 binary, prints its version under qemu.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
uv_version=${UV_VERSION:-0.13.9}
uv_dir=${UV_DIR:-$repo/target/uv}
say() { printf 'wheels: %s\n' "$*" >&2; }
fail() { printf 'wheels: FAIL: %s\n' "$*" >&2; exit 1; }

for arch in x86_64 aarch64; do
  [ -x "dist/stdmcp-$version-linux-$arch" ] || fail "dist/stdmcp-$version-linux-$arch is missing: run scripts/dist.sh"
done
rm -f dist/stdmcp-"$version"-py3-none-*.whl dist/stdmcp-"$version"-py3-none-*.whl.sha256
for arch in x86_64 aarch64; do
  whl=$(python3 packaging/wheel.py "dist/stdmcp-$version-linux-$arch" "$arch" "$version" README.md dist)
  (cd dist && sha256sum "$(basename "$whl")" >"$(basename "$whl").sha256")
  say "wrote $whl ($(stat -c %s "$whl") bytes)"
done
x86_whl=$(ls dist/stdmcp-"$version"-py3-none-manylinux_2_17_x86_64*.whl)
arm_whl=$(ls dist/stdmcp-"$version"-py3-none-manylinux_2_17_aarch64*.whl)

work=$(mktemp -d "${TMPDIR:-/tmp}/stdmcp-wheels.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root"
echo hello >"$work/root/marker.txt"

# pip, offline, into a fresh venv.
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index --disable-pip-version-check "$x86_whl"
cmp "$work/venv/bin/stdmcp" "dist/stdmcp-$version-linux-x86_64" ||
  fail "the installed script differs from the static binary"
[ -x "$work/venv/bin/stdmcp" ] || fail "the installed script is not executable"
[ "$("$work/venv/bin/pip" show stdmcp | sed -n "s/^Version: //p")" = "$version" ] || fail "pip show: not version $version"
listed=$(cd / && STDMCP_ROOT="$work/root" timeout 30 "$work/venv/bin/stdmcp" tools --json -- \
  "$work/venv/bin/stdmcp" serve) || fail "stdmcp serve from the venv did not answer tools/list"
case $listed in *'"list_directory"'*) ;; *) fail "tools/list from the venv: $listed" ;; esac
say "pip install $(basename "$x86_whl") into a fresh venv: the same bytes; serve answers tools/list"

# uvx, offline, with an empty cache; uv itself pinned from PyPI.
if [ "$("$uv_dir/bin/uv" --version 2>/dev/null)" != "uv $uv_version" ]; then
  rm -rf "$uv_dir"
  python3 -m venv "$uv_dir"
  "$uv_dir/bin/pip" install --quiet --disable-pip-version-check "uv==$uv_version"
fi
got=$(UV_CACHE_DIR="$work/uv-cache" UV_TOOL_DIR="$work/uv-tools" UV_NO_CONFIG=1 \
  "$uv_dir/bin/uvx" --offline --from "./$x86_whl" stdmcp --version) || fail "uvx --offline failed"
[ "$got" = "stdmcp $version" ] || fail "uvx --offline … stdmcp --version printed: $got"
say "uvx --offline --from ./$x86_whl stdmcp --version: $got (uv $uv_version)"

# The aarch64 wheel, installed by pip for its own platform, run under qemu.
"$work/venv/bin/pip" install --quiet --no-index --disable-pip-version-check --only-binary=:all: \
  --platform manylinux2014_aarch64 --target "$work/arm" "$arm_whl"
cmp "$work/arm/bin/stdmcp" "dist/stdmcp-$version-linux-aarch64" ||
  fail "the aarch64 wheel's script differs from the aarch64 binary"
got=$(qemu-aarch64-static "$work/arm/bin/stdmcp" --version)
[ "$got" = "stdmcp $version" ] || fail "the aarch64 wheel's stdmcp --version printed: $got"
say "pip install --platform manylinux2014_aarch64 $(basename "$arm_whl"): the same bytes; --version under qemu: $got"
