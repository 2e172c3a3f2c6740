"""The Standard Webhooks / Svix family: svix, clerk and resend (svix-* headers, the svix package),
openai (webhook-* headers, checked by the openai package's verifier), replicate (checked by the
replicate package's validator) and brex (the standardwebhooks package). Each signs
'{id}.{timestamp}.{body}' with the base64 key after 'whsec_'; each has an event and a stale case."""

from datetime import datetime, timezone

from standardwebhooks.webhooks import Webhook as StandardWebhook
from svix.webhooks import Webhook

from .common import (STALE_EXPECT, STALE_SECONDS, Context, SignerError, b64, body_json, body_of, clock, derived, derived_text,
                     event_expect, make_case, package, request, verified_by_library)

JSON = {"Content-Type": "application/json"}


def _whsec(preset: str, label: str) -> str:
    return "whsec_" + b64(derived(f"{preset}/{label}", 24))


def _sign(secret: str, msg_id: str, at: int, raw: bytes) -> str:
    return StandardWebhook(secret).sign(msg_id, datetime.fromtimestamp(at, tz=timezone.utc), raw)


def _family_cases(ctx, preset, prefix, msg_id, body, event_type, name, signed_by, verify, secret=None):
    """The event and stale cases of one member: headers `{prefix}-id`, `{prefix}-timestamp` and
    `{prefix}-signature` (prefix "svix", "webhook" or Brex's capitalised "Webhook")."""
    suffix = ("Id", "Timestamp", "Signature") if prefix[0].isupper() else ("id", "timestamp", "signature")
    secret = secret or _whsec(preset, "secret")
    wrong = _whsec(preset, "wrong")
    raw = body_json(body)
    cases = []
    for kind, at in (("event", ctx.now), ("stale", ctx.now - STALE_SECONDS)):
        headers = {**JSON, f"{prefix}-{suffix[0]}": msg_id, f"{prefix}-{suffix[1]}": str(at),
                   f"{prefix}-{suffix[2]}": _sign(secret, msg_id, at, raw)}
        req = request(ctx, preset, headers, raw)
        verified_by_library(preset, kind, lambda req=req: verify(secret, req), at, ctx.now)
        label = name if kind == "event" else f"{name} signed 2 h ago"
        expect = event_expect(msg_id, event_type) if kind == "event" else STALE_EXPECT
        cases.append(make_case(preset, kind, label, signed_by, secret, wrong, req, expect))
    # A second message with the same body (the same kind of event again): its own id, so its
    # own key; the id is what tells two messages apart (spec l.137).
    other = msg_id[:-6] + derived_text(f"{preset}/alike", 6)
    headers = {**JSON, f"{prefix}-{suffix[0]}": other, f"{prefix}-{suffix[1]}": str(ctx.now),
               f"{prefix}-{suffix[2]}": _sign(secret, other, ctx.now, raw)}
    req = request(ctx, preset, headers, raw)
    verified_by_library(preset, "alike", lambda req=req: verify(secret, req), ctx.now, ctx.now)
    cases.append(make_case(preset, "distinct", f"{name}, another message with the same body", signed_by, secret,
                           wrong, req, event_expect(other, event_type)))
    return cases


def _svix_verify(secret: str, req: dict) -> None:
    Webhook(secret).verify(body_of(req), req["headers"])


def _svix_member(ctx, preset, msg_id, body, event_type, name):
    signed_by = f"{package('svix')} Webhook.sign, verified by svix Webhook.verify"
    return _family_cases(ctx, preset, "svix", msg_id, body, event_type, name, signed_by, _svix_verify)


def svix(ctx: Context) -> list:
    _svix_doc_vector()
    body = {"type": "invoice.paid", "id": "invoice_WF7WtCLFFtd8ubcTgboSFNql", "status": "paid", "attempt": 2}
    return _svix_member(ctx, "svix", "msg_p5jXN8AQM9LWM0D4loKWxJek", body, "invoice.paid", "invoice.paid event")


def _svix_doc_vector() -> None:
    """The svix library's published test vector must verify with the svix package (timestamp
    checks aside): it proves the signing string and key decoding the family relies on."""
    secret, msg_id, ts = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330
    headers = {"svix-id": msg_id, "svix-timestamp": str(ts),
               "svix-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}
    with clock(ts):
        try:
            Webhook(secret).verify(b'{"test": 2432232314}', headers)
        except Exception as err:
            raise SignerError(f"svix: the published test vector no longer verifies: {err}") from err


def clerk(ctx: Context) -> list:
    body = {"data": {"id": "user_29w83sxmDNGwOuEthce5gg56FcC", "object": "user", "first_name": "Example",
                     "last_name": "Example", "created_at": 1654012591514,
                     "email_addresses": [{"email_address": "example@example.org", "id": "idn_29w83yL7CwVlJXylYLxcslromF1"}],
                     "primary_email_address_id": "idn_29w83yL7CwVlJXylYLxcslromF1"},
            "event_attributes": {"http_request": {"client_ip": "0.0.0.0", "user_agent": "Mozilla/5.0"}},
            "object": "event", "timestamp": 1654012591835, "type": "user.created"}
    return _svix_member(ctx, "clerk", "msg_2b7ssIEfRMWzgLRkchV9lCENQvD", body, "user.created", "user.created event")


def resend(ctx: Context) -> list:
    body = {"type": "email.sent", "created_at": "2024-02-22T23:41:12.126Z",
            "data": {"created_at": "2024-02-22T23:41:11.894719+00:00", "email_id": "56761188-7520-42d8-8898-ff6fc54ce618",
                     "from": "Acme <onboarding@resend.dev>", "to": ["delivered@resend.dev"],
                     "subject": "Sending this example"}}
    return _svix_member(ctx, "resend", "msg_2cIl7EqrdOI7CwpkcRjmpXBkrzO", body, "email.sent", "email.sent event")


def openai(ctx: Context) -> list:
    from openai import OpenAI

    def verify(secret, req):
        client = OpenAI(api_key="sk-test-offline", webhook_secret=secret)
        client.webhooks.verify_signature(body_of(req), req["headers"])

    body = {"object": "event", "id": "evt_685343a1381c819085d44c354e1b330e", "type": "response.completed",
            "created_at": 1750287018, "data": {"id": "resp_abc123"}}
    signed_by = (f"{package('standardwebhooks')} Webhook.sign, verified by {package('openai')} "
                 "client.webhooks.verify_signature")
    return _family_cases(ctx, "openai", "webhook", "wh_685342e6c53c8190a1be43f081506c52", body,
                         "response.completed", "response.completed event", signed_by, verify)


def replicate(ctx: Context) -> list:
    from replicate.webhook import Webhooks, WebhookSigningSecret

    def verify(secret, req):
        Webhooks.validate(headers=req["headers"], body=body_of(req).decode("utf-8"),
                          secret=WebhookSigningSecret(key=secret), tolerance=300)

    body = {"id": "ufawqhfynnddngldkgtslldrkq", "model": "replicate/hello-world",
            "version": "5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa",
            "input": {"text": "Alice"}, "output": "hello Alice", "logs": "", "error": None, "status": "succeeded",
            "created_at": "2024-05-01T14:00:00.000Z", "started_at": "2024-05-01T14:00:01.000Z",
            "completed_at": "2024-05-01T14:00:02.000Z",
            "urls": {"get": "https://api.replicate.com/v1/predictions/ufawqhfynnddngldkgtslldrkq",
                     "cancel": "https://api.replicate.com/v1/predictions/ufawqhfynnddngldkgtslldrkq/cancel"}}
    signed_by = (f"{package('standardwebhooks')} Webhook.sign, verified by {package('replicate')} "
                 "Webhooks.validate (tolerance 300)")
    return _family_cases(ctx, "replicate", "webhook", "msg_" + derived_text("replicate/msg", 27), body,
                         "succeeded", "prediction succeeded", signed_by, verify)


def brex(ctx: Context) -> list:
    def verify(secret, req):
        StandardWebhook(secret).verify(body_of(req), req["headers"])

    body = {"event_type": "TRANSFER_PROCESSED", "transfer_id": "dptx_cl2l9wnph000a0j4a6kq6x5rl",
            "company_id": "cuacc_cl2l9wnph00090j4a6yrwbvxc"}
    signed_by = f"{package('standardwebhooks')} Webhook.sign, verified by standardwebhooks Webhook.verify"
    return _family_cases(ctx, "brex", "Webhook", "msg_" + derived_text("brex/msg", 27), body,
                         "TRANSFER_PROCESSED", "TRANSFER_PROCESSED event", signed_by, verify)


SIGNERS = {"svix": svix, "clerk": clerk, "resend": resend, "openai": openai, "replicate": replicate, "brex": brex}
