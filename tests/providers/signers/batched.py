"""Issue 38's batched presets and their neighbours. Adyen (an HMAC per notification item, signed
and checked by the `Adyen` library): a batch, its retry as Adyen sends it, a batch overlapping it
with a look-alike event, and a batch with one bad event, refused whole (nothing claimed).
Checkout.com (HMAC-SHA256 of the body, by its documented algorithm, recomputed by the
cryptography package) and Slack interactivity (a form `payload`, signed and verified by
slack-sdk): an event, its retry, a look-alike."""

import copy
import hashlib
import json
from urllib.parse import urlencode

from . import hmac_family as hf
from .common import (STALE_EXPECT, STALE_SECONDS, Context, SignerError, body_json, body_of, derived_hex, derived_text,
                     event_expect, make_case, package, request, require, verified_by_library)

JSON = {"Content-Type": "application/json"}

# What every refused case expects: 401, nothing written.
REFUSED = {"status": 401}


def adyen(ctx: Context) -> list:
    from Adyen.util import generate_notification_sig, is_valid_hmac_notification

    # The HMAC key as the Customer Area shows it: 64 hex digits (32 bytes).
    secret, wrong = derived_hex("adyen/secret", 64), derived_hex("adyen/wrong", 64)

    def item(psp, event_code, success, merchant_reference, original=None, value=1130):
        """One NotificationRequestItem as Adyen's JSON webhooks send it, signed by the library."""
        fields = {"eventCode": event_code, "success": success, "eventDate": "2024-05-01T14:00:00+02:00",
                  "merchantAccountCode": "YOUR_MERCHANT_ACCOUNT", "pspReference": psp,
                  "merchantReference": merchant_reference, "amount": {"value": value, "currency": "EUR"},
                  "paymentMethod": "visa", "reason": "082700:1111:03/2030"}
        if original:
            fields["originalReference"] = original
        signature = generate_notification_sig(fields, secret).decode("ascii")
        signed = {**fields, "additionalData": {"hmacSignature": signature}}
        # The library's own check must accept it (under the right key only).
        require(is_valid_hmac_notification(copy.deepcopy(signed), secret), f"adyen {psp}: Adyen refused its own signature")
        require(not is_valid_hmac_notification(copy.deepcopy(signed), wrong), f"adyen {psp}: verified under another key")
        return {"NotificationRequestItem": signed}

    def batch(items):
        return request(ctx, "adyen", JSON, body_json({"live": "false", "notificationItems": items}))

    signed_by = (f"{package('Adyen')} Adyen.util.generate_notification_sig per item, "
                 "verified by is_valid_hmac_notification")
    accepted = {"status": 200, "body": "[accepted]"}
    # The authorisation of the docs' example payment; its merchantReference holds the
    # separator Adyen joins the signed fields with (no escaping in Adyen's library).
    auth = item("7914073381342284", "AUTHORISATION", "true", "order:2024:0042")
    auth_key = "7914073381342284|AUTHORISATION|true"
    # A look-alike: another attempt at the same payment reference, refused by the issuer.
    refused_auth = item("7914073381342284", "AUTHORISATION", "false", "order:2024:0042")
    capture = item("8835511210681763", "CAPTURE", "true", "order:2024:0042", original="7914073381342284")
    forged = copy.deepcopy(item("9914073381342299", "REFUND", "true", "order:2024:0042"))
    forged["NotificationRequestItem"]["amount"]["value"] = 113000  # signed for 1130
    if forged["NotificationRequestItem"]["amount"]["value"] == 1130:
        raise SignerError("adyen: the forged item is not changed")

    # The authorisation's signed string re-split around the `:` of its merchantReference so
    # that the key would change (eventCode "EUR", success "AUTHORISATION:true"): the same
    # signature verifies it (checked below), and the preset's body check refuses it, 400.
    genuine = auth["NotificationRequestItem"]
    resplit = {**{k: v for k, v in genuine.items() if k != "additionalData"}, "merchantReference": "order",
               "amount": {"value": 2024, "currency": "0042:1130"}, "eventCode": "EUR", "success": "AUTHORISATION:true"}
    require(generate_notification_sig(resplit, secret).decode("ascii") == genuine["additionalData"]["hmacSignature"],
            "adyen: the re-split item does not carry the genuine signature")
    resplit = {"NotificationRequestItem": {**resplit, "additionalData": genuine["additionalData"]}}

    def case(kind, name, items, expect):
        return make_case("adyen", kind, name, signed_by, secret, wrong, batch(items), expect)

    return [
        case("event", "AUTHORISATION notification", [auth], {**event_expect(auth_key, "AUTHORISATION"), **accepted}),
        case("event", "the same notification resent: a duplicate", [auth],
             {**event_expect(auth_key, "AUTHORISATION"), **accepted}),
        case("event", "a batch overlapping it: the capture and a refused retry of the authorisation are new",
             [auth, capture, refused_auth],
             {**event_expect("8835511210681763|CAPTURE|true", "CAPTURE"), **accepted}),
        case("event", "the look-alike AUTHORISATION with success false is its own event", [refused_auth, capture],
             {**event_expect("7914073381342284|AUTHORISATION|false", "AUTHORISATION"), **accepted}),
        case("refused", "a batch with one item whose signed amount was changed: refused whole",
             [item("9914073381342200", "REFUND", "true", "order:2024:0043"), forged], REFUSED),
        case("refused", "a batch with no item: nothing is signed", [], REFUSED),
        case("refused", "the authorisation's signed string re-split into a new key: 400", [resplit], {"status": 400}),
    ]


def checkout(ctx: Context) -> list:
    doc = "https://www.checkout.com/docs/workflows (Cko-Signature: hex HMAC-SHA256 of the raw body)"
    secret, wrong = derived_text("checkout/secret", 36), derived_text("checkout/wrong", 36)
    scheme = hf.Scheme("Cko-Signature")

    def event(event_id, payment_id, event_type, amount):
        return {"id": event_id, "type": event_type, "version": "1.0.0", "created_on": "2024-05-01T14:00:00Z",
                "data": {"id": payment_id, "action_id": "act_" + derived_text(f"checkout/{event_id}", 26),
                         "amount": amount, "currency": "GBP", "reference": "ORD-5023-4E89",
                         "processed_on": "2024-05-01T13:59:58Z", "response_code": "10000"},
                "_links": {"self": {"href": f"https://api.sandbox.checkout.com/workflows/events/{event_id}"}}}

    def signed(body):
        raw = body_json(body)
        req = request(ctx, "checkout", {**JSON, scheme.header: scheme.sign(secret, raw)}, raw)
        hf.check(scheme, secret, req)
        return req

    signed_by = f"algorithm from {doc}, recomputed by the cryptography package"
    first = event("evt_az5sblvku4ge3dwpztvyizgcau", "pay_mbabizu24mvu3mela5njyhpit4", "payment_approved", 6540)
    # A second approval of another payment of the same order and amount: only the id tells.
    alike = event("evt_dli6ty4qo5vuxle5wklf5gwbwy", "pay_ymhp2ihx5vkunhbwxxldzq7pye", "payment_approved", 6540)
    return [
        make_case("checkout", "event", "payment_approved event", signed_by, secret, wrong, signed(first),
                  event_expect("evt_az5sblvku4ge3dwpztvyizgcau", "payment_approved")),
        make_case("checkout", "event", "the same event resent: a duplicate", signed_by, secret, wrong, signed(first),
                  event_expect("evt_az5sblvku4ge3dwpztvyizgcau", "payment_approved")),
        make_case("checkout", "event", "a look-alike approval of another payment", signed_by, secret, wrong,
                  signed(alike), event_expect("evt_dli6ty4qo5vuxle5wklf5gwbwy", "payment_approved")),
    ]


def slack_interactivity(ctx: Context) -> list:
    from slack_sdk.signature import SignatureVerifier

    secret, wrong = derived_hex("slack-interactivity/secret", 32), derived_hex("slack-interactivity/wrong", 32)

    def interaction(trigger, action_ts):
        # A block_actions payload as Slack's interactivity reference shows it (trimmed).
        return {"type": "block_actions", "team": {"id": "T9TK3CUKW", "domain": "example"},
                "user": {"id": "UA8RXUSPL", "username": "jtorrance", "team_id": "T9TK3CUKW"},
                "api_app_id": "AABA1ABCD", "token": "9s8d9as89d8as9d8as989", "container": {
                    "type": "message_attachment", "message_ts": "1548261231.000200", "attachment_id": 1,
                    "channel_id": "CBR2V3XEX", "is_ephemeral": False, "is_app_unfurl": False},
                "trigger_id": trigger, "channel": {"id": "CBR2V3XEX", "name": "review-updates"},
                "response_url": "https://hooks.slack.com/actions/AABA1ABCD/1232321423432/D09sSasdasdAS9091209",
                "actions": [{"action_id": "WaXA", "block_id": "=qXel", "text": {"type": "plain_text", "text": "View"},
                             "value": "click_me_123", "type": "button", "action_ts": action_ts}]}

    def signer(payload):
        raw = urlencode({"payload": body_json(payload).decode("utf-8")}).encode("utf-8")

        def signed(at):
            value = SignatureVerifier(secret).generate_signature(timestamp=str(at), body=raw)
            headers = {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": str(at),
                       "X-Slack-Signature": value}
            req = request(ctx, "slack-interactivity", headers, raw)
            verified_by_library("slack-interactivity", "block_actions", lambda: SignatureVerifier(secret).is_valid_request(
                body_of(req), req["headers"]), at, ctx.now)
            return req
        return signed

    signed_by = (f"{package('slack-sdk')} SignatureVerifier.generate_signature over the form body, "
                 "verified by SignatureVerifier.is_valid_request")
    first = signer(interaction("13345224609.738474920.8088930838d88f008e0", "1548426417.840180"))
    # The same button pressed again: another trigger_id and action_ts, all else alike.
    again = signer(interaction("13345224609.738474920.8088930838d88f008e1", "1548426419.101207"))

    def key(req):
        return hashlib.sha256(body_of(req)).hexdigest()

    first_req, again_req = first(ctx.now), again(ctx.now)
    answer = {"status": 200, "body": ""}
    return [
        make_case("slack-interactivity", "event", "block_actions button press", signed_by, secret, wrong, first_req,
                  {**event_expect(key(first_req), None), **answer}),
        make_case("slack-interactivity", "stale", "block_actions signed 2 h ago", signed_by, secret, wrong,
                  first(ctx.now - STALE_SECONDS), STALE_EXPECT),
        make_case("slack-interactivity", "event", "the same request again: a duplicate", signed_by, secret, wrong,
                  first_req, {**event_expect(key(first_req), None), **answer}),
        make_case("slack-interactivity", "event", "the button pressed again: a new interaction", signed_by, secret,
                  wrong, again_req, {**event_expect(key(again_req), None), **answer}),
    ]


def microsoft_graph(ctx: Context) -> list:
    from urllib.parse import quote

    doc = "https://learn.microsoft.com/graph/change-notifications-delivery-webhooks"
    # clientState: the subscription's secret, at most 255 characters, sent in every notification.
    secret, wrong = derived_text("microsoft-graph/secret", 40), derived_text("microsoft-graph/wrong", 40)
    subscription = "7f105c7d-2dc5-4530-97cd-4e7ae6534c07"
    tenant = "bb8775a4-4d8c-42cf-a1d4-4d58c2bb668f"

    def notification(message_id, etag, change="created", client_state=None):
        """A changeNotification for an Outlook message, as Graph's webhook delivery page shows it."""
        return {"subscriptionId": subscription, "subscriptionExpirationDateTime": "2024-05-03T11:00:00.0000000Z",
                "changeType": change, "resource": f"Users/{tenant}/Messages/{message_id}",
                "resourceData": {"@odata.type": "#Microsoft.Graph.Message",
                                 "@odata.id": f"Users/{tenant}/Messages/{message_id}",
                                 "@odata.etag": etag, "id": message_id},
                "clientState": client_state or secret, "tenantId": tenant}

    def key(item):
        # The event's bytes without its clientState (taken out before the key, like Figma's passcode).
        return hashlib.sha256(body_json({k: v for k, v in item.items() if k != "clientState"})).hexdigest()

    def batch(items):
        raw = body_json({"value": items})
        req = request(ctx, "microsoft-graph", JSON, raw)
        # Read back from the emitted request: each notification carries the clientState meant
        # for it (the check Graph documents: compare it with the subscription's).
        sent = [n.get("clientState") for n in json.loads(body_of(req))["value"]]
        require(sent == [n["clientState"] for n in items], "microsoft-graph: the emitted clientState differs")
        return req

    signed_by = f"the clientState check from {doc} (and the changeNotification resource type), read back from the request"
    first = notification("AAMkAGUwNjQ4ZjIxAAA=", 'W/"CQAAABYAAACQ2fKdhq8oSKEDSVrdi3lRAAAaV4/7"')
    second = notification("AAMkAGUwNjQ4ZjIxBBB=", 'W/"CQAAABYAAACQ2fKdhq8oSKEDSVrdi3lRAAAaV5+8"')
    # The same message changed again: another etag, all else alike.
    updated = notification("AAMkAGUwNjQ4ZjIxAAA=", 'W/"CQAAABYAAACQ2fKdhq8oSKEDSVrdi3lRAAAaWA/9"', "updated")
    token = "Validation: Testing client application reachability for subscription Request-Id: 61fbd7e8-5f1b-4f57-9b2c-05ad8a8ea7ba"

    def case(kind, name, req, expect):
        return make_case("microsoft-graph", kind, name, signed_by, secret, wrong, req, expect)

    return [
        case("handshake", "validationToken on the notification URL",
             request(ctx, "microsoft-graph", {"Content-Type": "text/plain; charset=utf-8"}, b"", "POST",
                     "validationToken=" + quote(token, safe="")),
             {"status": 200, "body": token, "content_type": "text/plain", "headers": {"X-Content-Type-Options": "nosniff"}}),
        case("event", "two notifications in one batch", batch([first, second]), event_expect(key(first), "created")),
        case("event", "the batch retried: each notification a duplicate", batch([first, second]),
             event_expect(key(second), "created")),
        case("event", "a batch overlapping it: the same message updated is a new event", batch([second, updated]),
             event_expect(key(updated), "updated")),
        case("refused", "a batch with one notification under another clientState: refused whole",
             batch([notification("AAMkAGUwNjQ4ZjIxCCC=", 'W/"CQAAABYAAACQ2fKdhq8oSKEDSVrdi3lRAAAaW1/1"'),
                    notification("AAMkAGUwNjQ4ZjIxDDD=", 'W/"CQAAABYAAACQ2fKdhq8oSKEDSVrdi3lRAAAaW2/2"',
                                 client_state=wrong)]), REFUSED),
        case("refused", "a batch with no notification: nothing is signed", batch([]), REFUSED),
    ]


SIGNERS = {"adyen": adyen, "microsoft-graph": microsoft_graph, "checkout": checkout, "slack-interactivity": slack_interactivity}
