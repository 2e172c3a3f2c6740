"""Raw-body HMAC providers that also perform a handshake: Meta, Dropbox, Asana, Xero and X.
Algorithms from the providers' documentation (tests/providers/README.md); every signed request is
re-checked by hmac_family.check, every expected answer computed the way the provider checks it."""

import hashlib
from urllib.parse import urlencode

from . import hmac_family as hf
from .common import (Context, b64, body_json, derived_hex, derived_text, derived_uuid, event_expect, mac,
                     make_case, request)

JSON = {"Content-Type": "application/json"}


def _alg(doc: str) -> str:
    return f"algorithm from {doc}, recomputed by the cryptography package"


def _body_key(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def meta(ctx: Context) -> list:
    doc = "https://developers.facebook.com/docs/graph-api/webhooks/getting-started"
    secret, wrong = derived_hex("meta/secret", 32), derived_hex("meta/wrong", 32)
    scheme256 = hf.Scheme("X-Hub-Signature-256", prefix="sha256=")
    scheme1 = hf.Scheme("X-Hub-Signature", digest="sha1", prefix="sha1=")  # legacy, still sent
    wamid = "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA="
    body = {"object": "whatsapp_business_account", "entry": [{"id": "102290129340398", "changes": [{
        "field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550783881", "phone_number_id": "106540352242922"},
            "contacts": [{"profile": {"name": "Sheena Nelson"}, "wa_id": "16505551234"}],
            "messages": [{"from": "16505551234", "id": wamid, "timestamp": "1749416383", "type": "text",
                          "text": {"body": "Does it come in another color?"}}]}}]}]}
    raw = body_json(body)
    headers = {**JSON, scheme256.header: scheme256.sign(secret, raw), scheme1.header: scheme1.sign(secret, raw)}
    req = request(ctx, "meta", headers, raw)
    hf.check(scheme256, secret, req)
    hf.check(scheme1, secret, req)
    # The verification request's example values from the same page, the token doubled: the
    # inbox takes a verify token of 16 characters at least (docs/configuration.md).
    verify_token, challenge = "meatyhamhock" * 2, "1158201444"
    query = urlencode({"hub.mode": "subscribe", "hub.challenge": challenge, "hub.verify_token": verify_token})
    source = {"verify_token": verify_token}
    return [
        make_case("meta", "event", "whatsapp messages event", _alg(doc), secret, wrong, req,
                  # Meta's envelope carries no id (statuses, Messenger and Instagram have no
                  # message id either): the preset keys on the body's SHA-256.
                  event_expect(hashlib.sha256(raw).hexdigest(), "messages"), source),
        _meta_alike(ctx, doc, secret, wrong, body, scheme256, scheme1, source),
        make_case("meta", "handshake", "hub.challenge verification", f"algorithm from {doc}, doc example values",
                  secret, wrong, request(ctx, "meta", {}, b"", "GET", query),
                  {"status": 200, "body": challenge, "content_type": "text/plain", "headers": {"X-Content-Type-Options": "nosniff"}}, source),
    ]


def _meta_alike(ctx, doc, secret, wrong, body, scheme256, scheme1, source):
    """The same question sent again a second later: another message (another wamid, timestamp)."""
    value = body["entry"][0]["changes"][0]["value"]
    message = {**value["messages"][0], "id": "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RwA=",
               "timestamp": "1749416384"}
    alike = {**body, "entry": [{**body["entry"][0], "changes": [{"field": "messages",
                                                                  "value": {**value, "messages": [message]}}]}]}
    raw = body_json(alike)
    headers = {**JSON, scheme256.header: scheme256.sign(secret, raw), scheme1.header: scheme1.sign(secret, raw)}
    req = request(ctx, "meta", headers, raw)
    hf.check(scheme256, secret, req)
    return make_case("meta", "distinct", "the same text sent again, alike", _alg(doc), secret, wrong, req,
                     event_expect(hashlib.sha256(raw).hexdigest(), "messages"), source)


def dropbox(ctx: Context) -> list:
    doc = "https://www.dropbox.com/developers/reference/webhooks"
    secret, wrong = derived_text("dropbox/secret", 15), derived_text("dropbox/wrong", 15)
    scheme = hf.Scheme("X-Dropbox-Signature")
    body = {"list_folder": {"accounts": ["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"]},
            "delta": {"users": [12345]}}
    raw = body_json(body)
    req = request(ctx, "dropbox", {**JSON, scheme.header: scheme.sign(secret, raw)}, raw)
    hf.check(scheme, secret, req)
    challenge = derived_text("dropbox/challenge", 24)
    return [
        make_case("dropbox", "event", "list_folder notification", _alg(doc), secret, wrong, req,
                  event_expect(_body_key(raw), None)),
        _signed_alike(ctx, "dropbox", doc, scheme, secret, wrong, "another account's notification",
                      {"list_folder": {"accounts": ["dbid:AACMTbgqK1ZmcPvZrXpCd0Lfj6hs7NkZxVE"]},
                       "delta": {"users": [12346]}}, None),
        make_case("dropbox", "handshake", "challenge verification", f"algorithm from {doc}", secret, wrong,
                  request(ctx, "dropbox", {}, b"", "GET", urlencode({"challenge": challenge})),
                  {"status": 200, "body": challenge, "content_type": "text/plain",
                   "headers": {"X-Content-Type-Options": "nosniff"}}),
    ]


def _signed_alike(ctx, preset, doc, scheme, secret, wrong, name, body, event_type):
    """A distinct event alike an earlier one, keyed on its body's SHA-256."""
    raw = body_json(body)
    req = request(ctx, preset, {**JSON, scheme.header: scheme.sign(secret, raw)}, raw)
    hf.check(scheme, secret, req)
    return make_case(preset, "distinct", f"{name}, alike", _alg(doc), secret, wrong, req,
                     event_expect(_body_key(raw), event_type))


def asana(ctx: Context) -> list:
    doc = "https://developers.asana.com/docs/webhooks-guide"
    # The secret is the X-Hook-Secret the handshake hands over; later events are HMAC'd with it.
    secret, wrong = derived_hex("asana/secret", 32), derived_hex("asana/wrong", 32)
    scheme = hf.Scheme("X-Hook-Signature")
    body = {"events": [{"user": {"gid": "1198345678901234", "resource_type": "user"},
                        "created_at": "2024-05-01T14:00:00.000Z", "action": "changed",
                        "resource": {"gid": "1199123456789012", "resource_type": "task",
                                     "resource_subtype": "default_task"},
                        "parent": None, "change": {"field": "name", "action": "changed"}}]}
    raw = body_json(body)
    req = request(ctx, "asana", {**JSON, scheme.header: scheme.sign(secret, raw)}, raw)
    hf.check(scheme, secret, req)
    return [
        make_case("asana", "handshake", "X-Hook-Secret handshake", f"algorithm from {doc}", secret, wrong,
                  request(ctx, "asana", {"X-Hook-Secret": secret}, b""),
                  {"status": 200, "headers": {"X-Hook-Secret": secret}}),
        make_case("asana", "event", "task changed event", _alg(doc), secret, wrong, req,
                  event_expect(_body_key(raw), "changed")),
        _signed_alike(ctx, "asana", doc, scheme, secret, wrong, "the name of another task changed",
                      {"events": [{**body["events"][0], "resource": {**body["events"][0]["resource"],
                                                                      "gid": "1199123456789013"}}]}, "changed"),
    ]


def xero(ctx: Context) -> list:
    doc = "https://developer.xero.com/documentation/guides/webhooks/configuring-your-server/"
    secret, wrong = (derived_text(f"xero/{w}", 88, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
                     for w in ("secret", "wrong"))
    scheme = hf.Scheme("x-xero-signature", encoding="base64")
    tenant, resource = derived_uuid("xero/tenant"), derived_uuid("xero/invoice")
    event = {"resourceUrl": f"https://api.xero.com/api.xro/2.0/Invoices/{resource}", "resourceId": resource,
             "eventDateUtc": "2024-05-01T14:00:00.123", "eventType": "UPDATE", "eventCategory": "INVOICE",
             "tenantId": tenant, "tenantType": "ORGANISATION"}
    raw = body_json({"events": [event], "firstEventSequence": 1, "lastEventSequence": 1,
                     "entropy": derived_text("xero/entropy", 20, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")})
    req = request(ctx, "xero", {**JSON, scheme.header: scheme.sign(secret, raw)}, raw)
    hf.check(scheme, secret, req)
    # Intent to Receive: the same empty-events payload, once signed with the key, once not.
    itr = body_json({"events": [], "firstEventSequence": 0, "lastEventSequence": 0,
                     "entropy": derived_text("xero/itr", 20, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")})
    good = request(ctx, "xero", {**JSON, scheme.header: scheme.sign(secret, itr)}, itr)
    hf.check(scheme, secret, good)
    bad = request(ctx, "xero", {**JSON, scheme.header: scheme.sign(wrong, itr)}, itr)
    # A later batch overlapping it: the same event again and the same invoice updated again a
    # moment later (a new event: its own eventDateUtc), with a new sequence and entropy.
    later = {**event, "eventDateUtc": "2024-05-01T14:00:01.456"}
    raw2 = body_json({"events": [event, later], "firstEventSequence": 2, "lastEventSequence": 3,
                      "entropy": derived_text("xero/entropy/2", 20, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")})
    req2 = request(ctx, "xero", {**JSON, scheme.header: scheme.sign(secret, raw2)}, raw2)
    hf.check(scheme, secret, req2)
    return [
        make_case("xero", "event", "INVOICE UPDATE event", _alg(doc), secret, wrong, req,
                  event_expect(f"{tenant}|INVOICE|UPDATE|{resource}|2024-05-01T14:00:00.123", "UPDATE")),
        make_case("xero", "distinct", "a batch overlapping it: the invoice updated again, its new event", _alg(doc),
                  secret, wrong, req2,
                  event_expect(f"{tenant}|INVOICE|UPDATE|{resource}|2024-05-01T14:00:01.456", "UPDATE")),
        make_case("xero", "handshake", "intent to receive, correctly signed", _alg(doc), secret, wrong, good,
                  {"status": 200, "body": ""}),
        make_case("xero", "handshake", "intent to receive, incorrectly signed", _alg(doc), secret, wrong, bad,
                  {"status": 401}),
    ]


def x(ctx: Context) -> list:
    doc = "https://docs.x.com/x-api/webhooks/introduction"
    secret, wrong = (derived_text(f"x/{w}", 50, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
                     for w in ("secret", "wrong"))
    scheme = hf.Scheme("x-twitter-webhooks-signature", encoding="base64", prefix="sha256=")
    tweet_id = "1790000000000000001"
    body = {"for_user_id": "2244994945", "tweet_create_events": [{
        "created_at": "Wed May 01 14:00:00 +0000 2024", "id": int(tweet_id), "id_str": tweet_id,
        "text": "Hello webhooks", "user": {"id": 2244994945, "id_str": "2244994945", "screen_name": "XDevelopers"}}]}
    raw = body_json(body)
    req = request(ctx, "x", {**JSON, scheme.header: scheme.sign(secret, raw)}, raw)
    hf.check(scheme, secret, req)
    crc_token = derived_text("x/crc", 32)
    answer = "sha256=" + b64(mac(secret, crc_token))
    # The same text tweeted again: another tweet, another id, another body.
    body2 = {**body, "tweet_create_events": [{**body["tweet_create_events"][0], "id": int(tweet_id) + 1,
                                              "id_str": str(int(tweet_id) + 1)}]}
    raw2 = body_json(body2)
    req2 = request(ctx, "x", {**JSON, scheme.header: scheme.sign(secret, raw2)}, raw2)
    hf.check(scheme, secret, req2)
    return [
        make_case("x", "event", "tweet_create_events", _alg(doc), secret, wrong, req,
                  # Account Activity events carry no envelope id: keyed on the body's SHA-256.
                  event_expect(hashlib.sha256(raw).hexdigest(), None)),
        make_case("x", "distinct", "the same text tweeted again, alike", _alg(doc), secret, wrong, req2,
                  event_expect(hashlib.sha256(raw2).hexdigest(), None)),
        make_case("x", "handshake", "CRC check", f"algorithm from {doc}", secret, wrong,
                  request(ctx, "x", {}, b"", "GET", urlencode({"crc_token": crc_token})),
                  {"status": 200, "json": {"response_token": answer}, "headers": {"X-Content-Type-Options": "nosniff"}}),
    ]


SIGNERS = {"meta": meta, "dropbox": dropbox, "asana": asana, "xero": xero, "x": x}
