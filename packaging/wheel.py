#!/usr/bin/env python3
"""Writes the PyPI wheel of stdmcp: the static binary as the `stdmcp` script, nothing else.

usage: packaging/wheel.py BINARY ARCH VERSION README OUTDIR

ARCH is x86_64 or aarch64. The wheel is what maturin writes with `bindings = "bin"`
(PEP 427, PEP 491): `stdmcp-VERSION.data/scripts/stdmcp` (installed into the environment's
bin directory, mode 755) and `stdmcp-VERSION.dist-info/` with METADATA (the README as its
long description, which carries the `mcp-name:` line the MCP registry verifies), WHEEL
(`py3-none` and the platform tags: one static binary runs on glibc and musl alike, so the
wheel is tagged manylinux2014 / manylinux_2_17 and musllinux_1_1 at once) and RECORD (SHA-256
of every file, urlsafe base64 without padding). Entries are sorted and stamped 1980-01-01, so
the same binary gives the same wheel. Prints the wheel's path.
"""

import base64
import hashlib
import os
import sys
import zipfile

SUMMARY = (
    "Serve local programs as typed MCP tools from one static binary; "
    "read-only file tools built in."
)


def platform_tags(arch):
    return [
        "manylinux_2_17_%s" % arch,
        "manylinux2014_%s" % arch,
        "musllinux_1_1_%s" % arch,
    ]


def record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def metadata(version, readme):
    head = [
        "Metadata-Version: 2.1",
        "Name: stdmcp",
        "Version: %s" % version,
        "Summary: %s" % SUMMARY,
        "Home-page: https://github.com/stdmcp/stdmcp",
        "License: MIT OR Apache-2.0",
        "Keywords: mcp,model-context-protocol,agents,stdio",
        "Classifier: Environment :: Console",
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: Programming Language :: Rust",
        "Project-URL: Source, https://github.com/stdmcp/stdmcp",
        "Description-Content-Type: text/markdown; charset=UTF-8; variant=GFM",
    ]
    return ("\n".join(head) + "\n\n" + readme).encode()


def main():
    binary, arch, version, readme_path, outdir = sys.argv[1:]
    if arch not in ("x86_64", "aarch64"):
        sys.exit("wheel.py: ARCH must be x86_64 or aarch64")
    tags = platform_tags(arch)
    name = "stdmcp-%s-py3-none-%s.whl" % (version, ".".join(tags))
    info = "stdmcp-%s.dist-info" % version
    with open(binary, "rb") as f:
        exe = f.read()
    with open(readme_path, encoding="utf-8") as f:
        readme = f.read()
    if "mcp-name: io.github.stdmcp/stdmcp" not in readme:
        sys.exit("wheel.py: the README lacks the mcp-name line")
    wheel = "Wheel-Version: 1.0\nGenerator: stdmcp packaging/wheel.py\nRoot-Is-Purelib: false\n"
    wheel += "".join("Tag: py3-none-%s\n" % t for t in tags)
    files = [
        ("stdmcp-%s.data/scripts/stdmcp" % version, exe, 0o755),
        ("%s/METADATA" % info, metadata(version, readme), 0o644),
        ("%s/WHEEL" % info, wheel.encode(), 0o644),
    ]
    record = "".join("%s,%s,%d\n" % (p, record_hash(d), len(d)) for p, d, _ in files)
    record += "%s/RECORD,,\n" % info
    files.append(("%s/RECORD" % info, record.encode(), 0o644))
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p, data, mode in files:  # RECORD last, as PEP 427 recommends
            entry = zipfile.ZipInfo(p, date_time=(1980, 1, 1, 0, 0, 0))
            entry.external_attr = (0o100000 | mode) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data, compresslevel=9)
    print(path)


if __name__ == "__main__":
    main()
