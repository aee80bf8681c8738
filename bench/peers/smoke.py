#!/usr/bin/env python3
"""Smoke test for the benchmark peers (python3 stdlib only, no SDK).

Usage: python3 bench/peers/smoke.py [NAME ...]   (default: every peer in peers.json)

For each peer it speaks newline-delimited JSON-RPC over the server's stdin/stdout:
initialize, notifications/initialized, tools/list, echo, sleep with progress,
spawn + notifications/cancelled (the child `sleep` must die, the server must keep
answering), then closes stdin and expects the server to exit. Prints one
PASS/FAIL line per peer and exits non-zero if any failed.
"""

import json
import math
import os
import queue
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # argv in peers.json is relative to the repo root
TIMEOUT = 10.0


class Fail(Exception):
    pass


class Conn:
    def __init__(self, argv):
        self.proc = subprocess.Popen(
            argv, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, bufsize=0,
        )
        self.inbox = queue.Queue()
        self.junk = []  # stdout lines that are not JSON-RPC
        self.stderr = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
                if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
                    raise ValueError
                self.inbox.put(msg)
            except ValueError:
                self.junk.append(line)
        self.inbox.put(None)  # EOF

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace").rstrip())

    def send(self, msg):
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def notify(self, method, params=None):
        self.send({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    def request(self, id, method, params):
        self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})

    def wait(self, id, notes=None, timeout=TIMEOUT):
        """Wait for the response to `id`; other messages go to `notes` (or are dropped)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Fail(f"no response to id {id} within {timeout}s")
            try:
                msg = self.inbox.get(timeout=left)
            except queue.Empty:
                continue
            if msg is None:
                raise Fail(f"stdout closed while waiting for id {id}")
            if msg.get("id") == id and "method" not in msg:
                return msg
            if notes is not None:
                notes.append(msg)

    def call(self, id, name, args, meta=None, notes=None):
        params = {"name": name, "arguments": args}
        if meta:
            params["_meta"] = meta
        self.request(id, "tools/call", params)
        resp = self.wait(id, notes)
        if "result" not in resp:
            raise Fail(f"{name}: error response {resp.get('error')}")
        return resp["result"]


def text_of(result):
    content = result.get("content") or []
    if result.get("isError") or len(content) != 1 or content[0].get("type") != "text":
        raise Fail(f"unexpected tool result {result}")
    return content[0]["text"]


def child_sleeps(pid):
    out = subprocess.run(["pgrep", "-P", str(pid), "sleep"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def alive(pid):
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def smoke(peer):
    c = Conn(peer["argv"])
    details = []
    try:
        c.request(1, "initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "smoke", "version": "0"},
        })
        init = c.wait(1)
        if "result" not in init:
            raise Fail(f"initialize failed: {init}")
        details.append(f"protocol={init['result'].get('protocolVersion')}")
        c.notify("notifications/initialized")

        c.request(2, "tools/list", {})
        tools = sorted(t["name"] for t in c.wait(2)["result"]["tools"])
        if tools != ["echo", "sleep", "spawn"]:
            raise Fail(f"tools/list gave {tools}")

        if text_of(c.call(3, "echo", {"text": "hi"})) != "hi":
            raise Fail("echo did not echo")

        ms, notes = 350, []
        t0 = time.monotonic()
        if text_of(c.call(4, "sleep", {"ms": ms}, meta={"progressToken": "tok"}, notes=notes)) != "slept":
            raise Fail("sleep did not answer 'slept'")
        took = time.monotonic() - t0
        progress = [n["params"] for n in notes if n.get("method") == "notifications/progress"
                    and n["params"].get("progressToken") == "tok"]
        total = math.ceil(ms / 100)
        got = [(p["progress"], p.get("total")) for p in progress]
        if got != [(i, total) for i in range(1, total + 1)]:
            raise Fail(f"sleep progress {got}, wanted 1..{total} of {total}")
        if took < ms / 1000:
            raise Fail(f"sleep {ms} ms answered after {took:.3f}s")
        details.append(f"progress={len(progress)} sleep={took * 1000:.0f}ms")

        c.request(5, "tools/call", {"name": "spawn", "arguments": {"ms": 30000}})
        deadline, kids = time.monotonic() + TIMEOUT, []
        while not kids and time.monotonic() < deadline:
            kids = child_sleeps(c.proc.pid)
            time.sleep(0.02)
        if len(kids) != 1:
            raise Fail(f"spawn: found child sleep pids {kids}")
        kid = kids[0]
        c.notify("notifications/cancelled", {"requestId": 5, "reason": "smoke"})
        t0 = time.monotonic()
        late = []
        if text_of(c.call(6, "echo", {"text": "after"}, notes=late)) != "after":
            raise Fail("echo after cancel did not echo")
        deadline = time.monotonic() + TIMEOUT
        while alive(kid) and time.monotonic() < deadline:
            time.sleep(0.01)
        if alive(kid):
            raise Fail(f"child sleep {kid} still running after cancel")
        details.append(f"child killed in {(time.monotonic() - t0) * 1000:.0f}ms")
        try:  # any straggler answer to the cancelled request (the spec says to send none)
            while True:
                m = c.inbox.get(timeout=0.2)
                if m is not None:
                    late.append(m)
        except queue.Empty:
            pass
        if any(m.get("id") == 5 and "result" in m for m in late):
            raise Fail("cancelled spawn still returned a result")
        if any(m.get("id") == 5 for m in late):
            details.append("answered cancelled id with an error")

        c.proc.stdin.close()
        try:
            c.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Fail("server did not exit after stdin closed")
        details.append(f"exit={c.proc.returncode}")
        if c.junk:
            raise Fail(f"non-protocol stdout: {c.junk[:3]}")
        return True, " ".join(details)
    except (Fail, KeyError, TypeError, BrokenPipeError) as e:
        tail = " | ".join(c.stderr[-3:])
        return False, f"{type(e).__name__}: {e}" + (f" [stderr: {tail}]" if tail else "")
    finally:
        if c.proc.poll() is None:
            c.proc.kill()
            c.proc.wait()


def main():
    with open(os.path.join(HERE, "peers.json")) as f:
        peers = json.load(f)
    wanted = set(sys.argv[1:])
    failed = 0
    for peer in peers:
        if wanted and peer["name"] not in wanted:
            continue
        ok, info = smoke(peer)
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {peer['name']}: {info}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
