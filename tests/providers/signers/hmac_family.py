"""HMAC schemes by the providers' documented algorithms, signed here and checked independently.

`sign` builds the header value with Python's hmac; `check` re-derives it from the emitted request
(its header parsed as a receiver would, its body decoded from body_base64) with the
`cryptography` package's HMAC, a second implementation, so a mistake in assembling the request
shows up as a refusal rather than being copied into the check.
"""

import base64
import hashlib
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import hmac as crypto_hmac

from .common import SignerError, body_of, header, mac

_DIGESTS = {"sha256": (hashlib.sha256, hashes.SHA256), "sha1": (hashlib.sha1, hashes.SHA1)}


@dataclass(frozen=True)
class Scheme:
    """One provider's HMAC: the header, the digest, how the value is written, what is signed."""

    header: str
    digest: str = "sha256"  # sha256 | sha1
    encoding: str = "hex"  # hex | base64
    prefix: str = ""  # e.g. "sha256=" before the encoded MAC
    # What is signed, from (timestamp text, body bytes); the default is the raw body.
    content: object = field(default=None)

    def signed(self, body: bytes, timestamp: str | None = None) -> bytes:
        return body if self.content is None else self.content(timestamp, body)

    def encode(self, raw: bytes) -> str:
        text = raw.hex() if self.encoding == "hex" else base64.b64encode(raw).decode("ascii")
        return f"{self.prefix}{text}"

    def sign(self, secret: str, body: bytes, timestamp: str | None = None) -> str:
        return self.encode(mac(secret, self.signed(body, timestamp), _DIGESTS[self.digest][0]))

    def decode(self, value: str) -> bytes:
        if not value.startswith(self.prefix):
            raise SignerError(f"{self.header}: value lacks the prefix {self.prefix!r}")
        text = value[len(self.prefix):]
        return bytes.fromhex(text) if self.encoding == "hex" else base64.b64decode(text, validate=True)


def independent_mac(secret: str, message: bytes, digest: str) -> bytes:
    h = crypto_hmac.HMAC(secret.encode("utf-8"), _DIGESTS[digest][1]())
    h.update(message)
    return h.finalize()


def check(scheme: Scheme, secret: str, case_request: dict, value: str | None = None, timestamp: str | None = None) -> None:
    """The emitted request's MAC must be the one recomputed from its own bytes; `value` is the
    header value when it is not the whole header (e.g. one `v1=` item of a list)."""
    received = scheme.decode(value if value is not None else header(case_request, scheme.header))
    expected = independent_mac(secret, scheme.signed(body_of(case_request), timestamp), scheme.digest)
    if received != expected:
        raise SignerError(f"{scheme.header}: the recomputed MAC differs from the emitted one")
    wrong = independent_mac(secret + "x", scheme.signed(body_of(case_request), timestamp), scheme.digest)
    if received == wrong:
        raise SignerError(f"{scheme.header}: the MAC does not depend on the secret")


def v0_template(timestamp: str, body: bytes) -> bytes:
    """Slack and Zoom: v0:{timestamp}:{body}."""
    return f"v0:{timestamp}:".encode("utf-8") + body


def dot_template(timestamp: str, body: bytes) -> bytes:
    """Calendly (as Stripe): {t}.{body}."""
    return f"{timestamp}.".encode("utf-8") + body
