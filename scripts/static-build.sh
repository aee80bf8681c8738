#!/usr/bin/env bash
# Builds the one-file distribution binary: `stdmcp`, fully static, for Linux on musl, optimised
# for size, for x86_64 (the default) or aarch64 (cross-compiled from x86_64). Prints the
# binary's path as its last line. Used by scripts/dist.sh (which checks and packs both) and by
# scripts/bench.sh (the `stdmcp-static` cold start, x86_64).
#
# usage: scripts/static-build.sh [x86_64|aarch64]
#
# Why musl and a pinned nightly (measured on 2026-11-23, the same source):
#   glibc, crt-static, opt-level z            2,562,712 bytes: static glibc alone is ~880 KB,
#                                             because __libc_start_main reaches assert, gettext,
#                                             iconv and dlopen, whatever the program calls
#   musl, opt-level z                         1,864,704 bytes (musl itself is ~70 KB)
#   musl, std rebuilt (-Zbuild-std) without   1,445,136 bytes
#     std's backtrace printer, for size
#     (core's optimize_for_size), no panic
#     locations, lld with identical code
#     folding
# The first two need only stable Rust; the last needs a nightly with rust-src, pinned here so
# that its unstable flags keep working and the size does not move with the compiler (the size
# still varies by about 10 KB with the checkout's path: 1,434,576 bytes in a clone under /tmp).
# The toolchain, rust-src and the musl target are installed with rustup if missing.
#
# aarch64 (1,284,848 bytes on 2026-11-26) needs no C cross toolchain: the crate and its
# dependencies compile no C, and the target's rust-std ships musl's crt objects, libc.a and
# libunwind.a ("self-contained"), so the toolchain's own rust-lld links it directly
# (linker-flavor ld.lld). x86_64 links through the host's cc driver with lld, as measured above.
#
# What the static build gives up: panics print their message without file and line, and no
# backtrace (RUST_BACKTRACE has no effect); the server still catches a panicking tool handler
# and answers with an error (panic = "unwind" is kept). musl's allocator is slower than glibc's
# under many threads; docs/bench.md measures the static binary next to the dynamic one.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
toolchain=${STDMCP_STATIC_TOOLCHAIN:-nightly-2026-10-29}
arch=${1:-x86_64}
case $arch in
  x86_64)
    target=x86_64-unknown-linux-musl
    link="-C link-self-contained=+linker -C linker-features=+lld -C link-arg=-Wl,--icf=all" ;;
  aarch64)
    target=aarch64-unknown-linux-musl
    link="-C linker=rust-lld -C linker-flavor=ld.lld -C link-self-contained=yes -C link-arg=--icf=all" ;;
  *) echo "usage: scripts/static-build.sh [x86_64|aarch64]" >&2; exit 2 ;;
esac

if ! rustup run "$toolchain" rustc --version >/dev/null 2>&1; then
  rustup toolchain install "$toolchain" --profile minimal
fi
installed=$(rustup +"$toolchain" component list --installed)
case $installed in *rust-src*) ;; *) rustup +"$toolchain" component add rust-src ;; esac
case $installed in *"rust-std-$target"*) ;; *) rustup +"$toolchain" target add "$target" ;; esac

# relocation-model=static: no PIE, so nothing to relocate at start. lld (shipped with the
# toolchain) for --icf=all, which folds functions whose code is identical (monomorphised
# copies). location-detail=none: panic messages without file:line, ~40 KB of strings.
RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static \
-Z location-detail=none -Z unstable-options $link" \
  CARGO_PROFILE_RELEASE_OPT_LEVEL=z \
  cargo +"$toolchain" build --release --locked --target "$target" --bin stdmcp \
  -Z build-std -Z build-std-features=panic-unwind,optimize_for_size \
  -j "${CARGO_BUILD_JOBS:-2}" >&2
echo "target/$target/release/stdmcp"
