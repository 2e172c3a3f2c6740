#!/usr/bin/env python3
"""Sign a webhook body the way real senders do, for the Rust signature tests.

standard-webhooks and stripe use the real PyPI packages (standardwebhooks, stripe);
github and shopify use Python's stdlib hmac, exactly as their docs describe.

    sign.py standard-webhooks|stripe|github|shopify --secret S [--id ID] [--timestamp T]
            [--body-file F]          (body read from stdin when --body-file is absent)

Prints one JSON object: {"headers": {...}, "body": str-or-null, "body_base64": str,
"package": "name version"}. "body" is null when the body is not UTF-8.
"""

import argparse
import base64
import hashlib
import hmac
import json
import sys
from datetime import datetime, timezone
from importlib.metadata import version


def utf8_body(body: bytes, scheme: str) -> str:
    # Both packages sign str payloads (encoded as UTF-8), so they cannot sign arbitrary bytes.
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        sys.exit(f"sign.py: the {scheme} package signs text; the body is not UTF-8")


def sign_standard_webhooks(args, body: bytes):
    from standardwebhooks.webhooks import Webhook

    if args.id is None or args.timestamp is None:
        sys.exit("sign.py: standard-webhooks needs --id and --timestamp")
    when = datetime.fromtimestamp(args.timestamp, tz=timezone.utc)
    signature = Webhook(args.secret).sign(args.id, when, utf8_body(body, "standardwebhooks"))
    headers = {
        "webhook-id": args.id,
        "webhook-timestamp": str(args.timestamp),
        "webhook-signature": signature,
    }
    return headers, f"standardwebhooks {version('standardwebhooks')}"


def sign_stripe(args, body: bytes):
    import stripe

    if args.timestamp is None:
        sys.exit("sign.py: stripe needs --timestamp")
    payload = utf8_body(body, "stripe")
    # The package's public helper for tests ("Useful for signing payloads in unit tests").
    header = stripe.WebhookSignature.generate_signature_header(
        payload, args.secret, timestamp=args.timestamp
    )
    # And the package's own verifier must accept it (tolerance=None: no clock check).
    stripe.WebhookSignature.verify_header(payload, header, args.secret, tolerance=None)
    return {"Stripe-Signature": header}, f"stripe {version('stripe')}"


def sign_github(args, body: bytes):
    digest = hmac.new(args.secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return {"X-Hub-Signature-256": f"sha256={digest}"}, "python stdlib hmac"


def sign_shopify(args, body: bytes):
    digest = hmac.new(args.secret.encode("utf-8"), body, hashlib.sha256).digest()
    return {"X-Shopify-Hmac-Sha256": base64.b64encode(digest).decode("ascii")}, "python stdlib hmac"


SIGNERS = {
    "standard-webhooks": sign_standard_webhooks,
    "stripe": sign_stripe,
    "github": sign_github,
    "shopify": sign_shopify,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scheme", choices=sorted(SIGNERS))
    parser.add_argument("--secret", required=True)
    parser.add_argument("--id")
    parser.add_argument("--timestamp", type=int)
    parser.add_argument("--body-file")
    args = parser.parse_args()

    if args.body_file is None:
        body = sys.stdin.buffer.read()
    else:
        with open(args.body_file, "rb") as f:
            body = f.read()

    headers, package = SIGNERS[args.scheme](args, body)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    json.dump(
        {
            "headers": headers,
            "body": text,
            "body_base64": base64.b64encode(body).decode("ascii"),
            "package": package,
        },
        sys.stdout,
        ensure_ascii=True,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
