"""The senders issue 38 adds, each proven the same way: a first delivery, its retry as the provider
sends it (`"duplicate": true`: the first event's key, answered from the ledger, nothing claimed anew), a
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


def _standard(ctx, preset, prefix, msg_ids, bodies, event_type, names, verifier, key_of=None):
    """A Standard Webhooks sender: headers `{prefix}-id/-timestamp/-signature`, signed by the
    standardwebhooks package, verified by `verifier` ('svix' or 'standardwebhooks'); keyed by
    the `{prefix}-id` header unless `key_of` says otherwise."""
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
    return _cases(preset, signed_by, secret, wrong, sign, first, retry, lookalike,
                  key_of or _header_key(f"{prefix}-id"), event_type)


def browserbase(ctx: Context) -> list:
    """Browserbase: Standard Webhooks; "The envelope id is stable across retries of the same
    event, so it works as a deduplication key" (verifying-deliveries): keyed by the body's id."""
    def body(event_id, invocation_id):
        # The envelope of Browserbase's webhooks overview: id, type, resourceId, data.
        return {"id": event_id, "type": "functions.invocations.completed", "resourceId": invocation_id,
                "data": {"id": invocation_id, "status": "COMPLETED", "functionId": "a3f1c2d4-7b90-4e51-9c8a-2f6d1e0b4c73"}}
    bodies = [body(derived_uuid("browserbase/event1"), derived_uuid("browserbase/invocation1")),
              body(derived_uuid("browserbase/event2"), derived_uuid("browserbase/invocation2"))]
    ids = ["msg_" + derived_text("browserbase/1", 27, ALNUM), "msg_" + derived_text("browserbase/2", 27, ALNUM)]
    return _standard(ctx, "browserbase", "webhook", ids, bodies, "functions.invocations.completed",
                     ["functions.invocations.completed", "functions.invocations.completed of the next invocation"],
                     "standardwebhooks", key_of=_body_key("/id"))


def dodo_payments(ctx: Context) -> list:
    """Dodo Payments: "Our webhook implementation follows the Standard Webhooks specification";
    "Each webhook event contains a unique webhook-id header. Use this to implement idempotency"."""
    def body(payment_id, amount):
        # The envelope Dodo's SDKs unwrap: business_id, type, timestamp, data (payload_type and the object).
        return {"business_id": "bus_P7qG3rB9xK2mN5vL8wYtZ", "type": "payment.succeeded",
                "timestamp": "2025-08-04T05:30:31.152232Z",
                "data": {"payload_type": "Payment", "payment_id": payment_id, "total_amount": amount,
                         "currency": "USD", "status": "succeeded",
                         "customer": {"customer_id": "cus_8VbC6JDZzPEqfBPUdpj0K", "email": "ada@example.com"}}}
    bodies = [body("pay_2IjeQm4hqU6RA4Z4kwDee", 4900), body("pay_2IjeQm4hqU6RA4Z4kwDef", 4900)]
    ids = ["msg_" + derived_text("dodo-payments/1", 27, ALNUM), "msg_" + derived_text("dodo-payments/2", 27, ALNUM)]
    return _standard(ctx, "dodo-payments", "webhook", ids, bodies, "payment.succeeded",
                     ["payment.succeeded", "payment.succeeded of the same customer's next payment"],
                     "standardwebhooks")


def goody(ctx: Context) -> list:
    """Goody: "Webhooks are sent by the Svix platform" (`svix-*` headers, verified with the svix
    package, as Goody's webhook security page shows); keyed by `svix-id`."""
    def body(batch_id, gift_id, first_name):
        # The order_batch.created example of Goody's webhook events (its body names it gift_batch.created).
        return {"event_type": "gift_batch.created", "id": derived_uuid(f"goody/{batch_id}"),
                "data": {"id": batch_id, "send_status": "complete", "from_name": "John", "message": "Thank you!",
                         "gifts_count": 1,
                         "gifts_preview": [{"id": gift_id, "status": "created", "recipient_first_name": first_name,
                                            "gift_batch_id": batch_id}]}}
    bodies = [body("bd1fd5b5-6339-4331-a404-66200143ff0f", "1f6e253e-4d03-4a85-a349-0659384ac894", "Alena"),
              body("bd1fd5b5-6339-4331-a404-66200143ff10", "1f6e253e-4d03-4a85-a349-0659384ac895", "Alena")]
    ids = ["msg_" + derived_text("goody/1", 27, ALNUM), "msg_" + derived_text("goody/2", 27, ALNUM)]
    return _standard(ctx, "goody", "svix", ids, bodies, "gift_batch.created",
                     ["order_batch.created", "order_batch.created of a second batch to the same recipient"], "svix")


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


def liveblocks(ctx: Context) -> list:
    """Liveblocks: sent through Svix with `webhook-*` headers; @liveblocks/node's WebhookHandler
    verifies `${webhook-id}.${webhook-timestamp}.${body}` (the `whsec_` secret base64-decoded,
    5 minutes either way): the Standard Webhooks scheme. Keyed by `webhook-id`."""
    def body(comment_id):
        # A commentCreated event as @liveblocks/node types it: {type, data}.
        return {"type": "commentCreated", "data": {
            "projectId": "605a50b01a36d5ea7a2e9104", "roomId": "my-room-id", "threadId": "th_3sJmBhSdGWs1YZ8L2ePJe",
            "commentId": comment_id, "createdAt": "2024-05-01T14:00:00.000Z", "createdBy": "user-1"}}
    bodies = [body("cm_ZkU9tkvyDu0Fy7kXyq6yN"), body("cm_ZkU9tkvyDu0Fy7kXyq6yO")]
    ids = ["msg_" + derived_text("liveblocks/1", 27, ALNUM), "msg_" + derived_text("liveblocks/2", 27, ALNUM)]
    return _standard(ctx, "liveblocks", "webhook", ids, bodies, "commentCreated",
                     ["commentCreated", "commentCreated of the next comment in the same thread"], "standardwebhooks")


def loops(ctx: Context) -> list:
    """Loops: `Webhook-Id` "The unique ID of the event. You can use this to check if you have
    already saved or processed this specific event"; signed as Standard Webhooks (Loops' own
    verifier: `${id}.${timestamp}.${body}`, the `whsec_` secret base64-decoded)."""
    def body(email_id):
        # The email.delivered example of Loops' webhooks page.
        return {"eventName": "email.delivered", "eventTime": 1734425918, "webhookSchemaVersion": "1.0.0",
                "sourceType": "campaign", "campaignId": "cm4t1suns001uw6atri87v54s",
                "email": {"id": email_id, "emailMessageId": "cm4ittv1v001oow9hruou8na8", "subject": "Subject of the email"},
                "contactIdentity": {"id": "cm4ittmhq0011ow9h6fb460yw", "email": "test+1@loops.so", "userId": None}}
    bodies = [body("cm4t1sseg004tje7982991nan"), body("cm4t1sseg004tje7982991nao")]
    ids = ["msg_" + derived_text("loops/1", 27, ALNUM), "msg_" + derived_text("loops/2", 27, ALNUM)]
    return _standard(ctx, "loops", "webhook", ids, bodies, "email.delivered",
                     ["email.delivered", "email.delivered of the same campaign to the same contact (another send)"],
                     "standardwebhooks")


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


def persona(ctx: Context) -> list:
    doc = "https://docs.withpersona.com/webhooks"
    secret, wrong = ("wbhsec_" + derived_text(f"persona/{w}", 36, ALNUM) for w in ("secret", "wrong"))
    scheme = hf.Scheme("Persona-Signature", content=hf.dot_template)

    def sign(delivery):
        raw, ts = body_json(delivery.body), str(delivery.at)
        value = f"t={ts},v1={scheme.sign(secret, raw, ts)}"
        req = request(ctx, "persona", {**JSON, "Persona-Signature": value}, raw)
        hf.check(scheme, secret, req, value=value.split("v1=")[1], timestamp=ts)
        return req

    def body(event_id, inquiry_id):
        # Persona's events are JSON:API: data.type "event", data.id "evt_…", attributes.name.
        return {"data": {"type": "event", "id": event_id, "attributes": {
            "name": "inquiry.completed", "created-at": "2024-05-01T14:00:00.000Z",
            "payload": {"data": {"type": "inquiry", "id": inquiry_id, "attributes": {"status": "completed"}}}}}}
    first = Delivery("inquiry.completed", body("evt_HuW3eMBEcrJGL1Si7jKCNdUN", "inq_7zi4C8QSV8xEmKZ5fr5gNRQV"), ctx.now - RETRY_AFTER)
    retry = Delivery(f"inquiry.completed, retried {RETRY_AFTER} s later (the same event, t is the send time)", first.body, ctx.now)
    lookalike = Delivery("inquiry.completed of another inquiry",
                         body("evt_HuW3eMBEcrJGL1Si7jKCNdUO", "inq_7zi4C8QSV8xEmKZ5fr5gNRQW"), ctx.now)
    signed_by = f"algorithm from {doc} (t=<s>,v1=hex HMAC-SHA256 of '{{t}}.{{body}}'), recomputed by the cryptography package"
    return _cases("persona", signed_by, secret, wrong, sign, first, retry, lookalike, _body_key("/data/id"), "inquiry.completed")


def customer_io(ctx: Context) -> list:
    doc = "https://docs.customer.io/api/webhooks/"
    secret, wrong = _secret_pair("customer-io", 40)
    scheme = hf.Scheme("X-CIO-Signature", content=hf.v0_template)

    def sign(delivery):
        raw, ts = body_json(delivery.body), str(delivery.at)
        headers = {**JSON, "User-Agent": "Customer.io Web Hooks 1.0", "X-CIO-Timestamp": ts,
                   "X-CIO-Signature": scheme.sign(secret, raw, ts)}
        req = request(ctx, "customer-io", headers, raw)
        hf.check(scheme, secret, req, timestamp=ts)
        return req

    def body(event_id, metric):
        return {"event_id": event_id, "object_type": "email", "metric": metric, "timestamp": 1714572000,
                "data": {"customer_id": "42", "identifiers": {"id": "42", "email": "person@example.com"},
                         "delivery_id": "RPILAgABcRhIBqSp7kiPekGBIeVh", "action_id": 36, "campaign_id": 2,
                         "subject": "Welcome", "recipient": "person@example.com"}}
    first = Delivery("email opened", body("01E4C4CT6YDC7Y5M7FE1GWWPQJ", "opened"), ctx.now - RETRY_AFTER)
    retry = Delivery(f"email opened, retried {RETRY_AFTER} s later (the same event_id)", first.body, ctx.now)
    lookalike = Delivery("email opened again (Send Frequency: every time; another event_id)",
                         body("01E4C4CT6YDC7Y5M7FE1GWWPQK", "opened"), ctx.now)
    signed_by = f"algorithm from {doc} (hex HMAC-SHA256 of 'v0:{{timestamp}}:{{body}}'), recomputed by the cryptography package"
    return _cases("customer-io", signed_by, secret, wrong, sign, first, retry, lookalike, _body_key("/event_id"), "opened")


def make(ctx: Context) -> list:
    """Make's event subscriptions: Standard Webhooks headers (capitalised, as Make's page writes
    them) and `Webhook-Topic`, the routing metadata Make adds beside them."""
    secret, wrong = _whsec("make", "secret"), _whsec("make", "wrong")

    def sign(delivery):
        raw, msg_id = body_json(delivery.body), delivery.headers["id"]
        signature = StandardWebhook(secret).sign(msg_id, datetime.fromtimestamp(delivery.at, tz=timezone.utc), raw)
        headers = {**JSON, "Webhook-Id": msg_id, "Webhook-Timestamp": str(delivery.at), "Webhook-Signature": signature,
                   "Webhook-Topic": "scenario.execution.completed"}
        req = request(ctx, "make", headers, raw)
        verified_by_library("make", delivery.name, lambda: StandardWebhook(secret).verify(body_of(req), req["headers"]),
                            delivery.at, ctx.now if ctx.now - delivery.at >= STALE_SECONDS else delivery.at)
        return req

    def body(execution_id):
        return {"type": "scenario.execution.completed", "data": {"scenarioId": 4321, "executionId": execution_id,
                                                                 "status": "success"}}
    first = Delivery("scenario.execution.completed", body("a1b2c3d4e5f60718"), ctx.now - RETRY_AFTER,
                     {"id": derived_uuid("make/1")})
    retry = Delivery(f"scenario.execution.completed, retried: the same Webhook-Id, re-signed {RETRY_AFTER} s later",
                     first.body, ctx.now, first.headers)
    lookalike = Delivery("scenario.execution.completed of the next run", body("a1b2c3d4e5f60719"), ctx.now,
                         {"id": derived_uuid("make/2")})
    signed_by = f"{package('standardwebhooks')} Webhook.sign, verified by {package('standardwebhooks')} Webhook.verify"
    return _cases("make", signed_by, secret, wrong, sign, first, retry, lookalike, _header_key("webhook-id"),
                  "scenario.execution.completed")


def circleci(ctx: Context) -> list:
    doc = "https://circleci.com/docs/outbound-webhooks"
    secret, wrong = _secret_pair("circleci", 32)
    scheme = hf.Scheme("circleci-signature", prefix="v1=")

    def sign(delivery):
        raw = body_json(delivery.body)
        value = scheme.sign(secret, raw)
        headers = {**JSON, "User-Agent": "CircleCI-Webhook/1.0", "Circleci-Event-Type": "workflow-completed",
                   "Circleci-Signature": value}
        req = request(ctx, "circleci", headers, raw)
        hf.check(scheme, secret, req)
        return req

    def body(event_id, workflow_id):
        # A workflow-completed event: top-level id, type, happened_at, then the entities.
        return {"id": event_id, "type": "workflow-completed", "happened_at": "2024-05-01T14:00:00.000Z",
                "webhook": {"id": "cf8c4fdd-0587-4da1-b4ca-4846e9640af9", "name": "Sample Webhook"},
                "workflow": {"id": workflow_id, "name": "build-test-deploy", "status": "success",
                             "created_at": "2024-05-01T13:59:00.000Z", "stopped_at": "2024-05-01T14:00:00.000Z"},
                "project": {"id": "84996744-a854-4f5e-aea3-04e2851dc1d2", "name": "webhook-service",
                            "slug": "github/circleci/webhook-service"}}
    first = Delivery("workflow-completed", body("3888f21b-eaa7-38e3-8f3d-75a63bba8895", "fda08377-fe7e-46b1-8992-3a7aaecac9c3"), ctx.now)
    retry = Delivery("workflow-completed, retried (the same id)", first.body, ctx.now)
    lookalike = Delivery("workflow-completed of the rerun workflow",
                         body("3888f21b-eaa7-38e3-8f3d-75a63bba8896", "fda08377-fe7e-46b1-8992-3a7aaecac9c4"), ctx.now)
    signed_by = f"algorithm from {doc} (v1=hex HMAC-SHA256 of the body), recomputed by the cryptography package"
    return _cases("circleci", signed_by, secret, wrong, sign, first, retry, lookalike, _body_key("/id"),
                  "workflow-completed", stale=False)


def glean(ctx: Context) -> list:
    """Glean's triggers: Standard Webhooks, a `whsec_` secret, `webhook-id` "stable across
    retries". The body is the trigger's own (no event type is read)."""
    def body(run_id):
        return {"trigger": "document.updated", "run": run_id, "document": {"id": "doc-123", "title": "Runbook"}}
    bodies = [body("run_01"), body("run_02")]
    ids = ["msg_" + derived_text("glean/1", 27, ALNUM), "msg_" + derived_text("glean/2", 27, ALNUM)]
    cases = _standard(ctx, "glean", "webhook", ids, bodies, None,
                      ["a trigger's delivery", "the same trigger's next delivery"], "standardwebhooks")
    return cases


def signatureapi(ctx: Context) -> list:
    """SignatureAPI: Standard Webhooks; "every delivery of one event carries the same event id
    (evt_...) in the payload": the key is the body's id, so the retry here even comes under a
    new webhook-id and is still the first event's duplicate."""
    def body(event_id, recipient):
        # The recipient.completed event of SignatureAPI's webhooks page.
        return {"id": event_id, "type": "recipient.completed", "timestamp": "2025-12-31T15:00:01.999Z",
                "data": {"envelope_id": "e387553d-cbb7-4924-abd8-b2d89699e9b5", "object_id": recipient,
                         "object_type": "recipient", "recipient_type": "signer"}}
    bodies = [body("evt_4p2oouvNvjp1I9ckgqycH2", "re_7v7Sion0vqjJioYmwfZ9mf"),
              body("evt_4p2oouvNvjp1I9ckgqycH3", "re_7v7Sion0vqjJioYmwfZ9mg")]
    secret, wrong = _whsec("signatureapi", "secret"), _whsec("signatureapi", "wrong")

    def sign(delivery):
        raw, msg_id = body_json(delivery.body), delivery.headers["id"]
        signature = StandardWebhook(secret).sign(msg_id, datetime.fromtimestamp(delivery.at, tz=timezone.utc), raw)
        req = request(ctx, "signatureapi", {**JSON, "webhook-id": msg_id, "webhook-timestamp": str(delivery.at),
                                            "webhook-signature": signature}, raw)
        verified_by_library("signatureapi", delivery.name, lambda: StandardWebhook(secret).verify(body_of(req), req["headers"]),
                            delivery.at, ctx.now if ctx.now - delivery.at >= STALE_SECONDS else delivery.at)
        return req

    first = Delivery("recipient.completed", bodies[0], ctx.now - RETRY_AFTER, {"id": "msg_" + derived_text("signatureapi/1", 27, ALNUM)})
    retry = Delivery(f"recipient.completed, retried {RETRY_AFTER} s later (the same evt_ id)", bodies[0], ctx.now,
                     {"id": "msg_" + derived_text("signatureapi/1b", 27, ALNUM)})
    lookalike = Delivery("recipient.completed of the second signer", bodies[1], ctx.now,
                         {"id": "msg_" + derived_text("signatureapi/2", 27, ALNUM)})
    signed_by = f"{package('standardwebhooks')} Webhook.sign, verified by {package('standardwebhooks')} Webhook.verify"
    return _cases("signatureapi", signed_by, secret, wrong, sign, first, retry, lookalike, _body_key("/id"),
                  "recipient.completed")

SIGNERS = {
    "airwallex": airwallex,
    "browserbase": browserbase,
    "circleci": circleci,
    "customer-io": customer_io,
    "dodo-payments": dodo_payments,
    "easypost": easypost,
    "glean": glean,
    "gocardless": gocardless,
    "goody": goody,
    "incident-io": incident_io,
    "lithic": lithic,
    "liveblocks": liveblocks,
    "loops": loops,
    "make": make,
    "persona": persona,
    "polar": polar,
    "render": render,
    "signatureapi": signatureapi,
    "stytch": stytch,
    "workos": workos,
    "zendesk": zendesk,
}
