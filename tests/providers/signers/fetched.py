"""Providers whose key is fetched at run time: AWS SNS (a certificate at `SigningCertURL`) and
PayPal (a certificate at `PAYPAL-CERT-URL`).

The test makes an RSA key and a self-signed certificate (`cryptography`), signs each message as
AWS documents it (docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html: the
fields' names and values, each followed by a newline; version 1 SHA1withRSA, version 2
SHA256withRSA), and has each message checked by a published SNS validator first: the npm
`sns-validator` (tests/providers/node/sns_validate.mjs, its certificate download answered with
the test's certificate), so the test's signing is shown right. `sns-validator` 0.3.5 signs an
`UnsubscribeConfirmation` without its `Token`, unlike AWS's documentation; that case is checked
by `cryptography` against the documented string instead (and sns-validator's refusal of it is
asserted, so a fixed release is noticed).

The case's `source` carries `test_certificates` ({path: PEM}): the Rust test serves them (and
answers the `SubscribeURL` visit) from a local server through the test-only setting
`KEY_FETCH_TEST_ORIGIN` (crates/inbox/src/key_fetch.rs).
"""

import base64
import datetime
import json
import subprocess
import zlib
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from .common import (STALE_EXPECT, STALE_SECONDS, Context, SignerError, derived_hex, derived_uuid, make_case,
                     package, request, require)

DOC = "https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html"
ROOT = Path(__file__).resolve().parents[3]
REGION = "us-east-1"
TOPIC = "arn:aws:sns:us-east-1:123456789012:orders"
OTHER_TOPIC = "arn:aws:sns:us-east-1:123456789012:other-topic"
CERT_PATH = f"/SimpleNotificationService-{derived_hex('aws-sns/cert', 32)}.pem"
CERT_URL = f"https://sns.{REGION}.amazonaws.com{CERT_PATH}"
NOTIFICATION_KEYS = ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"]
CONFIRMATION_KEYS = ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"]


# One key and certificate per provider and run (a retry case is the signer run again as attempt
# 1, and the receiver keeps the certificate it fetched first), and the first attempt's time: SNS
# resends the message it published, byte for byte ("the message ID of the original message is
# used", http-header.html), so its retry case must be signed alike.
_FIRST = {}
_CERTIFICATES = {}


def _first_now(preset: str, ctx: Context) -> int:
    """The first attempt's time of `preset`'s events, kept for its retry case."""
    if ctx.attempt == 0 or preset not in _FIRST:
        _FIRST[preset] = ctx.now
    return _FIRST[preset]


def _certificate(now: int, common_name: str):
    if common_name in _CERTIFICATES:
        return _CERTIFICATES[common_name]
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start = datetime.datetime.fromtimestamp(now - 86400, tz=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=30)).sign(key, hashes.SHA256()))
    _CERTIFICATES[common_name] = (key, cert)
    return key, cert


def _string_to_sign(message: dict) -> bytes:
    keys = NOTIFICATION_KEYS if message["Type"] == "Notification" else CONFIRMATION_KEYS
    return "".join(f"{k}\n{message[k]}\n" for k in keys if k in message).encode("utf-8")


def _iso(seconds: int) -> str:
    text = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.123Z"


def _message(key, kind: str, message_id: str, text: str, at: int, version: str, subject=None, token=None) -> dict:
    message = {"Type": kind, "MessageId": message_id}
    if token is not None:
        message["Token"] = token
    message["TopicArn"] = TOPIC
    if subject is not None:
        message["Subject"] = subject
    message["Message"] = text
    if token is not None:
        message["SubscribeURL"] = (f"https://sns.{REGION}.amazonaws.com/?Action=ConfirmSubscription"
                                   f"&TopicArn={TOPIC}&Token={token}")
    message["Timestamp"] = _iso(at)
    message["SignatureVersion"] = version
    digest = hashes.SHA1() if version == "1" else hashes.SHA256()
    message["Signature"] = base64.b64encode(key.sign(_string_to_sign(message), padding.PKCS1v15(), digest)).decode()
    message["SigningCertURL"] = CERT_URL
    if kind == "Notification":
        message["UnsubscribeURL"] = (f"https://sns.{REGION}.amazonaws.com/?Action=Unsubscribe"
                                     f"&SubscriptionArn={TOPIC}:{derived_uuid('aws-sns/subscription')}")
    return message


def _body(message: dict) -> bytes:
    # As SNS writes it: two-space indent, " : " between a name and its value.
    return json.dumps(message, indent=2, separators=(",", " : ")).encode("utf-8")


def _validated_by_sns_validator(cert_pem: str, bodies: list) -> list:
    """Each body run through npm sns-validator; its answers (None: valid, else the error)."""
    script = ROOT / "tests/providers/node/sns_validate.mjs"
    out = subprocess.run(["node", str(script)], input=json.dumps(
        {"certificate": cert_pem, "cert_url": CERT_URL, "bodies": [b.decode("utf-8") for b in bodies]}),
        capture_output=True, text=True, cwd=ROOT, check=False)
    require(out.returncode == 0, f"aws-sns: sns_validate.mjs failed: {out.stderr.strip()}")
    return json.loads(out.stdout)["results"]


def _checked_by_cryptography(cert, body: bytes) -> None:
    message = json.loads(body)
    digest = hashes.SHA1() if message["SignatureVersion"] == "1" else hashes.SHA256()
    try:
        cert.public_key().verify(base64.b64decode(message["Signature"]), _string_to_sign(message),
                                 padding.PKCS1v15(), digest)
    except InvalidSignature as err:
        raise SignerError("aws-sns: cryptography refused the documented string to sign") from err


def sign_aws_sns(ctx: Context) -> list:
    ctx = Context(now=_first_now("aws-sns", ctx), base_url=ctx.base_url, attempt=ctx.attempt)
    key, cert = _certificate(ctx.now, f"sns.{REGION}.amazonaws.com (test)")
    cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode("ascii")
    # A Message long enough that the body's middle byte (the test flips it) lies inside it.
    text = json.dumps({"Records": [{"eventName": "ObjectCreated:Put", "s3": {"object": {
        "key": f"invoices/{derived_hex('aws-sns/object/' + str(i), 24)}.pdf", "size": 1024 + i}}}
        for i in range(8)]})
    first = _message(key, "Notification", derived_uuid("aws-sns/m1"), text, ctx.now, "1", subject="orders")
    alike = _message(key, "Notification", derived_uuid("aws-sns/m2"), text, ctx.now, "2")
    stale = _message(key, "Notification", derived_uuid("aws-sns/m3"), text, ctx.now - STALE_SECONDS, "2")
    token = derived_hex("aws-sns/token", 64)
    subscribe = _message(key, "SubscriptionConfirmation", derived_uuid("aws-sns/s1"),
                         f"You have chosen to subscribe to the topic {TOPIC}.", ctx.now, "2", token=token)
    unsubscribe = _message(key, "UnsubscribeConfirmation", derived_uuid("aws-sns/u1"),
                           f"You have unsubscribed from the topic {TOPIC}.", ctx.now, "1", token=token)
    bodies = [_body(m) for m in (first, alike, stale, subscribe, unsubscribe)]
    for body in bodies:
        _checked_by_cryptography(cert, body)
    results = _validated_by_sns_validator(cert_pem, bodies)
    for name, result in zip(("v1 notification", "v2 look-alike", "stale notification", "subscription"), results):
        require(result is None, f"aws-sns {name}: sns-validator refused it ({result})")
    require(results[4] is not None, "aws-sns: sns-validator now checks UnsubscribeConfirmation as AWS documents it")
    for body, message in zip(bodies[:2], (first, alike)):
        middle = len(body) // 2
        start = body.index(json.dumps(message["Message"]).encode()[:40])
        require(start < middle < start + len(json.dumps(message["Message"])), "aws-sns: the middle byte is not in Message")

    signed_by = f"cryptography RSA over the documented string ({DOC}), verified by {package('cryptography')} " \
                f"and npm sns-validator 0.3.5"
    source = {"test_certificates": {CERT_PATH: cert_pem}}

    def req(message, body):
        headers = {"Content-Type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": message["Type"],
                   "x-amz-sns-message-id": message["MessageId"], "x-amz-sns-topic-arn": TOPIC,
                   "User-Agent": "Amazon Simple Notification Service Agent"}
        return request(ctx, "aws-sns", headers, body)

    def case(kind, name, message, body, expect, by=signed_by):
        return make_case("aws-sns", kind, name, by, TOPIC, OTHER_TOPIC, req(message, body), expect, source)

    return [
        case("handshake", "SubscriptionConfirmation, confirmed by visiting SubscribeURL", subscribe, bodies[3],
             {"status": 200, "json": {"status": "subscription_confirmed"}}),
        case("event", "Notification, SignatureVersion 1", first, bodies[0],
             {"key": first["MessageId"], "event_type": TOPIC}),
        case("event", "a look-alike Notification (same Message, another MessageId), SignatureVersion 2", alike,
             bodies[1], {"key": alike["MessageId"], "event_type": TOPIC}),
        case("stale", "Notification published 7200 s ago", stale, bodies[2], STALE_EXPECT),
        case("handshake", "UnsubscribeConfirmation, answered, nothing queued", unsubscribe, bodies[4],
             {"status": 200, "json": {"status": "unsubscribe_received"}},
             by=f"cryptography RSA over the documented string ({DOC}), verified by {package('cryptography')}"),
    ]


PAYPAL_DOC = "https://developer.paypal.com/api/rest/webhooks/rest/"
PAYPAL_WEBHOOK_ID = "1JE4291016473214C"  # the id PayPal gives a subscribed listener URL
PAYPAL_OTHER_WEBHOOK_ID = "8PT597110X687430LKGECATA"
PAYPAL_CERT_PATH = f"/v1/notifications/certs/CERT-360caa42-fca2a594-{derived_hex('paypal/cert', 8)}"
PAYPAL_CERT_URL = f"https://api.paypal.com{PAYPAL_CERT_PATH}"


def _paypal_signed_string(transmission_id: str, time: str, webhook_id: str, body: bytes) -> bytes:
    # PayPal's documented string: id|time|webhook id|CRC32 of the raw body, unsigned decimal.
    return f"{transmission_id}|{time}|{webhook_id}|{zlib.crc32(body) & 0xFFFFFFFF}".encode("utf-8")


def _paypal_event(event_id: str, resource_id: str, at: int) -> bytes:
    created = datetime.datetime.fromtimestamp(at - 5, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    event = {
        "id": event_id, "event_version": "1.0", "create_time": created, "resource_type": "capture",
        "resource_version": "2.0", "event_type": "PAYMENT.CAPTURE.COMPLETED",
        "summary": "Payment completed for $ 21.0 USD",
        "resource": {"id": resource_id, "status": "COMPLETED", "amount": {"currency_code": "USD", "value": "21.00"},
                     "final_capture": True, "create_time": created, "update_time": created,
                     "links": [{"href": f"https://api.paypal.com/v2/payments/captures/{resource_id}",
                                "rel": "self", "method": "GET"}]},
        "links": [{"href": f"https://api.paypal.com/v1/notifications/webhooks-events/{event_id}",
                   "rel": "self", "method": "GET"}],
    }
    return json.dumps(event, separators=(",", ":")).encode("utf-8")


def sign_paypal(ctx: Context) -> list:
    key, cert = _certificate(ctx.now, "messageverificationcerts.paypal.com (test)")
    cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode("ascii")
    # A retry (attempt 1) is a new HTTP transmission of the same event: a new transmission id
    # and time, signed afresh; the event body, and its id, as before.
    first_id = "WH-" + derived_hex("paypal/e1", 17).upper() + "-" + derived_hex("paypal/e1b", 17).upper()
    alike_id = "WH-" + derived_hex("paypal/e2", 17).upper() + "-" + derived_hex("paypal/e2b", 17).upper()
    resource = derived_hex("paypal/capture", 17).upper()
    # The event's own times stay the first delivery's.
    created_at = _first_now("paypal", ctx)
    first = _paypal_event(first_id, resource, created_at)
    alike = _paypal_event(alike_id, resource, created_at)

    def transmit(body: bytes, label: str, at: int, webhook_id=PAYPAL_WEBHOOK_ID):
        transmission_id = derived_uuid(f"paypal/{label}/attempt{ctx.attempt}")
        time = datetime.datetime.fromtimestamp(at, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        signed = _paypal_signed_string(transmission_id, time, webhook_id, body)
        signature = key.sign(signed, padding.PKCS1v15(), hashes.SHA256())
        try:
            cert.public_key().verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature as err:
            raise SignerError("paypal: cryptography refused the documented string") from err
        headers = {"Content-Type": "application/json", "PAYPAL-TRANSMISSION-ID": transmission_id,
                   "PAYPAL-TRANSMISSION-TIME": time, "PAYPAL-TRANSMISSION-SIG": base64.b64encode(signature).decode(),
                   "PAYPAL-CERT-URL": PAYPAL_CERT_URL, "PAYPAL-AUTH-ALGO": "SHA256withRSA",
                   "User-Agent": "PayPal/AUHD-214.0-58843318"}
        return request(ctx, "paypal", headers, body)

    signed_by = (f"cryptography RSA SHA256withRSA over the documented string ({PAYPAL_DOC}: transmission id|time|"
                 f"webhook id|zlib CRC32 of the body), verified by {package('cryptography')} (the certificate the "
                 f"test made, served by a local server)")
    source = {"test_certificates": {PAYPAL_CERT_PATH: cert_pem}}

    def case(kind, name, req, expect):
        return make_case("paypal", kind, name, signed_by, PAYPAL_WEBHOOK_ID, PAYPAL_OTHER_WEBHOOK_ID, req, expect,
                         source)

    return [
        case("event", "PAYMENT.CAPTURE.COMPLETED", transmit(first, "first", ctx.now),
             {"key": first_id, "event_type": "PAYMENT.CAPTURE.COMPLETED"}),
        case("distinct", "a look-alike event (same capture, another event id)", transmit(alike, "alike", ctx.now),
             {"key": alike_id, "event_type": "PAYMENT.CAPTURE.COMPLETED"}),
        case("stale", "transmitted 7200 s ago", transmit(first, "stale", ctx.now - STALE_SECONDS), STALE_EXPECT),
    ]


SIGNERS = {"aws-sns": sign_aws_sns, "paypal": sign_paypal}
