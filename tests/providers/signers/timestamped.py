"""HMAC providers whose signature covers a timestamp, by their documented algorithm: Zoom,
Twitch, Calendly and Mailgun; Zoom and Twitch also their handshakes. Only Twitch documents a
tolerance (10 minutes), so Twitch has a stale case (signed STALE_SECONDS before now): a
tolerance the provider does not set could refuse a genuine late retry. Zoom and Calendly retry
for long and do not say a retry is re-signed, so their presets take 3600 s (chosen): each has a
retry signed LATE_RETRY_SECONDS ago, accepted, and a stale case beyond the hour, refused. Mailgun has one too: its
signature covers only a timestamp and a token, so the preset keys on the token and sets the
longest tolerance (3600 s), and a reused signature block is a duplicate, never a new event. Every request is
re-checked by hmac_family.check (Mailgun's, whose signature is in the body, by _check_mailgun)."""

import base64
import hashlib
import json
from datetime import datetime, timezone

from . import hmac_family as hf
from .common import (STALE_EXPECT, STALE_SECONDS, Context, SignerError, body_json, derived_text, derived_uuid, event_expect,
                     header, mac, make_case, request)

JSON = {"Content-Type": "application/json"}
# How long before "now" a late retry is signed: past the old 300 s default, inside the preset's
# tolerance (docs/providers.md, "Keys, tolerances and answers").
LATE_RETRY_SECONDS = {"zoom": 1500, "calendly": 1800}
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _alg(doc: str, extra: str = "") -> str:
    return f"algorithm from {doc}{extra}, recomputed by the cryptography package"


def zoom(ctx: Context) -> list:
    doc = "https://developers.zoom.us/docs/api/webhooks/"
    secret, wrong = derived_text("zoom/secret", 22, ALNUM), derived_text("zoom/wrong", 22, ALNUM)
    scheme = hf.Scheme("x-zm-signature", prefix="v0=", content=hf.v0_template)

    def signed(body: dict, at: int) -> dict:
        raw, ts = body_json(body), str(at)
        headers = {**JSON, "x-zm-request-timestamp": ts, scheme.header: scheme.sign(secret, raw, ts),
                   "x-zm-trackingid": "v=2.0;clid=aw1;rid=" + derived_text("zoom/rid", 12, ALNUM)}
        req = request(ctx, "zoom", headers, raw)
        hf.check(scheme, secret, req, timestamp=ts)
        return req

    event = {"event": "meeting.started", "event_ts": 1714572000000, "payload": {
        "account_id": "AAAAAABBBB", "object": {
            "id": "1234567890", "uuid": "4444AAAiAAAAAiAAAiAAAA==", "host_id": "x1yCzABCDEfg23HiJKl4mN",
            "topic": "My Meeting", "type": 2, "start_time": "2024-05-01T14:00:00Z", "timezone": "UTC"}}}
    event_req = signed(event, ctx.now)
    key = hashlib.sha256(body_json(event)).hexdigest()  # Zoom documents no event id
    # endpoint.url_validation, with the example plainToken and event_ts of Zoom's documentation.
    plain = "qgg8vlvZRS6UYooatFL8Aw"
    validation = signed({"payload": {"plainToken": plain}, "event_ts": 1654503849680,
                         "event": "endpoint.url_validation"}, ctx.now)
    answer = {"plainToken": plain, "encryptedToken": mac(secret, plain).hex()}
    # A retry that still carries the first attempt's timestamp, 25 minutes on (Zoom retries at
    # +5, +25 and +85 min and does not say it re-signs): inside the preset's 3600 s.
    late = {**event, "event_ts": 1714572000001, "payload": {**event["payload"], "object": {
        **event["payload"]["object"], "uuid": "5555BBBiBBBBBiBBBiBBBB=="}}}
    late_at = ctx.now - LATE_RETRY_SECONDS["zoom"]
    return [
        make_case("zoom", "event", "meeting.started event", _alg(doc), secret, wrong, event_req,
                  event_expect(key, "meeting.started")),
        make_case("zoom", "event", "meeting.started retry signed 25 min ago (tolerance 3600 s)", _alg(doc), secret,
                  wrong, signed(late, late_at), event_expect(hashlib.sha256(body_json(late)).hexdigest(),
                                                             "meeting.started")),
        make_case("zoom", "stale", "meeting.started signed 2 h ago (beyond 3600 s)", _alg(doc), secret, wrong,
                  signed(late, ctx.now - STALE_SECONDS), STALE_EXPECT),
        make_case("zoom", "handshake", "endpoint.url_validation", _alg(doc, ", doc example plainToken"), secret,
                  wrong, validation, {"status": 200, "json": answer, "headers": {"X-Content-Type-Options": "nosniff"}}),
    ]


def _twitch_timestamp(at: int) -> str:
    # RFC 3339 with nanoseconds, as in Twitch's examples (2019-11-16T10:11:12.634234626Z).
    return datetime.fromtimestamp(at, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + ".634234626Z"


def twitch(ctx: Context) -> list:
    doc = "https://dev.twitch.tv/docs/eventsub/handling-webhook-events/"
    secret, wrong = derived_text("twitch/secret", 32, ALNUM), derived_text("twitch/wrong", 32, ALNUM)
    scheme = hf.Scheme("Twitch-Eventsub-Message-Signature", prefix="sha256=")
    subscription = {"id": "f1c2a387-161a-49f9-a165-0f21d7a4e1c4", "status": "enabled", "type": "channel.follow",
                    "version": "2", "cost": 0,
                    "condition": {"broadcaster_user_id": "1337", "moderator_user_id": "1337"},
                    "transport": {"method": "webhook", "callback": ctx.url("twitch")},
                    "created_at": "2019-11-16T10:11:12.634234626Z"}

    def signed(message_type: str, message_id: str, body: dict, at: int) -> dict:
        raw, ts = body_json(body), _twitch_timestamp(at)
        headers = {**JSON, "Twitch-Eventsub-Message-Id": message_id, "Twitch-Eventsub-Message-Retry": str(ctx.attempt),
                   "Twitch-Eventsub-Message-Type": message_type, "Twitch-Eventsub-Message-Timestamp": ts,
                   "Twitch-Eventsub-Subscription-Type": "channel.follow", "Twitch-Eventsub-Subscription-Version": "2"}
        headers[scheme.header] = scheme.sign(secret, message_id.encode("utf-8") + ts.encode("utf-8") + raw)
        req = request(ctx, "twitch", headers, raw)
        # Signed content: message id + timestamp + body, checked from the emitted headers.
        check = hf.Scheme(scheme.header, prefix="sha256=", content=lambda t, b: (
            header(req, "Twitch-Eventsub-Message-Id") + header(req, "Twitch-Eventsub-Message-Timestamp")).encode() + b)
        hf.check(check, secret, req)
        return req

    message_id = "befa7b53-d79d-478f-86b9-120f112b044e"  # the example id of Twitch's documentation
    event = {"subscription": subscription, "event": {
        "user_id": "1234", "user_login": "cool_user", "user_name": "Cool_User", "broadcaster_user_id": "1337",
        "broadcaster_user_login": "cooler_user", "broadcaster_user_name": "Cooler_User",
        "followed_at": "2020-07-15T18:16:11.17106713Z"}}
    challenge = "pogchamp-kappa-360noscope-vohiyo"  # the example challenge of Twitch's documentation
    verification = {"challenge": challenge, "subscription": {**subscription, "status": "webhook_callback_verification_pending"}}
    return [
        make_case("twitch", "event", "channel.follow notification", _alg(doc), secret, wrong,
                  signed("notification", message_id, event, ctx.now), event_expect(message_id, "channel.follow")),
        make_case("twitch", "distinct", "another user follows, alike", _alg(doc), secret, wrong,
                  signed("notification", "c1d8e9f0-a2b3-4c5d-8e6f-708192a3b4c5",
                         {**event, "event": {**event["event"], "user_id": "1235", "user_login": "cool_user_2"}},
                         ctx.now),
                  event_expect("c1d8e9f0-a2b3-4c5d-8e6f-708192a3b4c5", "channel.follow")),
        make_case("twitch", "stale", "channel.follow signed 2 h ago", _alg(doc), secret, wrong,
                  signed("notification", message_id, event, ctx.now - STALE_SECONDS), STALE_EXPECT),
        make_case("twitch", "handshake", "webhook_callback_verification", _alg(doc, ", doc example challenge"),
                  secret, wrong, signed("webhook_callback_verification", derived_uuid("twitch/verification"),
                                        verification, ctx.now),
                  {"status": 200, "body": challenge, "content_type": "text/plain", "headers": {"X-Content-Type-Options": "nosniff"}}),
    ]


def calendly(ctx: Context) -> list:
    doc = "https://developer.calendly.com/api-docs/4c305798a61d3-webhook-signatures"
    alphabet = ALNUM + "-_"
    secret, wrong = derived_text("calendly/secret", 43, alphabet), derived_text("calendly/wrong", 43, alphabet)
    scheme = hf.Scheme("Calendly-Webhook-Signature", content=hf.dot_template)
    invitee = "https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAAAAAAAAAAAAAAA"
    late_invitee = "https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/BBBBBBBBBBBBBBBB"
    body = {"created_at": "2024-05-01T14:00:00.000000Z", "created_by": "https://api.calendly.com/users/AAAAAAAAAAAAAAAA",
            "event": "invitee.created", "payload": {
                "uri": invitee, "email": "test@example.com", "name": "John Doe", "status": "active",
                "event": "https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2",
                "created_at": "2024-05-01T14:00:00.000000Z", "rescheduled": False}}

    def signed(at: int, body: dict = body) -> dict:
        raw, ts = body_json(body), str(at)
        value = scheme.sign(secret, raw, ts)
        req = request(ctx, "calendly", {**JSON, scheme.header: f"t={ts},v1={value}"}, raw)
        parts = dict(item.split("=", 1) for item in header(req, scheme.header).split(","))
        hf.check(scheme, secret, req, value=parts["v1"], timestamp=parts["t"])
        return req

    expect = event_expect(f"invitee.created|{invitee}", "invitee.created")
    # A retry still carrying its first timestamp 30 minutes on (Calendly retries for 24 h with
    # back-off and does not say it re-signs): inside the preset's 3600 s; 2 h on it is refused.
    late = {**body, "payload": {**body["payload"], "uri": late_invitee}}
    late_expect = event_expect(f"invitee.created|{late_invitee}", "invitee.created")
    return [
        make_case("calendly", "event", "invitee.created event", _alg(doc), secret, wrong, signed(ctx.now), expect),
        make_case("calendly", "event", "invitee.created retry signed 30 min ago (tolerance 3600 s)", _alg(doc),
                  secret, wrong, signed(ctx.now - LATE_RETRY_SECONDS["calendly"], late), late_expect),
        make_case("calendly", "stale", "invitee.created signed 2 h ago (beyond 3600 s)", _alg(doc), secret, wrong,
                  signed(ctx.now - STALE_SECONDS, late), STALE_EXPECT),
    ]


def mailgun(ctx: Context) -> list:
    doc = "https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks"
    secret, wrong = derived_text("mailgun/secret", 32, "0123456789abcdef"), derived_text("mailgun/wrong", 32, "0123456789abcdef")
    token = "e0b5477167110d68991efc6b9f89f0a11066af27834600e123"  # the docs' example token
    event_data = {"id": "CPgfbmQMTCKtHW6uIWtuVe", "event": "delivered", "timestamp": 1714572000.908181,
                  "recipient": "alice@example.com", "log-level": "info",
                  "message": {"headers": {"message-id": "20240501140000.1.F3E2@example.com"}},
                  "delivery-status": {"code": 250, "message": "OK"}}

    def signed(at: int, data: dict = event_data, token: str = token) -> dict:
        # Mailgun's signature is inside the JSON body: HMAC-SHA256(signing key, timestamp + token), hex.
        signature = mac(secret, f"{at}{token}").hex()
        body = {"signature": {"timestamp": str(at), "token": token, "signature": signature}, "event-data": data}
        req = request(ctx, "mailgun", dict(JSON), body_json(body))
        _check_mailgun(req, secret)
        return req

    # The signature covers the timestamp and the token only: the key is the signed token, and a
    # captured signature block under another event (a new event-data id) is that key again.
    forged = {**event_data, "id": "forged-event-id", "event": "failed"}
    other_token = derived_text("mailgun/token/2", 50, "0123456789abcdef")
    expect = event_expect(token, "delivered")
    return [
        make_case("mailgun", "event", "delivered event, keyed on the signed token", _alg(doc), secret, wrong,
                  signed(ctx.now), expect),
        make_case("mailgun", "stale", "delivered event signed 2 h ago (tolerance 3600 s)", _alg(doc), secret, wrong,
                  signed(ctx.now - STALE_SECONDS), STALE_EXPECT),
        make_case("mailgun", "reused", "the signature block reused with another event-data id", _alg(doc), secret,
                  wrong, signed(ctx.now, forged), {"key": token}),
        # Another delivery to the same recipient: another request, another token.
        make_case("mailgun", "distinct", "another delivered event, alike", _alg(doc), secret, wrong,
                  signed(ctx.now, {**event_data, "id": "DPhgcnRNUDLuIX7vJXuvWf"}, other_token),
                  event_expect(other_token, "delivered")),
    ]


def _check_mailgun(req: dict, secret: str) -> None:
    sig = json.loads(base64.b64decode(req["body_base64"]))["signature"]
    expected = hf.independent_mac(secret, (sig["timestamp"] + sig["token"]).encode("utf-8"), "sha256").hex()
    if expected != sig["signature"]:
        raise SignerError("mailgun: the recomputed signature differs from the body's")


SIGNERS = {"zoom": zoom, "twitch": twitch, "calendly": calendly, "mailgun": mailgun}
