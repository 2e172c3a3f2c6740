"""The senders issue 38 adds, each proven the same way: a first delivery, its retry as the provider
sends it (`"duplicate": true`: the first event's key, answered from the ledger, nothing sent), a
second event that looks like the first but is another event (another key), and a stale request
where the provider's library or documentation sets a tolerance.

- Standard Webhooks / Svix senders: signed by the `standardwebhooks` package (or `svix` for the
  `svix-*` headers) and verified by the same package; a retry is re-signed with a new timestamp
  under the same message id (Svix: the id "will be the same when the same webhook is being
  resent"; the timestamp is the attempt's).
- The others: signed by their documented algorithm and re-checked by hmac_family.check (the
  `cryptography` package), with the provider's library's verifier on top where one is installed.
Sources per preset: tests/providers/README.md, "Issue 38 senders".
"""

import hashlib
from dataclasses import dataclass
from datetime import datetime, timezone

from standardwebhooks.webhooks import Webhook as StandardWebhook
from svix.webhooks import Webhook as SvixWebhook

from . import hmac_family as hf
from .common import (STALE_EXPECT, STALE_SECONDS, Context, b64, body_json, body_of, derived, derived_text, derived_uuid,
                     event_expect, iso_utc, mac, make_case, package, request, verified_by_library)

JSON = {"Content-Type": "application/json"}
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
# How long after the first attempt a retry is signed: every provider here re-signs (or keeps a
# window wider than this), so the retry carries its own timestamp.
RETRY_AFTER = 60


@dataclass(frozen=True)
class Delivery:
    """One request to make: its name, body, extra headers, the moment it is signed at."""
    name: str
    body: object
    at: int
    headers: dict | None = None


def _cases(preset, signed_by, secret, wrong, sign, first, retry, lookalike, key_of, event_type, stale=True):
    """first, its retry (a duplicate of first's key), a look-alike (its own key) and, with a
    tolerance, the look-alike signed STALE_SECONDS ago (401)."""
    cases = []
    for delivery, duplicate in ((first, False), (retry, True), (lookalike, False)):
        req = sign(delivery)
        expect = event_expect(key_of(delivery, req), event_type)
        if duplicate:
            expect["duplicate"] = True
        cases.append(make_case(preset, "event", delivery.name, signed_by, secret, wrong, req, expect))
    if stale:
        old = Delivery(f"{lookalike.name}, signed {STALE_SECONDS // 3600} h ago", lookalike.body,
                       lookalike.at - STALE_SECONDS, lookalike.headers)
        cases.append(make_case(preset, "stale", old.name, signed_by, secret, wrong, sign(old), STALE_EXPECT))
    return cases


def hmac_sha256(secret: str, message: bytes) -> bytes:
    return mac(secret, message)


def _header_key(name):
    def key(_delivery, req):
        return next(v for k, v in req["headers"].items() if k.lower() == name)
    return key


def _body_key(*pointers):
    def key(delivery, _req):
        parts = []
        for pointer in pointers:
            value = delivery.body
            for part in pointer.strip("/").split("/"):
                value = value[int(part)] if isinstance(value, list) else value[part]
            parts.append(str(value))
        return "|".join(parts)
    return key


# --- Standard Webhooks / Svix senders ---------------------------------------------------------

def _whsec(preset: str, label: str) -> str:
    return "whsec_" + b64(derived(f"{preset}/{label}", 24))


def _standard(ctx, preset, prefix, msg_ids, bodies, event_type, names, verifier):
    """A Standard Webhooks sender: headers `{prefix}-id/-timestamp/-signature`, signed by the
    standardwebhooks package, verified by `verifier` ('svix' or 'standardwebhooks')."""
    secret, wrong = _whsec(preset, "secret"), _whsec(preset, "wrong")

    def sign(delivery):
        raw = body_json(delivery.body)
        msg_id = delivery.headers["id"]
        signature = StandardWebhook(secret).sign(msg_id, datetime.fromtimestamp(delivery.at, tz=timezone.utc), raw)
        headers = {**JSON, f"{prefix}-id": msg_id, f"{prefix}-timestamp": str(delivery.at),
                   f"{prefix}-signature": signature}
        req = request(ctx, preset, headers, raw)
        if callable(verifier):
            check = lambda: verifier(secret, req)  # noqa: E731
        elif verifier == "svix":
            check = lambda: SvixWebhook(secret).verify(body_of(req), req["headers"])  # noqa: E731
        else:
            check = lambda: StandardWebhook(secret).verify(body_of(req), req["headers"])  # noqa: E731
        # A stale request must also be refused by the library at now; the others are checked at their moment.
        verified_by_library(preset, delivery.name, check, delivery.at,
                            ctx.now if ctx.now - delivery.at >= STALE_SECONDS else delivery.at)
        return req

    first = Delivery(names[0], bodies[0], ctx.now - RETRY_AFTER, {"id": msg_ids[0]})
    retry = Delivery(f"{names[0]}, retried: same message id, re-signed {RETRY_AFTER} s later", bodies[0], ctx.now,
                     {"id": msg_ids[0]})
    lookalike = Delivery(names[1], bodies[1], ctx.now, {"id": msg_ids[1]})
    if callable(verifier):
        library = f"{package(preset)} webhooks.verify_signature"
    else:
        library = f"{package(verifier)} Webhook.verify"
    signed_by = f"{package('standardwebhooks')} Webhook.sign, verified by {library}"
    return _cases(preset, signed_by, secret, wrong, sign, first, retry, lookalike, _header_key(f"{prefix}-id"),
                  event_type)


def incident_io(ctx: Context) -> list:
    # incident.io's public incident payload: {"event_type": ..., "<event_type>": {the incident}}.
    def body(incident_id, reference, name):
        kind = "public_incident.incident_created_v2"
        return {"event_type": kind, kind: {
            "id": incident_id, "reference": reference, "name": name, "incident_status": {"category": "triage"},
            "severity": {"name": "Minor"}, "created_at": "2024-05-01T14:00:00Z"}}
    bodies = [body("01FDAG4SAP5TYPT98WGR2N7W91", "INC-123", "Our database is sad"),
              body("01FDAG4SAP5TYPT98WGR2N7W92", "INC-124", "Our database is sad")]
    ids = ["msg_" + derived_text("incident-io/1", 27, ALNUM), "msg_" + derived_text("incident-io/2", 27, ALNUM)]
    return _standard(ctx, "incident-io", "webhook", ids, bodies, "public_incident.incident_created_v2",
                     ["INC-123 created", "INC-124 created (same name, another incident)"], "svix")


def render(ctx: Context) -> list:
    # Render's payload: {"type", "timestamp", "data": {"id", "serviceId", ...}} (render-examples/webhook-receiver).
    def body(event_id):
        return {"type": "deploy_ended", "timestamp": "2024-05-01T14:00:00.000Z",
                "data": {"id": event_id, "serviceId": "srv-cukouhrtq21c73e9scng", "serviceName": "api",
                         "status": "succeeded"}}
    bodies = [body("evj-cukouhrtq21c73e9scn0"), body("evj-cukouhrtq21c73e9scn1")]
    ids = ["msg_" + derived_text("render/1", 27, ALNUM), "msg_" + derived_text("render/2", 27, ALNUM)]
    return _standard(ctx, "render", "webhook", ids, bodies, "deploy_ended",
                     ["deploy_ended", "deploy_ended of the next deploy"], "standardwebhooks")


def stytch(ctx: Context) -> list:
    # Stytch's payload fields (workspace-management/webhooks): project_id, event_id, action,
    # object_type, source, id, timestamp, and the object.
    def body(event_id):
        return {"project_id": "project-test-6c20cd16-73d5-44f7-852c-9a7e7b2ccf62", "event_id": event_id,
                "action": "CREATE", "object_type": "user", "source": "DIRECT",
                "id": "user-test-16d9ba61-97a1-4ba4-9720-b03761dc50c6", "timestamp": "2024-05-01T14:00:00Z",
                "user": {"user_id": "user-test-16d9ba61-97a1-4ba4-9720-b03761dc50c6", "status": "active"}}
    bodies = [body(derived_uuid("stytch/event1")), body(derived_uuid("stytch/event2"))]
    ids = ["msg_" + derived_text("stytch/1", 27, ALNUM), "msg_" + derived_text("stytch/2", 27, ALNUM)]
    return _standard(ctx, "stytch", "svix", ids, bodies, "user",
                     ["direct.user.create", "direct.user.create of the same user (another event)"], "svix")


# --- HMAC senders by their documented algorithms ---------------------------------------------

def _secret_pair(preset: str, length: int, alphabet: str = ALNUM):
    return derived_text(f"{preset}/secret", length, alphabet), derived_text(f"{preset}/wrong", length, alphabet)


def workos(ctx: Context) -> list:
    doc = "https://workos.com/docs/webhooks"
    secret, wrong = _secret_pair("workos", 25)
    scheme = hf.Scheme("WorkOS-Signature", content=hf.dot_template)

    def sign(delivery):
        raw, ts = body_json(delivery.body), str(delivery.at * 1000 + 272)
        value = f"t={ts}, v1={scheme.sign(secret, raw, ts)}"
        req = request(ctx, "workos", {**JSON, "WorkOS-Signature": value}, raw)
        hf.check(scheme, secret, req, value=value.split("v1=")[1], timestamp=ts)
        return req

    def body(event_id, user_id):
        return {"id": event_id, "event": "dsync.user.created", "created_at": "2024-05-01T14:00:00.000Z",
                "data": {"id": user_id, "object": "directory_user", "state": "active",
                         "directory_id": "directory_01F9M7F68PZP8QXP8G7X5QRHS7", "first_name": "Blair",
                         "last_name": "Lunchford"}}
    first = Delivery("dsync.user.created", body("event_01FKJ843CVE8F7BXQSPFH0M53V", "directory_user_01E1JG7J09H96KYP8HM9B0G5SJ"),
                     ctx.now - RETRY_AFTER)
    retry = Delivery(f"dsync.user.created, retried (the same event, re-signed {RETRY_AFTER} s later)", first.body, ctx.now)
    lookalike = Delivery("dsync.user.created of another user",
                         body("event_01FKJ843CVE8F7BXQSPFH0M53W", "directory_user_01E1JG7J09H96KYP8HM9B0G5SK"), ctx.now)
    signed_by = f"algorithm from {doc} (t=<ms>, v1=hex HMAC-SHA256 of '{{t}}.{{body}}'), recomputed by the cryptography package"
    return _cases("workos", signed_by, secret, wrong, sign, first, retry, lookalike, _body_key("/id"),
                  "dsync.user.created")


def zendesk(ctx: Context) -> list:
    doc = "https://developer.zendesk.com/documentation/webhooks/verifying/"
    secret, wrong = _secret_pair("zendesk", 40)
    scheme = hf.Scheme("X-Zendesk-Webhook-Signature", encoding="base64",
                       content=lambda ts, b: ts.encode("utf-8") + b)

    def sign(delivery):
        raw, ts = body_json(delivery.body), iso_utc(delivery.at)
        headers = {**JSON, "User-Agent": "Zendesk Webhook", "X-Zendesk-Webhook-Id": "01GK8E6BKWMJZD2T8Y5AXJQMG5",
                   "X-Zendesk-Webhook-Signature-Timestamp": ts, "X-Zendesk-Webhook-Signature": scheme.sign(secret, raw, ts)}
        req = request(ctx, "zendesk", headers, raw)
        hf.check(scheme, secret, req, timestamp=ts)
        return req

    def body(event_id, current):
        # The event schema of Zendesk's webhook event types reference (user.active_changed).
        return {"type": "zen:event-type:user.active_changed", "account_id": 12514403, "id": event_id,
                "time": "2099-07-04T05:33:18Z", "zendesk_event_version": "2022-06-20", "subject": "zen:user:6596848315901",
                "detail": {"created_at": "2099-07-04T05:27:58Z", "id": "6596848315901", "role": "end-user"},
                "event": {"current": current, "previous": not current}}
    first = Delivery("user.active_changed", body("2b24ef10-19d4-4740-93cf-8f98ec4776c0", False), ctx.now - RETRY_AFTER)
    retry = Delivery(f"user.active_changed, retried {RETRY_AFTER} s later (the same event id)", first.body, ctx.now)
    lookalike = Delivery("user.active_changed back (same user, another event)",
                         body("2b24ef10-19d4-4740-93cf-8f98ec4776c1", True), ctx.now)
    signed_by = f"algorithm from {doc} (base64 HMAC-SHA256 of timestamp + body), recomputed by the cryptography package"
    return _cases("zendesk", signed_by, secret, wrong, sign, first, retry, lookalike, _body_key("/id"),
                  "zen:event-type:user.active_changed")



def lithic(ctx: Context) -> list:
    from lithic import Lithic

    def verify(secret, req):
        Lithic(api_key="offline", webhook_secret=secret).webhooks.verify_signature(
            body_of(req).decode("utf-8"), req["headers"], secret=secret)

    # A Lithic event: event_type, token and the object's fields (lithic-go webhook.go).
    def body(token):
        return {"event_type": "account_holder.created", "token": token,
                "account_token": "b68b7424-aa69-4cbc-a946-30d90181b621", "created": "2024-05-01T14:00:00Z",
                "status": "ACCEPTED", "status_reason": [], "required_documents": []}
    bodies = [body("00000000-0000-4000-8000-000000000001"), body("00000000-0000-4000-8000-000000000002")]
    ids = ["msg_" + derived_text("lithic/1", 27, ALNUM), "msg_" + derived_text("lithic/2", 27, ALNUM)]
    return _standard(ctx, "lithic", "webhook", ids, bodies, "account_holder.created",
                     ["account_holder.created", "account_holder.created of another holder"], verify)


def polar(ctx: Context) -> list:
    """Polar: Standard Webhooks headers, the HMAC keyed by the secret's own bytes (polar-sdk
    `_signing_keys`: the secret as is, or its base64 decoding where it decodes)."""
    from polar.webhooks import _verify_signature

    secret, wrong = "polar_whs_" + derived_text("polar/secret", 43, ALNUM), "polar_whs_" + derived_text("polar/wrong", 43, ALNUM)
    scheme = hf.Scheme("webhook-signature", encoding="base64", prefix="v1,")

    def sign(delivery):
        raw, ts, msg_id = body_json(delivery.body), str(delivery.at), delivery.headers["id"]
        value = scheme.encode(hmac_sha256(secret, f"{msg_id}.{ts}.".encode("utf-8") + raw))
        req = request(ctx, "polar", {**JSON, "webhook-id": msg_id, "webhook-timestamp": ts, "webhook-signature": value}, raw)
        hf.check(hf.Scheme("webhook-signature", encoding="base64", prefix="v1,",
                           content=lambda t, b: f"{msg_id}.{t}.".encode("utf-8") + b), secret, req, timestamp=ts)
        verified_by_library("polar", delivery.name, lambda: _verify_signature(body_of(req).decode("utf-8"), req["headers"], secret),
                            delivery.at, ctx.now if ctx.now - delivery.at >= STALE_SECONDS else delivery.at)
        return req

    def body(order_id):
        return {"type": "order.paid", "timestamp": "2024-05-01T14:00:00Z",
                "data": {"id": order_id, "status": "paid", "amount": 1000, "currency": "usd",
                         "customer_id": "992fae2a-2a17-4b7a-8d9e-e287cf90131b"}}
    first = Delivery("order.paid", body("b2c8c7a5-6a0e-4bfa-9c49-3c8c2b0f1a01"), ctx.now - RETRY_AFTER,
                     {"id": "msg_" + derived_text("polar/1", 27, ALNUM)})
    retry = Delivery(f"order.paid, retried: same webhook-id, re-signed {RETRY_AFTER} s later", first.body, ctx.now, first.headers)
    lookalike = Delivery("order.paid of the next order", body("b2c8c7a5-6a0e-4bfa-9c49-3c8c2b0f1a02"), ctx.now,
                         {"id": "msg_" + derived_text("polar/2", 27, ALNUM)})
    signed_by = (f"algorithm from https://polar.sh/docs/integrate/webhooks/delivery (Standard Webhooks, the secret's "
                 f"bytes as the key), verified by {package('polar-sdk')} polar.webhooks._verify_signature (300 s)")
    return _cases("polar", signed_by, secret, wrong, sign, first, retry, lookalike, _header_key("webhook-id"), "order.paid")


def airwallex(ctx: Context) -> list:
    doc = "https://www.airwallex.com/docs/developer-tools/webhooks/listen-for-webhook-events"
    secret, wrong = _secret_pair("airwallex", 32)
    scheme = hf.Scheme("x-signature", content=lambda ts, b: ts.encode("utf-8") + b)

    def sign(delivery):
        raw, ts = body_json(delivery.body), str(delivery.at * 1000 + 123)
        headers = {**JSON, "x-timestamp": ts, "x-signature": scheme.sign(secret, raw, ts)}
        req = request(ctx, "airwallex", headers, raw)
        hf.check(scheme, secret, req, timestamp=ts)
        return req

    def body(event_id, intent_id):
        return {"id": event_id, "name": "payment_intent.succeeded", "account_id": "acct_8TFC4YwhPWCXFSmdtM8qfQ",
                "data": {"object": {"id": intent_id, "amount": 100.0, "currency": "USD", "status": "SUCCEEDED"}},
                "created_at": "2024-05-01T14:00:00+0000", "version": "2024-06-30"}
    first = Delivery("payment_intent.succeeded", body("evt_hkdmr7mv5gbeqhgy0sw", "int_hkdmr7mv5gbeqhgy0sa"), ctx.now - RETRY_AFTER)
    retry = Delivery(f"payment_intent.succeeded, retried {RETRY_AFTER} s later (the same event id)", first.body, ctx.now)
    lookalike = Delivery("payment_intent.succeeded of another intent",
                         body("evt_hkdmr7mv5gbeqhgy0sx", "int_hkdmr7mv5gbeqhgy0sb"), ctx.now)
    signed_by = f"algorithm from {doc} (hex HMAC-SHA256 of x-timestamp + body), recomputed by the cryptography package"
    return _cases("airwallex", signed_by, secret, wrong, sign, first, retry, lookalike, _body_key("/id"),
                  "payment_intent.succeeded")


def easypost(ctx: Context) -> list:
    import easypost as easypost_lib

    secret, wrong = _secret_pair("easypost", 32)

    def sign(delivery):
        raw = body_json(delivery.body)
        value = "hmac-sha256-hex=" + hmac_sha256(secret, raw).hex()
        req = request(ctx, "easypost", {**JSON, "X-Hmac-Signature": value}, raw)
        hf.check(hf.Scheme("X-Hmac-Signature", prefix="hmac-sha256-hex="), secret, req)
        verified_by_library("easypost", delivery.name,
                            lambda: easypost_lib.validate_webhook(body_of(req), req["headers"], secret), delivery.at, delivery.at)
        return req

    def body(event_id, tracker_id):
        # An Event as EasyPost's webhooks guide shows one (tracker.updated).
        return {"id": event_id, "object": "Event", "mode": "test", "description": "tracker.updated",
                "previous_attributes": {"status": "pre_transit"}, "pending_urls": [], "completed_urls": [],
                "created_at": "2024-05-01T14:00:00Z", "updated_at": "2024-05-01T14:00:00Z",
                "result": {"id": tracker_id, "object": "Tracker", "status": "in_transit",
                           "tracking_code": "EZ2000000002", "carrier": "USPS"}}
    first = Delivery("tracker.updated", body("evt_0d8a2a0e3c5b4f0e9c1d2a3b4c5d6e7f", "trk_c8e0edb5bb284caa934a0d3db23a148z"), ctx.now)
    retry = Delivery("tracker.updated, retried (the same Event)", first.body, ctx.now)
    lookalike = Delivery("tracker.updated of the same tracker (another Event)",
                         body("evt_0d8a2a0e3c5b4f0e9c1d2a3b4c5d6e80", "trk_c8e0edb5bb284caa934a0d3db23a148z"), ctx.now)
    signed_by = (f"algorithm from https://docs.easypost.com/guides/webhooks-guide (hmac-sha256-hex= of the body), "
                 f"verified by {package('easypost')} easypost.validate_webhook")
    return _cases("easypost", signed_by, secret, wrong, sign, first, retry, lookalike, _body_key("/id"),
                  "tracker.updated", stale=False)


def gocardless(ctx: Context) -> list:
    """A batch of events (`events`), split: each event keyed by its `id`. The retry is the same
    webhook again; the look-alike is a later webhook holding the first event again and a new one."""
    from gocardless_pro import webhooks

    secret, wrong = _secret_pair("gocardless", 40)

    def event(event_id, payment):
        return {"id": event_id, "created_at": "2024-05-01T14:00:00.000Z", "resource_type": "payments", "action": "confirmed",
                "details": {"origin": "gocardless", "cause": "payment_confirmed",
                            "description": "Enough time has passed since the payment was submitted for the banks to return an error."},
                "metadata": {}, "links": {"payment": payment}}

    def sign(delivery):
        raw = body_json(delivery.body)
        value = hmac_sha256(secret, raw).hex()
        req = request(ctx, "gocardless", {**JSON, "Origin": "https://api.gocardless.com", "Webhook-Signature": value}, raw)
        hf.check(hf.Scheme("Webhook-Signature"), secret, req)
        verified_by_library("gocardless", delivery.name,
                            lambda: webhooks.parse(body_of(req), secret, value), delivery.at, delivery.at)
        return req

    one, two = event("EV0001AAAAAAAA", "PM0001AAAAAAAA"), event("EV0001AAAAAAAB", "PM0001AAAAAAAB")
    first = Delivery("a webhook of one payments.confirmed event",
                     {"events": [one], "meta": {"webhook_id": "WB0001AAAAAAAA"}}, ctx.now)
    retry = Delivery("the same webhook retried", first.body, ctx.now)
    lookalike = Delivery("a later webhook with that event again and a new payments.confirmed",
                         {"events": [one, two], "meta": {"webhook_id": "WB0001AAAAAAAB"}}, ctx.now)
    signed_by = (f"algorithm from https://developer.gocardless.com/getting-started/partners/staying-up-to-date-with-webhooks/ "
                 f"(hex HMAC-SHA256 of the body), verified by {package('gocardless-pro')} webhooks.parse")
    key = lambda delivery, _req: delivery.body["events"][-1]["id"]  # noqa: E731 - the event each case shows
    return _cases("gocardless", signed_by, secret, wrong, sign, first, retry, lookalike, key, "payments", stale=False)

SIGNERS = {
    "airwallex": airwallex,
    "easypost": easypost,
    "gocardless": gocardless,
    "incident-io": incident_io,
    "lithic": lithic,
    "polar": polar,
    "render": render,
    "stytch": stytch,
    "workos": workos,
    "zendesk": zendesk,
}
