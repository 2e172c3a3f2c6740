#!/usr/bin/env python3
"""Signed webhook requests for the presets' Rust test, as the providers' own libraries (or their
documented algorithms) produce them. The contract: tests/providers/README.md.

    echo '{"now": 1714572000, "base_url": "https://abc123.execute-api.us-east-1.amazonaws.com",
           "presets": ["stripe"]}' | .venv-providers/bin/python tests/providers/sign.py

stdin: {"now": unix seconds, "base_url": str, "presets": [names] | null (every preset)}.
stdout: {"cases": [...]}. Any failure, an unknown preset included: a message on stderr, exit 1.
"""

import base64
import binascii
import json
import re
import sys

from signers import PRESETS
from signers.common import Context, SignerError

KINDS = {"event", "stale", "handshake", "reused", "refused", "retry", "distinct"}
# A retry is the signer run again this much later, as attempt 1: new timestamps and signatures
# where the provider signs one, the per-attempt fields changed where the signer knows them.
RETRY_AFTER_SECONDS = 30
CASE_FIELDS = {"preset", "kind", "name", "signed_by", "secret", "wrong_secret", "source", "request", "expect"}
REQUEST_FIELDS = {"method", "path", "query", "headers", "body_base64"}
HANDSHAKE_EXPECT = {"status", "body", "json", "headers", "content_type"}


def read_input(text: str):
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as err:
        raise SignerError(f"stdin is not JSON: {err}") from err
    if not isinstance(spec, dict):
        raise SignerError("stdin must be a JSON object")
    now, base_url, presets = spec.get("now"), spec.get("base_url"), spec.get("presets")
    if not isinstance(now, int) or isinstance(now, bool) or now <= 0:
        raise SignerError('"now" must be a positive integer (unix seconds)')
    if not isinstance(base_url, str) or not base_url.startswith(("https://", "http://")):
        raise SignerError('"base_url" must be an http(s) URL')
    if presets is None:
        presets = sorted(PRESETS)
    elif not isinstance(presets, list) or not all(isinstance(p, str) for p in presets):
        raise SignerError('"presets" must be null or a list of names')
    unknown = [p for p in presets if p not in PRESETS]
    if unknown:
        raise SignerError(f"unknown preset(s): {', '.join(unknown)} (known: {', '.join(sorted(PRESETS))})")
    return Context(now=now, base_url=base_url.rstrip("/")), presets


def check_case(case: dict, ctx: Context, preset: str) -> None:
    """The contract's shape; anything else is a bug in a signer, reported rather than emitted."""
    where = f"{preset}/{case.get('name')}"
    if set(case) != CASE_FIELDS:
        raise SignerError(f"{where}: fields {sorted(set(case) ^ CASE_FIELDS)} wrong")
    if case["preset"] != preset or case["kind"] not in KINDS:
        raise SignerError(f"{where}: preset or kind wrong")
    for name in ("name", "signed_by", "secret", "wrong_secret"):
        if not isinstance(case[name], str) or not case[name]:
            raise SignerError(f"{where}: {name} must be a non-empty string")
    if case["secret"] == case["wrong_secret"]:
        raise SignerError(f"{where}: wrong_secret equals secret")
    if not isinstance(case["source"], dict):
        raise SignerError(f"{where}: source must be an object")
    req = case["request"]
    if set(req) != REQUEST_FIELDS or req["method"] not in ("GET", "POST"):
        raise SignerError(f"{where}: request fields or method wrong")
    if req["path"] != ctx.path(preset) or not (req["query"] is None or isinstance(req["query"], str)):
        raise SignerError(f"{where}: path or query wrong")
    if not isinstance(req["headers"], dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in req["headers"].items()):
        raise SignerError(f"{where}: headers must map strings to strings")
    if len({k.lower() for k in req["headers"]}) != len(req["headers"]):
        raise SignerError(f"{where}: a header appears twice")
    try:
        base64.b64decode(req["body_base64"], validate=True)
    except binascii.Error as err:
        raise SignerError(f"{where}: body_base64 is not base64") from err
    check_expect(case, where)


def check_expect(case: dict, where: str) -> None:
    expect = case["expect"]
    if case["kind"] == "stale":
        if expect != {"status": 401}:
            raise SignerError(f"{where}: a stale case expects status 401 and nothing else")
    elif case["kind"] == "refused":
        if expect not in ({"status": 401}, {"status": 400}):
            raise SignerError(f"{where}: a refused case (a batch with a bad event) expects status 401 or 400 and nothing else")
    elif case["kind"] in ("reused", "retry"):
        if set(expect) != {"key"} or not isinstance(expect["key"], str) or not expect["key"]:
            raise SignerError(f"{where}: a {case['kind']} case expects the key of the event it repeats")
    elif case["kind"] in ("event", "distinct"):
        if not {"key", "event_type"} <= set(expect) <= {"key", "event_type", "status", "json", "body",
                                                         "refused_status", "content_type", "duplicate"} \
                or not isinstance(expect["key"], str) or not expect["key"]:
            raise SignerError(f"{where}: an event expects a key and an event_type (and optionally its answer)")
        if not (expect["event_type"] is None or isinstance(expect["event_type"], str)):
            raise SignerError(f"{where}: event_type must be a string or null")
        if expect.get("duplicate", True) is not True:
            raise SignerError(f"{where}: duplicate, where given, is true (a retry of an earlier event)")
        if expect.get("refused_status", 401) not in (400, 401):
            raise SignerError(f"{where}: refused_status is the status a wrong secret gets: 400 or 401")
    elif not set(expect) <= HANDSHAKE_EXPECT or not isinstance(expect.get("status"), int):
        raise SignerError(f"{where}: a handshake expects a status and optionally body/json/headers/content_type")


def check_preset(preset: str, cases: list) -> None:
    kinds = {case["kind"] for case in cases}
    if "event" not in kinds:
        raise SignerError(f"{preset}: no event case")


def retries(preset: str, ctx: Context, first: list) -> list:
    """Each event case as the provider resends it: the same signer, RETRY_AFTER_SECONDS later,
    attempt 1 (signed and verified by the same library). Its key must be the first's."""
    later = Context(now=ctx.now + RETRY_AFTER_SECONDS, base_url=ctx.base_url, attempt=1)
    # An event case that is itself a retry (named so) is not retried again.
    by_name = {case["name"]: case for case in first
               if case["kind"] == "event" and not re.search(r"retr(y|ied)", case["name"], re.I)}
    out = []
    for case in PRESETS[preset](later):
        original = by_name.get(case["name"]) if case["kind"] == "event" else None
        if original is None:
            continue
        if case["expect"]["key"] != original["expect"]["key"]:
            raise SignerError(f"{preset}/{case['name']}: its retry has another key "
                              f"({case['expect']['key']} against {original['expect']['key']})")
        out.append({**case, "kind": "retry",
                    "name": f"{case['name']}: resent {RETRY_AFTER_SECONDS} s later as attempt 1",
                    "expect": {"key": case["expect"]["key"]}})
    return out


def main() -> int:
    try:
        ctx, presets = read_input(sys.stdin.read())
        cases = []
        for preset in presets:
            produced = PRESETS[preset](ctx)
            check_preset(preset, produced)
            produced += retries(preset, ctx, produced)
            for case in produced:
                check_case(case, ctx, preset)
            cases.extend(produced)
    except SignerError as err:
        print(f"sign.py: {err}", file=sys.stderr)
        return 1
    json.dump({"cases": cases}, sys.stdout, ensure_ascii=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
