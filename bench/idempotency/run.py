"""make bench-idempotency: lambda-idempotency beside Powertools' Python and TypeScript
idempotency utilities, one moto server, one counting proxy (BENCHMARKS.md, "Idempotency
library beside Powertools (issue 36)").

Each peer runs the same trivial handler (`{"ok": true}` for `{"order": "o-1", ...}`, keyed on
`order`) in its own process, through its paths: a first call, a duplicate after completion,
a duplicate while the first call is inside the handler, and a retry after a call that timed out
inside the handler (a 1 s invocation, never finished) once its lease has run out. Every DynamoDB call goes through
bench/idempotency/proxy.py, which logs its X-Amz-Target and when it started and ended; the
peers mark where each path starts. Calls that overlap in time count as one round trip.
Each peer runs twice per round: with its in-process cache off (the defaults: a duplicate as
another instance sees it) and on (a duplicate on the same warm instance).

Run from the repository root with .venv's python (moto and boto3 for the tables):
    .venv/bin/python bench/idempotency/run.py --rust-bin PATH [--runs 3] [--out FILE]
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

import boto3

# The project's on-demand prices (crates/bench/src/bill/prices.rs; us-east-1).
WRITE_UNIT_USD = 0.625 / 1e6
READ_UNIT_USD = 0.125 / 1e6
WRITES = {"PutItem", "UpdateItem", "DeleteItem"}

PATHS = [
    ("first", "first call"),
    ("dup_done", "duplicate after completion"),
    ("inflight_dup", "duplicate while in flight"),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what):
    for _ in range(300):
        if proc.poll() is not None:
            sys.exit("%s exited (%s)" % (what, proc.returncode))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit("%s did not listen on %d" % (what, port))


def item_size(value):
    """An item's size as DynamoDB bills it (names and values, UTF-8; numbers about half their
    digits), close enough to tell 1 KB apart."""
    size = 0
    for name, v in value.items():
        size += len(name.encode()) + attr_size(v)
    return size


def attr_size(v):
    (t, x), = v.items()
    if t == "S":
        return len(x.encode())
    if t == "N":
        return (len(x.lstrip("-").replace(".", "")) + 1) // 2 + 1
    if t == "B":
        return len(x)
    if t in ("BOOL", "NULL"):
        return 1
    if t == "M":
        return 3 + sum(len(k.encode()) + attr_size(y) + 1 for k, y in x.items())
    if t == "L":
        return 3 + sum(attr_size(y) + 1 for y in x)
    return sum(len(str(y)) for y in x)


def round_trips(calls):
    """Calls on one caller's path, overlapping ones merged: the sequential round trips."""
    trips, end = 0, None
    for c in sorted(calls, key=lambda c: c["start"]):
        if end is None or c["start"] >= end:
            trips += 1
            end = c["end"]
        else:
            end = max(end, c["end"])
    return trips


def units(calls):
    wru = sum(1.0 for c in calls if c["op"] in WRITES)
    rru = sum(
        (1.0 if c.get("consistent_read") else 0.5) for c in calls if c["op"] in ("GetItem",)
    )
    other = [c["op"] for c in calls if c["op"] not in WRITES | {"GetItem"}]
    return wru, rru, other


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rust-bin", default="")
    ap.add_argument("--peers", default="python,typescript,rust")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=".local/bench-idempotency.md")
    ap.add_argument("--command", default="make bench-idempotency")
    args = ap.parse_args()

    root = os.getcwd()
    peers = [
        ("python", "Powertools Python", [os.path.join(root, ".venv-powertools/bin/python"), "bench/idempotency/powertools_peer.py"], "id"),
        ("typescript", "Powertools TypeScript", ["node", "bench/idempotency/powertools_peer.mjs"], "id"),
        ("rust", "lambda-idempotency", [args.rust_bin], "pk"),
    ]
    peers = [p for p in peers if p[0] in args.peers.split(",")]

    moto_port, proxy_port = free_port(), free_port()
    procs = []
    try:
        moto = subprocess.Popen(
            [os.path.join(root, ".venv/bin/moto_server"), "-H", "127.0.0.1", "-p", str(moto_port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(moto)
        wait_port(moto_port, moto, "moto_server")
        proxy = subprocess.Popen(
            [sys.executable, "bench/idempotency/proxy.py", str(proxy_port), str(moto_port)],
            stdout=subprocess.DEVNULL,
        )
        procs.append(proxy)
        wait_port(proxy_port, proxy, "the proxy")

        creds = {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        ddb = boto3.client("dynamodb", endpoint_url="http://127.0.0.1:%d" % moto_port, region_name="us-east-1",
                           aws_access_key_id="testing", aws_secret_access_key="testing")
        env_base = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", "/tmp"),
            "AWS_ENDPOINT_URL": "http://127.0.0.1:%d" % proxy_port,
            "AWS_EC2_METADATA_DISABLED": "true",
            "BENCH_PROXY": "127.0.0.1:%d" % proxy_port,
            **creds,
        }

        def mark(name):
            urllib.request.urlopen("http://127.0.0.1:%d/__bench/mark?name=%s" % (proxy_port, name)).read()

        reports = {}  # (peer, cache) -> list of process reports
        tables = []
        for r in range(args.runs):
            for cache in ("0", "1"):
                for peer, _, cmd, pk in peers:
                    table = "bench-%s-cache%s-run%d" % (peer, cache, r)
                    ddb.create_table(
                        TableName=table,
                        AttributeDefinitions=[{"AttributeName": pk, "AttributeType": "S"}],
                        KeySchema=[{"AttributeName": pk, "KeyType": "HASH"}],
                        BillingMode="PAY_PER_REQUEST",
                    )
                    tables.append(table)
                    mark("peer:%s:%s:%d" % (peer, cache, r))
                    env = dict(env_base, BENCH_TABLE=table, BENCH_CACHE=cache, BENCH_SPAWN_NS=str(time.time_ns()))
                    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
                    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
                    if p.returncode != 0 or not lines:
                        sys.exit("%s (cache %s) failed: %s\n%s" % (peer, cache, p.returncode, p.stderr[-3000:]))
                    rep = json.loads(lines[-1])
                    rep["stderr_lines"] = len(p.stderr.splitlines())
                    reports.setdefault((peer, cache), []).append(rep)
        log = json.loads(urllib.request.urlopen("http://127.0.0.1:%d/__bench/log" % proxy_port).read())
        sizes = {}
        for table in tables:
            for it in ddb.scan(TableName=table)["Items"]:
                sizes[table] = max(sizes.get(table, 0), item_size(it))
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait()

    # The log, cut by the runner's peer marks and the peers' path marks.
    segs = {}  # (peer, cache, run) -> {segment: [calls]}
    cur, seg = None, None
    for e in log:
        if "mark" in e:
            if e["mark"].startswith("peer:"):
                _, peer, cache, r = e["mark"].split(":")
                cur, seg = (peer, cache, int(r)), "init"
                segs[cur] = {"init": []}
            else:
                seg = e["mark"]
                segs[cur].setdefault(seg, [])
            continue
        e["op"] = e["target"].rsplit(".", 1)[-1]
        segs[cur][seg].append(e)

    def path(peer, cache, name):
        """The path's calls, the same on every run (or the run fails)."""
        seen = set()
        out = None
        for r in range(args.runs):
            s = segs[(peer, cache, r)]
            if name == "inflight_first":
                calls = s.get("inflight_held", []) + s.get("inflight_rest", [])
            else:
                calls = s.get(name, [])
            ops = tuple(c["op"] for c in calls)
            seen.add((ops, round_trips(calls)))
            out = calls
        if len(seen) != 1:
            sys.exit("%s cache %s %s: calls differ between runs: %s" % (peer, cache, name, seen))
        return out

    def status(calls):
        return ", ".join("%s%s" % (c["op"], "" if c["status"] == 200 else " (%d)" % c["status"]) for c in calls)

    def answer(peer, cache, name):
        o = reports[(peer, cache)][0]["outcomes"][name]
        if "error" in o:
            return o["error"]
        return json.dumps(o["result"], separators=(",", ":")) + (" replayed" if o.get("replayed") else "")

    lines = []
    w = lines.append
    head = "| | " + " | ".join(label for _, label, _, _ in peers) + " |"
    rule = "| --- |" + " ---: |" * len(peers)
    w("DynamoDB calls per path (cache off unless said), sequential round trips in brackets; "
      "a refused conditional write shows its HTTP status (400: ConditionalCheckFailed):")
    w("")
    w(head)
    w(rule)
    rows = PATHS[:2] + [("dup_done@1", "duplicate after completion, same instance, local cache on")] + PATHS[2:] + [
        ("retry_after_timeout", "retry after a call that timed out in the handler (lease run out)"),
        ("inflight_first", "the in-flight path's first call (as a first call)"),
        ("abandoned", "the call that timed out (its claim)"),
        ("init", "at init (import, construct)"),
    ]
    bills = {}
    for key, label in rows:
        cache = "1" if key.endswith("@1") else "0"
        name = key.split("@")[0]
        cells = []
        for peer, _, _, _ in peers:
            calls = path(peer, cache, name)
            n, rt = len(calls), round_trips(calls)
            cells.append("**%d** [%d]: %s" % (n, rt, status(calls) or "none"))
            wru, rru, other = units(calls)
            if other:
                sys.exit("unpriced calls on %s %s: %s" % (peer, key, other))
            bills[(peer, key)] = (wru, rru, wru * WRITE_UNIT_USD * 1e6 + rru * READ_UNIT_USD * 1e6)
        w("| %s | %s |" % (label, " | ".join(cells)))
    w("| answer to the in-flight duplicate | %s |" % " | ".join(answer(p, "0", "inflight_dup") for p, _, _, _ in peers))
    w("| answer to the duplicate after completion | %s |" % " | ".join(answer(p, "0", "dup_done") for p, _, _, _ in peers))
    w("| answer to the retry after the timeout | %s |" % " | ".join(answer(p, "0", "retry_after_timeout") for p, _, _, _ in peers))
    w("")
    biggest = ", ".join(
        "%s %d" % (label, max(v for t, v in sizes.items() if t.split("-")[1] == peer))
        for peer, label, _, _ in peers
    )
    w("DynamoDB on-demand bill, USD per million calls of each path (write units x $0.625 per "
      "million, read units x $0.125 per million, us-east-1; the largest item, in bytes as "
      "DynamoDB sizes it: %s; under 1 KB, so one unit per write, refused or not, and per "
      "consistent read):" % biggest)
    w("")
    w(head)
    w(rule)
    for key, label in rows[:5]:
        cells = []
        for peer, _, _, _ in peers:
            wru, rru, usd = bills[(peer, key)]
            cells.append("%.4f (%g W%s)" % (usd, wru, ", %g R" % rru if rru else ""))
        w("| %s | %s |" % (label, " | ".join(cells)))
    w("")
    w("Init and memory on this machine (local figures, not Lambda's: no Firecracker, no "
      "Lambda runtime API; median of %d processes per peer, cache off):" % args.runs)
    w("")
    w(head)
    w(rule)

    def med(peer, field):
        return statistics.median(rep[field] for rep in reports[(peer, "0")])

    w("| init: import and construct until ready, ms | %s |" % " | ".join("%.1f" % med(p, "init_ms") for p, _, _, _ in peers))
    w("| process start until ready, ms | %s |" % " | ".join("%.1f" % med(p, "spawn_to_ready_ms") for p, _, _, _ in peers))
    w("| peak RSS (VmHWM) after every path, MB | %s |" % " | ".join("%.1f" % (med(p, "vmhwm_kb") / 1024) for p, _, _, _ in peers))
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write("<!-- %s -->\n" % args.command + text)
    with open(args.out.replace(".md", ".json"), "w") as f:
        json.dump({"log": log, "reports": {"%s:%s" % k: v for k, v in reports.items()}, "item_bytes": sizes}, f, indent=1)
    print(text)


if __name__ == "__main__":
    main()
