"""Providers with a published Python library: each request is signed by the library's signing
helper where it has one (else by the documented algorithm) and then verified by the library's
own verifier, with every clock set to the signing moment (and, for a stale case, refused at now)."""

from urllib.parse import parse_qsl, urlencode

from .common import (STALE_EXPECT, STALE_SECONDS, Context, SignerError, b64, body_json, body_of, derived, derived_hex, derived_text,
                     derived_uuid, event_expect, header, iso_utc, mac, make_case, package, request,
                     verified_by_library)

JSON = {"Content-Type": "application/json"}


def _stale_pair(ctx, preset, name, signed, secret, wrong, expect, signed_by, source=None):
    """An event case signed now and a stale one signed STALE_SECONDS ago."""
    return [make_case(preset, "event", name, signed_by, secret, wrong, signed(ctx.now), expect, source),
            make_case(preset, "stale", f"{name} signed 2 h ago", signed_by, secret, wrong,
                      signed(ctx.now - STALE_SECONDS), STALE_EXPECT, source)]


def stripe(ctx: Context) -> list:
    import stripe as lib

    secret, wrong = ("whsec_" + derived_text(f"stripe/{w}", 32) for w in ("secret", "wrong"))
    # The event id of Stripe's webhook documentation example.
    body = {"id": "evt_1NG8Du2eZvKYlo2CUI79vXWy", "object": "event", "api_version": "2022-11-15", "created": 1686089970,
            "data": {"object": {"id": "in_1NG8Du2eZvKYlo2C8rNLbqAp", "object": "invoice", "amount_paid": 2000,
                                "currency": "usd", "customer": "cus_NzeC4eBoTvKs9P", "status": "paid"}},
            "livemode": False, "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None}, "type": "invoice.paid"}
    payload = body_json(body).decode("utf-8")

    def signed(at):
        value = lib.WebhookSignature.generate_signature_header(payload, secret, timestamp=at)
        req = request(ctx, "stripe", {**JSON, "Stripe-Signature": value}, payload.encode("utf-8"))
        verified_by_library("stripe", "invoice.paid", lambda: lib.Webhook.construct_event(
            body_of(req).decode("utf-8"), header(req, "Stripe-Signature"), secret), at, ctx.now)
        return req

    signed_by = (f"{package('stripe')} WebhookSignature.generate_signature_header, "
                 "verified by Webhook.construct_event (tolerance 300)")
    cases = _stale_pair(ctx, "stripe", "invoice.paid event", signed, secret, wrong,
                        event_expect("evt_1NG8Du2eZvKYlo2CUI79vXWy", "invoice.paid"), signed_by)
    # Another invoice paid in the same second: a look-alike with its own event id.
    alike = {**body, "id": "evt_1NG8Du2eZvKYlo2CUI79vXWz",
             "data": {"object": {**body["data"]["object"], "id": "in_1NG8Du2eZvKYlo2C8rNLbqAq"}}}
    payload = body_json(alike).decode("utf-8")
    value = lib.WebhookSignature.generate_signature_header(payload, secret, timestamp=ctx.now)
    req = request(ctx, "stripe", {**JSON, "Stripe-Signature": value}, payload.encode("utf-8"))
    verified_by_library("stripe", "alike", lambda: lib.Webhook.construct_event(
        body_of(req).decode("utf-8"), header(req, "Stripe-Signature"), secret), ctx.now, ctx.now)
    return cases + [make_case("stripe", "distinct", "invoice.paid of another invoice, alike", signed_by, secret,
                              wrong, req, event_expect("evt_1NG8Du2eZvKYlo2CUI79vXWz", "invoice.paid"))]


# Slack's "Verifying requests" walkthrough: its signing secret, timestamp, body and signature.
SLACK_DOC_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
SLACK_DOC_TIMESTAMP = "1531420618"
SLACK_DOC_BODY = ("token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
                  "&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text="
                  "&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
                  "&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c")
SLACK_DOC_SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"


def slack(ctx: Context) -> list:
    from slack_sdk.signature import SignatureVerifier

    doc_signature = SignatureVerifier(SLACK_DOC_SECRET).generate_signature(timestamp=SLACK_DOC_TIMESTAMP,
                                                                           body=SLACK_DOC_BODY)
    if doc_signature != SLACK_DOC_SIGNATURE:
        raise SignerError("slack: slack-sdk does not reproduce the documentation's example signature")
    secret, wrong = derived_hex("slack/secret", 32), derived_hex("slack/wrong", 32)

    def signer(body):
        def signed(at):
            raw = body_json(body)
            value = SignatureVerifier(secret).generate_signature(timestamp=str(at), body=raw)
            headers = {**JSON, "X-Slack-Request-Timestamp": str(at), "X-Slack-Signature": value}
            if ctx.attempt:
                # Slack's retry headers (verifying requests: "X-Slack-Retry-Num").
                headers |= {"X-Slack-Retry-Num": str(ctx.attempt), "X-Slack-Retry-Reason": "http_timeout"}
            req = request(ctx, "slack", headers, raw)
            verified_by_library("slack", body["type"], lambda: SignatureVerifier(secret).is_valid_request(
                body_of(req), req["headers"]), at, ctx.now)
            return req
        return signed

    event = {"token": "XXYYZZ", "team_id": "T123ABC456", "api_app_id": "A123ABC456",
             "event": {"type": "app_mention", "user": "U123ABC456", "text": "<@U0LAN0Z89> is it everything?",
                       "ts": "1515449522.000016", "channel": "C123ABC456", "event_ts": "1515449522000016"},
             "type": "event_callback", "authed_users": ["U061F7AUR"], "event_id": "Ev123ABC456",
             "event_time": 1515449522000016}
    # url_verification's example values from Slack's Events API documentation.
    challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    verification = {"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "challenge": challenge, "type": "url_verification"}
    signed_by = (f"{package('slack-sdk')} SignatureVerifier.generate_signature (reproduces the doc example), "
                 "verified by SignatureVerifier.is_valid_request")
    # The same mention again, a second later: its own event_id.
    alike = {**event, "event_id": "Ev123ABC457", "event_time": 1515449523000016,
             "event": {**event["event"], "ts": "1515449523.000016", "event_ts": "1515449523000016"}}
    return _stale_pair(ctx, "slack", "app_mention event_callback", signer(event), secret, wrong,
                       event_expect("Ev123ABC456", "app_mention"), signed_by) + [
        make_case("slack", "distinct", "app_mention again a second later, alike", signed_by, secret, wrong,
                  signer(alike)(ctx.now), event_expect("Ev123ABC457", "app_mention")),
        make_case("slack", "handshake", "url_verification", signed_by, secret, wrong, signer(verification)(ctx.now),
                  {"status": 200, "body": challenge, "content_type": "text/plain", "headers": {"X-Content-Type-Options": "nosniff"}})]


def twilio(ctx: Context) -> list:
    from twilio.request_validator import RequestValidator

    secret, wrong = derived_hex("twilio/secret", 32), derived_hex("twilio/wrong", 32)
    url = ctx.url("twilio")
    sid = "SM" + derived_hex("twilio/message", 32)
    account = "AC" + derived_hex("twilio/account", 32)
    params = {"ToCountry": "US", "ToState": "CA", "SmsMessageSid": sid, "NumMedia": "0", "ToCity": "SAN FRANCISCO",
              "FromZip": "94105", "SmsSid": sid, "FromState": "CA", "SmsStatus": "received", "FromCity": "SAN FRANCISCO",
              "Body": "Hello from Twilio", "FromCountry": "US", "To": "+15017122661", "ToZip": "94105",
              "NumSegments": "1", "MessageSid": sid, "AccountSid": account, "From": "+15558675310",
              "ApiVersion": "2010-04-01"}
    raw = urlencode(params).encode("utf-8")
    value = RequestValidator(secret).compute_signature(url, params)
    headers = {"Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": value}
    req = request(ctx, "twilio", headers, raw)
    sent = dict(parse_qsl(body_of(req).decode("utf-8"), keep_blank_values=True))
    verified_by_library("twilio", "sms", lambda: RequestValidator(secret).validate(
        url, sent, header(req, "X-Twilio-Signature")), ctx.now, ctx.now)
    signed_by = f"{package('twilio')} RequestValidator.compute_signature, verified by RequestValidator.validate"
    # Twilio "requires TwiML in XML format for incoming call and incoming SMS webhook responses"
    # (error 12300 on JSON): the preset answers the empty TwiML document, as text/xml.
    expect = {**event_expect(f"{sid}|received", "received"),
              "body": '<?xml version="1.0" encoding="UTF-8"?><Response/>', "content_type": "text/xml"}
    # The same text again from the same number: another message, another MessageSid.
    sid2 = "SM" + derived_hex("twilio/message/2", 32)
    params2 = {**params, "SmsMessageSid": sid2, "SmsSid": sid2, "MessageSid": sid2}
    raw2 = urlencode(params2).encode("utf-8")
    req2 = request(ctx, "twilio", {"Content-Type": "application/x-www-form-urlencoded",
                                   "X-Twilio-Signature": RequestValidator(secret).compute_signature(url, params2)}, raw2)
    sent2 = dict(parse_qsl(body_of(req2).decode("utf-8"), keep_blank_values=True))
    verified_by_library("twilio", "alike", lambda: RequestValidator(secret).validate(
        url, sent2, header(req2, "X-Twilio-Signature")), ctx.now, ctx.now)
    expect2 = {**expect, "key": f"{sid2}|received"}
    return [make_case("twilio", "event", "incoming SMS (form POST)", signed_by, secret, wrong, req,
                      expect, {"public_url": url}),
            make_case("twilio", "distinct", "the same text again, another message, alike", signed_by, secret, wrong,
                      req2, expect2, {"public_url": url})]


def square(ctx: Context) -> list:
    from square.utils.webhooks_helper import verify_signature

    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    secret, wrong = derived_text("square/secret", 22, alphabet), derived_text("square/wrong", 22, alphabet)
    url = ctx.url("square")
    event_id = "6a8f5f28-54a1-4eb0-a98a-3111513fd4fc"
    body = {"merchant_id": "6SSW7HV8K2ST5", "type": "payment.created", "event_id": event_id,
            "created_at": "2024-05-01T14:00:00.000Z",
            "data": {"type": "payment", "id": "KkAkhdMsgzn59SM8A89WgKwekxLZY", "object": {"payment": {
                "id": "KkAkhdMsgzn59SM8A89WgKwekxLZY", "amount_money": {"amount": 100, "currency": "USD"},
                "status": "APPROVED", "location_id": "S8GWD5R9QB376", "order_id": "03O3USaPaAaFnI6kkwB1JxGgBsUZY",
                "created_at": "2024-05-01T14:00:00.000Z", "source_type": "CARD"}}}}
    raw = body_json(body)
    # The library only verifies: signed by the documented algorithm, base64 HMAC-SHA256 of URL + body.
    value = b64(mac(secret, url.encode("utf-8") + raw))
    headers = {**JSON, "x-square-hmacsha256-signature": value, "square-environment": "Production",
               "square-initial-delivery-timestamp": iso_utc(ctx.now, ".000")}
    req = request(ctx, "square", headers, raw)
    verified_by_library("square", "payment.created", lambda: verify_signature(
        request_body=body_of(req).decode("utf-8"), signature_header=header(req, "x-square-hmacsha256-signature"),
        signature_key=secret, notification_url=url), ctx.now, ctx.now)
    signed_by = ("algorithm from https://developer.squareup.com/docs/webhooks/step3validate, verified by "
                 f"{package('squareup')} square.utils.webhooks_helper.verify_signature")
    # Another payment of the same amount a moment later: its own event_id.
    other = "7b9f6039-65b2-4fc1-b0a9-4222624ae5a7"
    alike = {**body, "event_id": other, "data": {**body["data"], "id": "LlBlieNthzo60TN9B90XhLxflmMZ"}}
    raw2 = body_json(alike)
    req2 = request(ctx, "square", {**headers, "x-square-hmacsha256-signature": b64(mac(secret, url.encode("utf-8") + raw2))},
                   raw2)
    verified_by_library("square", "alike", lambda: verify_signature(
        request_body=body_of(req2).decode("utf-8"), signature_header=header(req2, "x-square-hmacsha256-signature"),
        signature_key=secret, notification_url=url), ctx.now, ctx.now)
    return [make_case("square", "event", "payment.created event", signed_by, secret, wrong, req,
                      event_expect(event_id, "payment.created"), {"public_url": url}),
            make_case("square", "distinct", "payment.created of another payment, alike", signed_by, secret, wrong,
                      req2, event_expect(other, "payment.created"), {"public_url": url})]


def razorpay(ctx: Context) -> list:
    import razorpay as lib

    secret, wrong = derived_text("razorpay/secret", 24), derived_text("razorpay/wrong", 24)
    event_id = "EdFPe1hrLd5Csf"
    body = {"entity": "event", "account_id": "acc_BFQ7uQEaa7j2z7", "event": "payment.captured",
            "contains": ["payment"], "created_at": 1714572000,
            "payload": {"payment": {"entity": {"id": "pay_DESlfW9H8K9uqM", "entity": "payment", "amount": 100,
                                               "currency": "INR", "status": "captured", "order_id": None,
                                               "method": "netbanking", "captured": True}}}}
    raw = body_json(body)
    value = mac(secret, raw).hex()
    req = request(ctx, "razorpay", {**JSON, "X-Razorpay-Signature": value, "X-Razorpay-Event-Id": event_id}, raw)
    client = lib.Client(auth=("rzp_test_offline", "offline"))
    verified_by_library("razorpay", "payment.captured", lambda: client.utility.verify_webhook_signature(
        body_of(req).decode("utf-8"), header(req, "X-Razorpay-Signature"), secret), ctx.now, ctx.now)
    signed_by = ("algorithm from https://razorpay.com/docs/webhooks/validate-test/, verified by "
                 f"{package('razorpay')} Utility.verify_webhook_signature")
    # Another payment captured in the same second: its own event id.
    alike = {**body, "payload": {"payment": {"entity": {**body["payload"]["payment"]["entity"], "id": "pay_DESlfW9H8K9uqN"}}}}
    raw2 = body_json(alike)
    req2 = request(ctx, "razorpay", {**JSON, "X-Razorpay-Signature": mac(secret, raw2).hex(),
                                     "X-Razorpay-Event-Id": "EdFPe1hrLd5Csg"}, raw2)
    verified_by_library("razorpay", "alike", lambda: client.utility.verify_webhook_signature(
        body_of(req2).decode("utf-8"), header(req2, "X-Razorpay-Signature"), secret), ctx.now, ctx.now)
    return [make_case("razorpay", "event", "payment.captured event", signed_by, secret, wrong, req,
                      event_expect(event_id, "payment.captured")),
            make_case("razorpay", "distinct", "payment.captured of another payment, alike", signed_by, secret, wrong,
                      req2, event_expect("EdFPe1hrLd5Csg", "payment.captured"))]


def coinbase_commerce(ctx: Context) -> list:
    from coinbase_commerce.webhook import Webhook

    secret, wrong = derived_uuid("coinbase/secret"), derived_uuid("coinbase/wrong")
    event_id = "24934862-d980-46cb-9402-43c81b0cdba6"
    body = {"attempt_number": 1 + ctx.attempt, "event": {
        "api_version": "2018-03-22", "created_at": "2024-05-01T14:00:00Z", "id": event_id, "resource": "event",
        "type": "charge:confirmed", "data": {"id": "2aee9dd1-67b8-43ef-8dfe-977959850f27", "code": "XA6G6ZFR",
                                             "pricing": {"local": {"amount": "1.00", "currency": "USD"}}}},
            "id": derived_uuid("coinbase/notification"), "scheduled_for": "2024-05-01T14:00:00Z"}
    raw = body_json(body)
    req = request(ctx, "coinbase-commerce", {**JSON, "X-CC-Webhook-Signature": mac(secret, raw).hex()}, raw)
    verified_by_library("coinbase-commerce", "charge:confirmed", lambda: Webhook.construct_event(
        body_of(req).decode("utf-8"), header(req, "X-CC-Webhook-Signature"), secret), ctx.now, ctx.now)
    signed_by = ("algorithm from https://docs.cdp.coinbase.com/commerce/api-arcitecture/webhooks-security, verified by "
                 f"{package('coinbase-commerce')} Webhook.construct_event")
    # Another charge confirmed: its own event id.
    other = "35a45973-e091-47de-b513-54d92e15ecb7"
    alike = {**body, "id": derived_uuid("coinbase/notification/2"),
             "event": {**body["event"], "id": other, "data": {**body["event"]["data"], "code": "XA6G6ZFS"}}}
    raw2 = body_json(alike)
    req2 = request(ctx, "coinbase-commerce", {**JSON, "X-CC-Webhook-Signature": mac(secret, raw2).hex()}, raw2)
    verified_by_library("coinbase-commerce", "alike", lambda: Webhook.construct_event(
        body_of(req2).decode("utf-8"), header(req2, "X-CC-Webhook-Signature"), secret), ctx.now, ctx.now)
    return [make_case("coinbase-commerce", "event", "charge:confirmed event", signed_by, secret, wrong, req,
                      event_expect(event_id, "charge:confirmed")),
            make_case("coinbase-commerce", "distinct", "charge:confirmed of another charge, alike", signed_by, secret,
                      wrong, req2, event_expect(other, "charge:confirmed"))]


def telnyx(ctx: Context) -> list:
    from nacl.signing import SigningKey
    from telnyx.lib.webhook_verification import verify_webhook_signature

    key, other = SigningKey(derived("telnyx/key", 32)), SigningKey(derived("telnyx/wrong", 32))
    secret, wrong = b64(bytes(key.verify_key)), b64(bytes(other.verify_key))
    # The call.initiated example of Telnyx's "Receiving webhooks" page.
    event_id = "0ccc7b54-4df3-4bca-a65a-3da1ecc777f0"
    body = {"data": {"record_type": "event", "event_type": "call.initiated", "id": event_id,
                     "occurred_at": "2018-02-02T22:25:27.521992Z",
                     "payload": {"call_control_id": "v2:T02llQxIyaRkhfRKxgAP8nY511EhFLizdvdUKJiSw8d6A9BborherQ",
                                 "connection_id": "1240401930086254526", "direction": "incoming",
                                 "from": "+15557654321", "to": "+15551234567", "state": "parked"}},
            "meta": {"attempt": 1 + ctx.attempt, "delivered_to": "https://example.com/webhooks"}}
    raw = body_json(body)

    def signed(at):
        signature = key.sign(f"{at}|".encode("utf-8") + raw).signature
        headers = {**JSON, "telnyx-signature-ed25519": b64(signature), "telnyx-timestamp": str(at)}
        req = request(ctx, "telnyx", headers, raw)
        verified_by_library("telnyx", "call.initiated", lambda: verify_webhook_signature(
            body_of(req), req["headers"], secret), at, ctx.now)
        return req

    signed_by = (f"Ed25519 by {package('PyNaCl')} over '{{timestamp}}|{{body}}', verified by "
                 f"{package('telnyx')} telnyx.lib.webhook_verification.verify_webhook_signature")
    cases = _stale_pair(ctx, "telnyx", "call.initiated event", signed, secret, wrong,
                        event_expect(event_id, "call.initiated"), signed_by)
    # Another call from the same number a second later: its own event id.
    other = "1ddd8c65-5e0f-4cdb-b76d-4eb08e8f0f81"
    raw = body_json({**body, "data": {**body["data"], "id": other, "occurred_at": "2018-02-02T22:25:28.521992Z"}})
    return cases + [make_case("telnyx", "distinct", "another call.initiated, alike", signed_by, secret, wrong,
                              signed(ctx.now), event_expect(other, "call.initiated"))]


SIGNERS = {"stripe": stripe, "slack": slack, "twilio": twilio, "square": square, "razorpay": razorpay,
           "coinbase-commerce": coinbase_commerce, "telnyx": telnyx}
