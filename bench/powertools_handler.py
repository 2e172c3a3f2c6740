"""THE COMPARISON, NOT THE PRODUCT: a minimal Python receiver built the way the Powertools
documentation suggests, so that `make bench` can measure the Rust receiver against it under
the same workload, on the same moto server.

What it does per request, like the Rust receiver: verify the Standard Webhooks signature
(the `standardwebhooks` library), then, idempotently on the same id (`webhook-id`) with
Powertools' `DynamoDBPersistenceLayer` on its own DynamoDB table, put the event on its own
SQS FIFO queue (group: the body's `customer_id`, deduplication id: the key) and answer 200.
A duplicate gets the stored response back without reaching the queue.

Environment: PEER_TABLE, PEER_QUEUE_URL, PEER_WHSEC (the `whsec_` secret), and the standard
AWS_REGION / AWS_ENDPOINT_URL.
"""

import hashlib
import json
import os
import time

import boto3
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

# Init, once per execution environment: clients, configuration, the secret.
persistence = DynamoDBPersistenceLayer(table_name=os.environ["PEER_TABLE"])
config = IdempotencyConfig(
    event_key_jmespath='headers."webhook-id"',
    raise_on_no_idempotency_key=True,
    expires_after_seconds=7 * 24 * 3600,
)
sqs = boto3.client("sqs")
QUEUE_URL = os.environ["PEER_QUEUE_URL"]
webhook = Webhook(os.environ["PEER_WHSEC"])


def _response(status, body):
    return {
        "statusCode": status,
        "headers": {"content-type": "application/json"},
        "body": json.dumps(body),
    }


@idempotent_function(data_keyword_argument="event", config=config, persistence_store=persistence)
def accept(event):
    body = event["body"]
    headers = event["headers"]
    key = "acme:" + headers["webhook-id"]
    customer = json.loads(body).get("customer_id") or key
    envelope = {
        "v": 1,
        "key": key,
        "source": "acme",
        "received_at": int(time.time() * 1000),
        "payload_sha256": hashlib.sha256(body.encode()).hexdigest(),
        "headers": {k: headers[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature", "content-type") if k in headers},
        "body": body,
    }
    sqs.send_message(
        QueueUrl=QUEUE_URL,
        MessageBody=json.dumps(envelope),
        MessageGroupId="acme:" + str(customer),
        MessageDeduplicationId=key,
    )
    return _response(200, {"status": "accepted", "key": key})


def handler(event, context):
    config.register_lambda_context(context)
    # Verify first: a forged request must not take (or read) the key.
    try:
        webhook.verify(event.get("body") or "", event.get("headers") or {}, json_parse=False)
    except WebhookVerificationError:
        return _response(401, {"error": "invalid_signature"})
    return accept(event=event)
