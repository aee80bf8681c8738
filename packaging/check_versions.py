#!/usr/bin/env python3
"""One name and one version everywhere a registry or a user reads them.

usage: packaging/check_versions.py [DIST]

Compares Cargo.toml (the command's name, the version), server.json (name, version, and each package's
identifier and version), the npm packages' package.json files (packaging/npm: names, versions,
the launcher's optionalDependencies and mcpName), README.md's `mcp-name:` line, and, when DIST
(default dist/) holds them, the wheels' METADATA (Name, Version, the `mcp-name:` line of the
README they carry, RECORD hashes) and the packed npm tarballs' package.json. Prints every
mismatch and exits 1 if there is one.
"""
import base64
import hashlib
import io
import json
import pathlib
import re
import sys
import tarfile
import zipfile

repo = pathlib.Path(__file__).resolve().parent.parent
dist = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else repo / "dist"
problems = []


def expect(what, got, want):
    if got != want:
        problems.append(f"{what}: {got!r}, expected {want!r}")


cargo = (repo / "Cargo.toml").read_text()
# The name distributed is the command's, the root package's `[[bin]]` (the package itself is
# stdmcp-cli; stdmcp is the runtime library's); the version is the workspace's.
crate = re.search(r'^\[\[bin\]\]\nname = "(.*)"$', cargo, re.M).group(1)
version = re.search(r'^version = "(.*)"$', cargo, re.M).group(1)
server = json.loads((repo / "server.json").read_text())
mcp_name = server["name"]
expect("server.json version", server["version"], version)
for p in server["packages"]:
    kind = p["registryType"]
    expect(f"server.json {kind} version", p.get("version"), version)
    if kind in ("pypi", "npm"):
        expect(f"server.json {kind} identifier", p["identifier"], crate)
    elif kind == "mcpb":
        url = f"/releases/download/v{version}/{crate}-{version}-linux-x86_64.mcpb"
        if not p["identifier"].endswith(url):
            problems.append(f"server.json mcpb identifier {p['identifier']} does not end in {url}")
kinds = sorted(p["registryType"] for p in server["packages"])
expect("server.json package types", kinds, ["mcpb", "npm", "pypi"])

readme = (repo / "README.md").read_text()
names = re.findall(r"mcp-name: (\S+)", readme)
expect("README.md mcp-name lines", names, [mcp_name])

platforms = {"linux-x64": "x64", "linux-arm64": "arm64"}
npm_dir = repo / "packaging/npm"
main = json.loads((npm_dir / "stdmcp/package.json").read_text())
expect("npm stdmcp name", main["name"], crate)
expect("npm stdmcp version", main["version"], version)
expect("npm stdmcp mcpName", main.get("mcpName"), mcp_name)
expect("npm stdmcp optionalDependencies", main.get("optionalDependencies"),
       {f"@{crate}/{d}": version for d in platforms})
for d, cpu in platforms.items():
    pkg = json.loads((npm_dir / d / "package.json").read_text())
    expect(f"npm {d} name", pkg["name"], f"@{crate}/{d}")
    expect(f"npm {d} version", pkg["version"], version)
    expect(f"npm {d} os/cpu", (pkg.get("os"), pkg.get("cpu")), (["linux"], [cpu]))

for t in sorted(dist.glob(f"{crate}-*{version}.tgz")):
    with tarfile.open(t) as tf:
        pkg = json.load(tf.extractfile("package/package.json"))
    expect(f"{t.name} version", pkg["version"], version)
    if pkg["name"] == crate:
        expect(f"{t.name} mcpName", pkg.get("mcpName"), mcp_name)

wheels = sorted(dist.glob(f"{crate}-{version}-py3-none-*.whl"))
for w in wheels:
    with zipfile.ZipFile(w) as z:
        meta = z.read(f"{crate}-{version}.dist-info/METADATA").decode()
        head, _, body = meta.partition("\n\n")
        fields = dict(line.split(": ", 1) for line in head.splitlines())
        expect(f"{w.name} Name", fields.get("Name"), crate)
        expect(f"{w.name} Version", fields.get("Version"), version)
        expect(f"{w.name} mcp-name", re.findall(r"mcp-name: (\S+)", body), [mcp_name])
        for line in z.read(f"{crate}-{version}.dist-info/RECORD").decode().splitlines():
            path, digest, size = line.rsplit(",", 2)
            if not digest:
                continue
            data = z.read(path)
            got = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            expect(f"{w.name} RECORD {path}", (got, int(size)), (digest, len(data)))

for p in problems:
    print(f"check_versions: {p}", file=sys.stderr)
if problems:
    sys.exit(1)
print(f"check_versions: {crate} {version} ({mcp_name}) in Cargo.toml, server.json, package.json x3, "
      f"README.md, {len(wheels)} wheel(s), {len(list(dist.glob('*.tgz')))} npm tarball(s)", file=sys.stderr)
