"""Library-verified providers whose signature covers a timestamp in a format of its own: HubSpot
(v3, milliseconds), Paddle (ts=;h1=), Orb (ISO 8601) and Box (RFC 3339, primary/secondary keys).
Each has an event case and a stale one, both accepted by the library at their signing moment."""

from datetime import datetime, timezone

from .common import (STALE_EXPECT, STALE_SECONDS, Context, body_json, body_of, derived_text, derived_uuid, event_expect,
                     header, mac, make_case, package, request, verified_by_library)

JSON = {"Content-Type": "application/json"}
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _pair(ctx, preset, name, signed, secret, wrong, expect, signed_by, source=None):
    return [make_case(preset, "event", name, signed_by, secret, wrong, signed(ctx.now), expect, source),
            make_case(preset, "stale", f"{name} signed 2 h ago", signed_by, secret, wrong,
                      signed(ctx.now - STALE_SECONDS), STALE_EXPECT, source)]


def hubspot(ctx: Context) -> list:
    from hubspot.utils.signature import Signature

    secret, wrong = derived_uuid("hubspot/secret"), derived_uuid("hubspot/wrong")
    url = ctx.url("hubspot")
    # The body is a batch (a JSON array); each element has its eventId and subscriptionType,
    # and its attemptNumber, which HubSpot changes on each attempt.
    def event(event_id, attempt):
        return {"eventId": event_id, "subscriptionId": 2761183, "portalId": 62515, "appId": 1160452,
                "occurredAt": 1714572000000, "subscriptionType": "contact.propertyChange", "attemptNumber": attempt,
                "objectId": 123, "propertyName": "lifecyclestage", "propertyValue": "marketingqualifiedlead",
                "changeSource": "CRM", "sourceId": "userId:12345"}

    def signer(events):
        payload = body_json(events).decode("utf-8")

        def signed(at):
            ms = str(at * 1000)
            v3 = Signature.get_signature(secret, payload, "v3", http_uri=url, http_method="POST", timestamp=ms)
            v1 = Signature.get_signature(secret, payload, "v1")
            headers = {**JSON, "X-HubSpot-Signature-v3": v3, "X-HubSpot-Request-Timestamp": ms,
                       "X-HubSpot-Signature": v1, "X-HubSpot-Signature-Version": "v1"}
            req = request(ctx, "hubspot", headers, payload.encode("utf-8"))
            verified_by_library("hubspot", "v3", lambda: Signature.is_valid(
                header(req, "X-HubSpot-Signature-v3"), secret, body_of(req).decode("utf-8"), http_uri=url,
                http_method="POST", signature_version="v3", timestamp=header(req, "X-HubSpot-Request-Timestamp")),
                at, ctx.now)
            return req
        return signed

    signed_by = f"{package('hubspot-api-client')} Signature.get_signature (v3 and v1), verified by Signature.is_valid v3"
    first = event_expect("62515|2761183|1234567890|1714572000000", "contact.propertyChange")
    source = {"public_url": url}
    # Events are split out of the batch (docs/design.md §14): its retry (attemptNumber 1) is a
    # duplicate of each event, a later batch overlapping it queues only its new event.
    return _pair(ctx, "hubspot", "contact.propertyChange batch", signer([event(1234567890, ctx.attempt)]), secret, wrong,
                 first, signed_by, source) + [
        make_case("hubspot", "event", "the batch retried, attemptNumber 1: a duplicate", signed_by, secret, wrong,
                  signer([event(1234567890, 1)])(ctx.now), first, source),
        make_case("hubspot", "event", "a batch overlapping it: its new event accepted", signed_by, secret, wrong,
                  signer([event(1234567890, 2), event(1234567891, 0)])(ctx.now),
                  event_expect("62515|2761183|1234567891|1714572000000", "contact.propertyChange"), source),
    ]


class _PaddleRequest:
    """What paddle_billing's Verifier reads from a framework request: headers and body bytes."""

    def __init__(self, req: dict):
        self.headers = req["headers"]
        self.body = body_of(req)


def paddle(ctx: Context) -> list:
    from paddle_billing.Notifications import Secret, Verifier

    secret, wrong = ("pdl_ntfset_01" + derived_text(f"paddle/{w}/id", 24, "0123456789abcdefghjkmnpqrstvwxyz") + "_"
                     + derived_text(f"paddle/{w}", 32, ALNUM) for w in ("secret", "wrong"))
    event_id = "evt_01hv8wptq8987qeep44cyrewp9"
    body = {"event_id": event_id, "event_type": "transaction.completed", "occurred_at": "2024-05-01T14:00:00.000000Z",
            "notification_id": "ntf_01hv8wpts6z2ks3mqwccdpnvya",
            "data": {"id": "txn_01hv8m0mnx3sj85e7gxc6kga03", "status": "completed", "currency_code": "USD",
                     "customer_id": "ctm_01hv6y1jedq4p1n0yqn5ba3ky4", "origin": "web"}}
    raw = body_json(body)

    def signed(at):
        # The SDK only verifies: signed by the documented algorithm, HMAC-SHA256 of '{ts}:{body}', hex.
        value = f"ts={at};h1={mac(secret, f'{at}:'.encode('utf-8') + raw).hex()}"
        req = request(ctx, "paddle", {**JSON, "Paddle-Signature": value}, raw)
        verified_by_library("paddle", "transaction.completed",
                            lambda: Verifier().verify(_PaddleRequest(req), Secret(secret)), at, ctx.now)
        return req

    signed_by = ("algorithm from https://developer.paddle.com/webhooks/signature-verification, verified by "
                 f"{package('paddle-python-sdk')} Notifications.Verifier (maximum variance 5 s)")
    return _pair(ctx, "paddle", "transaction.completed event", signed, secret, wrong,
                 event_expect(event_id, "transaction.completed"), signed_by)


def orb(ctx: Context) -> list:
    from orb import Orb

    secret, wrong = ("whsec_" + derived_text(f"orb/{w}", 32, ALNUM) for w in ("secret", "wrong"))
    event_id = "4fGaYUxt7jYqT4Ci"
    body = {"id": event_id, "created_at": "2024-05-01T14:00:00.000000+00:00", "type": "invoice.payment_succeeded",
            "properties": {"payment_provider": "stripe", "payment_provider_id": "pi_3OXtYbLzxxxxxxxx"},
            "invoice": {"id": "RUsuKzLkTmiEZkQW", "invoice_number": "INV-1", "status": "paid", "currency": "USD",
                        "customer": {"id": "XimGiw3pnsgusvc3", "external_customer_id": None}}}
    raw = body_json(body)

    def signed(at):
        ts = datetime.fromtimestamp(at, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")
        # The SDK only verifies: signed by its algorithm, HMAC-SHA256 of 'v1:{timestamp}:{body}', hex.
        value = "v1=" + mac(secret, f"v1:{ts}:".encode("utf-8") + raw).hex()
        req = request(ctx, "orb", {**JSON, "X-Orb-Timestamp": ts, "X-Orb-Signature": value}, raw)
        client = Orb(api_key="offline", webhook_secret=secret)
        verified_by_library("orb", "invoice.payment_succeeded",
                            lambda: client.webhooks.verify_signature(body_of(req), req["headers"]), at, ctx.now)
        return req

    signed_by = ("algorithm from https://docs.withorb.com/integrations-and-exports/webhooks, verified by "
                 f"{package('orb-billing')} client.webhooks.verify_signature (tolerance 5 min)")
    return _pair(ctx, "orb", "invoice.payment_succeeded event", signed, secret, wrong,
                 event_expect(event_id, "invoice.payment_succeeded"), signed_by)


def box(ctx: Context) -> list:
    from box_sdk_gen.internal.utils import compute_webhook_signature
    from box_sdk_gen.managers.webhooks import WebhooksManager

    secret, wrong, secondary = (derived_text(f"box/{w}", 32, ALNUM) for w in ("secret", "wrong", "secondary"))
    event_id = "eb0c4e06-751f-442c-86f8-fd5bb404dbec"  # the example webhook event of Box's V2 guide
    body = {"type": "webhook_event", "id": event_id, "created_at": "2024-05-01T14:00:00-07:00",
            "trigger": "FILE.UPLOADED", "webhook": {"id": "53", "type": "webhook"},
            "created_by": {"type": "user", "id": "2", "name": "John Q. Developer", "login": "johnq@dev.name"},
            "source": {"id": "123", "type": "file", "name": "Test.txt"}}
    # Box: "When Box retries a webhook this ID [BOX-DELIVERY-ID] will change, while the ID in
    # the payload body remains the same": a new delivery id per signing moment below.

    def signed(at, payload=body_json(body).decode("utf-8")):
        stamp = datetime.fromtimestamp(at, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")
        headers = {"box-delivery-id": derived_uuid(f"box/delivery/{at}"), "box-delivery-timestamp": stamp,
                   "box-signature-version": "1", "box-signature-algorithm": "HmacSHA256"}
        headers["box-signature-primary"] = compute_webhook_signature(payload, headers, secret)
        headers["box-signature-secondary"] = compute_webhook_signature(payload, headers, secondary)
        wire = {name.upper(): value for name, value in headers.items()}  # Box writes them upper case
        req = request(ctx, "box", {**JSON, **wire, "User-Agent": "Box-WH-Client/0.1"}, payload.encode("utf-8"))
        lower = {name.lower(): value for name, value in req["headers"].items()}
        verified_by_library("box", "FILE.UPLOADED", lambda: WebhooksManager.validate_message(
            body_of(req).decode("utf-8"), lower, secret), at, ctx.now)
        return req

    signed_by = (f"{package('box-sdk-gen')} compute_webhook_signature (primary key; secondary signed with a key "
                 "the source does not hold), verified by WebhooksManager.validate_message (max age 600 s)")
    # Another file uploaded in the same second: its own event id.
    other = "fc1d5f17-862f-453d-9e07-097cc6cf5eed"
    alike = {**body, "id": other, "source": {"id": "124", "type": "file", "name": "Test 2.txt"}}
    return _pair(ctx, "box", "FILE.UPLOADED event", signed, secret, wrong,
                 event_expect(event_id, "FILE.UPLOADED"), signed_by) + [
        make_case("box", "distinct", "another file uploaded, alike", signed_by, secret, wrong,
                  signed(ctx.now, body_json(alike).decode("utf-8")), event_expect(other, "FILE.UPLOADED"))]


# Orb is signed here but is no preset: its `v1:{timestamp}:{body}` puts an ISO timestamp with
# no offset, holding `:`, before a `:` separator (docs/providers.md, "Not supported").
SIGNERS = {"hubspot": hubspot, "paddle": paddle, "box": box}
