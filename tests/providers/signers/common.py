"""What every preset's signer shares: the run's context, the case shape, HMAC and clock helpers.

A case is the contract's shape (docs in tests/providers/README.md): preset, kind, name,
signed_by, secret, wrong_secret, source, request {method, path, query, headers, body_base64},
expect. Every signer checks its own request before it returns it; a failed check raises
SignerError, and sign.py exits 1 with its message.
"""

import base64
import hashlib
import hmac
import json
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import version

from freezegun import freeze_time

# Every stale case is signed this long before "now": outside every provider's tolerance.
STALE_SECONDS = 7200


class SignerError(Exception):
    """A signer could not produce, or could not verify, its request."""


@dataclass(frozen=True)
class Context:
    now: int
    base_url: str
    # The delivery attempt the signer makes (0: the first); a signer whose provider changes a
    # field per attempt (an attempt counter, a retry header) sets it from this.
    attempt: int = 0

    def path(self, preset: str) -> str:
        return f"/webhooks/{preset}"

    def url(self, preset: str) -> str:
        return f"{self.base_url.rstrip('/')}{self.path(preset)}"


def package(name: str) -> str:
    """'name version' of an installed distribution, for signed_by."""
    return f"{name} {version(name)}"


def body_json(value) -> bytes:
    """A body as a sender serialises it: compact JSON, UTF-8, non-ASCII kept as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def mac(key: bytes | str, message: bytes | str, algorithm=hashlib.sha256) -> bytes:
    if isinstance(key, str):
        key = key.encode("utf-8")
    if isinstance(message, str):
        message = message.encode("utf-8")
    return hmac.new(key, message, algorithm).digest()


def derived(label: str, length: int = 32) -> bytes:
    """Deterministic bytes for test secrets and ids, so every run emits the same cases."""
    out = b""
    counter = 0
    while len(out) < length:
        out += hashlib.sha256(f"{label}/{counter}".encode("utf-8")).digest()
        counter += 1
    return out[:length]


def derived_text(label: str, length: int = 32, alphabet: str = "abcdefghijklmnopqrstuvwxyz0123456789") -> str:
    return "".join(alphabet[b % len(alphabet)] for b in derived(label, length))


def derived_hex(label: str, length: int = 32) -> str:
    return derived(label, (length + 1) // 2).hex()[:length]


def derived_uuid(label: str) -> str:
    h = derived(label, 16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def iso_utc(seconds: int, fraction: str = "") -> str:
    """RFC 3339 UTC, e.g. 2024-05-01T10:00:00Z or with a fraction like '.123456789'."""
    text = datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}{fraction}Z"


# Packages freezegun must not scan: square's lazy module attributes import (and build pydantic
# schemas) on first access, which fails under a frozen datetime. Its verifier reads no clock.
CLOCKLESS_LAZY_PACKAGES = ["square"]


@contextmanager
def clock(seconds: int):
    """Every library's clock (time.time and datetime.now) set to the run's moment."""
    with freeze_time(datetime.fromtimestamp(seconds, tz=timezone.utc), ignore=CLOCKLESS_LAZY_PACKAGES):
        yield


def require(condition: bool, message: str) -> None:
    if not condition:
        raise SignerError(message)


def refusal(check) -> str | None:
    """None when the library check passes (returns a truthy value or None without raising),
    else why it refused."""
    try:
        result = check()
    except Exception as err:  # noqa: BLE001 - every library names its refusal differently
        return f"{type(err).__name__}: {err}"
    return None if result is None or result else f"returned {result!r}"


def verified_by_library(preset: str, name: str, check, at: int, now: int) -> None:
    """The library's verifier must accept the request at `at`; a stale one (at < now) must
    also be refused at `now`, which shows the library checks the signed timestamp."""
    with clock(at):
        why = refusal(check)
        require(why is None, f"{preset} {name}: the library's verifier rejected the request ({why})")
    if at != now:
        with clock(now):
            require(refusal(check) is not None, f"{preset} {name}: the library accepted a stale request")


def request(ctx: Context, preset: str, headers: dict, body: bytes, method: str = "POST", query=None) -> dict:
    return {
        "method": method,
        "path": ctx.path(preset),
        "query": query,
        "headers": headers,
        "body_base64": b64(body),
    }


def event_expect(key: str, event_type) -> dict:
    return {"key": key, "event_type": event_type}


# What a stale case expects: refused as unsigned, whatever its key.
STALE_EXPECT = {"status": 401}


def make_case(preset, kind, name, signed_by, secret, wrong_secret, req, expect, source=None) -> dict:
    return {
        "preset": preset,
        "kind": kind,
        "name": name,
        "signed_by": signed_by,
        "secret": secret,
        "wrong_secret": wrong_secret,
        "source": source or {},
        "request": req,
        "expect": expect,
    }


def header(case_request: dict, name: str) -> str:
    """A header of an emitted request, by case-insensitive name."""
    for key, value in case_request["headers"].items():
        if key.lower() == name.lower():
            return value
    raise SignerError(f"header {name} missing from the request")


def body_of(case_request: dict) -> bytes:
    return base64.b64decode(case_request["body_base64"])
