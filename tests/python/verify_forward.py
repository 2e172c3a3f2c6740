#!/usr/bin/env python3
"""Verify a forward the way a system of record would, with the official Standard Webhooks
package (standardwebhooks), for tests/forwarding.rs.

    verify_forward.py < request.json

The request: {"secrets": ["whsec_...", ...], "headers": {"webhook-id": ..., ...},
"body_base64": "..."}. Each secret is tried on its own. Prints one JSON object:
{"verified": [true|false per secret], "errors": [null|"message" per secret],
"package": "standardwebhooks <version>"}.
"""

import base64
import json
import sys
from importlib.metadata import version

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main() -> None:
    request = json.load(sys.stdin)
    body = base64.b64decode(request["body_base64"])
    verified, errors = [], []
    for secret in request["secrets"]:
        try:
            Webhook(secret).verify(body, request["headers"], json_parse=False)
            verified.append(True)
            errors.append(None)
        except WebhookVerificationError as e:
            verified.append(False)
            errors.append(str(e))
    print(
        json.dumps(
            {
                "verified": verified,
                "errors": errors,
                "package": f"standardwebhooks {version('standardwebhooks')}",
            }
        )
    )


if __name__ == "__main__":
    main()
