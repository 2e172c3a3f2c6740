"""Batching senders whose every event carries its own proof, and their neighbours from issue 38:
Adyen (an HMAC per notification item, signed and checked by the `Adyen` library). Each preset
gets a batch, its retry as the provider sends it, a batch overlapping it with a look-alike
event, and a batch with one bad event, refused whole (nothing claimed)."""

import copy

from .common import Context, SignerError, body_json, derived_hex, event_expect, make_case, package, request, require

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
    ]


SIGNERS = {"adyen": adyen}
