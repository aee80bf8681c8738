"""Validates server.json files against the MCP registry's server.json schema 2025-12-11.

usage: check_server_json.py SCHEMA_SHA256 VERSION FILE...

The schema is the copy the PyPI package skillsaw ships byte-for-byte from the registry's
published schemas (skillsaw/schemas/mcp_registry/v2025_12_11/SCHEMA-SOURCE.md); its SHA-256
is checked so a different file cannot pass for it. Beyond the schema: the entry's version and
each package's version are VERSION, an mcpb package names its release asset of VERSION and
has a fileSha256, and every package is of a type the registry verifies (npm, pypi, nuget, oci,
mcpb: a `cargo` package could not be published).
"""
import hashlib
import importlib.util
import json
import pathlib
import sys

import jsonschema

VERIFIED = {"npm", "pypi", "nuget", "oci", "mcpb"}
want_sha, version, files = sys.argv[1], sys.argv[2], sys.argv[3:]
# The package's data only: importing skillsaw would need its own dependencies.
spec = importlib.util.find_spec("skillsaw")
if spec is None or not spec.submodule_search_locations:
    sys.exit("the skillsaw package is not installed")
path = pathlib.Path(spec.submodule_search_locations[0]) / "schemas/mcp_registry/v2025_12_11/server.schema.json"
raw = path.read_bytes()
got_sha = hashlib.sha256(raw).hexdigest()
if got_sha != want_sha:
    sys.exit(f"{path}: SHA-256 {got_sha}, expected {want_sha}")
schema = json.loads(raw)
assert schema["$id"].endswith("/schemas/2025-12-11/server.schema.json"), schema["$id"]
validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)

failed = False
for f in files:
    doc = json.loads(pathlib.Path(f).read_text())
    problems = [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
                for e in validator.iter_errors(doc)]
    if doc.get("$schema") != schema["$id"]:
        problems.append(f"$schema is {doc.get('$schema')!r}, not {schema['$id']!r}")
    if doc.get("version") != version:
        problems.append(f"version {doc.get('version')!r} is not the crate's {version!r}")
    for i, p in enumerate(doc.get("packages", [])):
        if p.get("registryType") not in VERIFIED:
            problems.append(f"packages/{i}: registryType {p.get('registryType')!r} is not "
                            f"one the registry verifies ({', '.join(sorted(VERIFIED))})")
        if p.get("version") != version:
            problems.append(f"packages/{i}: version {p.get('version')!r} is not {version!r}")
        if p.get("registryType") == "mcpb":
            if f"/v{version}/" not in p["identifier"] or not p["identifier"].endswith(".mcpb"):
                problems.append(f"packages/{i}: {p['identifier']} is not the v{version} bundle")
            if "fileSha256" not in p:
                problems.append(f"packages/{i}: an mcpb package needs fileSha256")
    for p in problems:
        print(f"{f}: {p}", file=sys.stderr)
    failed |= bool(problems)
    if not problems:
        print(f"{f}: valid against {schema['$id']}", file=sys.stderr)
sys.exit(1 if failed else 0)
