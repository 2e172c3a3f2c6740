# Runs a moto server on loopback (port 0: the OS picks a free one), prints "ready <port>",
# and stops it when standard input closes, that is when the process that started it ends.
# moto_cbor.py comes first in the same program (devstack's moto.rs joins them): CloudWatchCbor.
import json
import sys
import threading

import moto.moto_server.threaded_moto_server as threaded_server
import moto.sqs.models as sqs_models
from moto.server import ThreadedMotoServer


# The local stack's functions run outside moto (in-process in the tests, under `cargo lambda
# watch` in the demo), and devstack's bridge plays the SQS event source mapping. Moto's own
# mapping would receive a queue's messages on every SendMessage and invoke the function through
# Docker. The mapping itself stays (ListEventSourceMappings, Update, its state and batch size);
# only the queue's link to it is left empty, so moto never polls.
class _NotPolled(dict):
    def __setitem__(self, key, value):
        pass


_queue_init = sqs_models.Queue.__init__


def _queue_without_polling(self, *args, **kwargs):
    _queue_init(self, *args, **kwargs)
    self.lambda_event_source_mappings = _NotPolled()


sqs_models.Queue.__init__ = _queue_without_polling


# Every local stack has its archive's delivery stream, and the end-to-end tests are one process
# (one server) making a stack per test, hundreds of them; moto refuses a region's 51st stream
# (LimitExceededException: "firehose quota of 50 hoses"). The server is the tests' own: no quota.
import moto.firehose.models as firehose_models

firehose_models.DeliveryStream.MAX_STREAMS_PER_REGION = 100_000


# Moto reads every template body as YAML with the pure-Python loader (JSON is YAML), about a
# quarter of a second for the translated template; the local stacks send JSON, read here by the
# json module first (what moto falls back to). Moto's CloudFormation (every service's models,
# about two seconds to import) is loaded in the background meanwhile, not on the first call.
def _json_templates_first():
    import moto.cloudformation.models as cfn_models

    parse_yaml_or_json = cfn_models.Stack.parse_template

    def parse_template(template):
        try:
            return json.loads(template)
        except ValueError:
            return parse_yaml_or_json(template)

    cfn_models.Stack.parse_template = staticmethod(parse_template)


threading.Thread(target=_json_templates_first, daemon=True).start()

# DynamoDB applies a conditional write atomically: the condition and the update are one step for
# the item. Moto's threaded server checks a condition, then updates, on the request's thread: two
# concurrent `UpdateItem ADD n :1` on condition `n < :max` both pass at n = max - 1 and count
# max + 1 (seen by tests/rate_limit.rs at 20 concurrent invocations). One lock per item (table
# and key) makes each write of an item one step, as DynamoDB's are; writes of other items do not
# wait (a lock for the whole server slowed every test sharing it).
import moto.dynamodb.models as dynamodb_models

_item_locks_guard = threading.Lock()
_item_locks = {}


def _item_lock(table_name, key_attrs):
    name = (table_name, json.dumps(key_attrs, sort_keys=True, default=str))
    with _item_locks_guard:
        return _item_locks.setdefault(name, threading.Lock())


def _key_of(backend, table_name, attrs):
    table = backend.get_table(table_name)
    names = [table.hash_key_attr, table.range_key_attr]
    return {n: attrs.get(n) for n in names if n}


def _one_step(method, key_of):
    def locked(self, table_name, *args, **kwargs):
        try:
            key = key_of(self, table_name, *args, **kwargs)
        except Exception:  # an unknown table: moto answers as it would
            return method(self, table_name, *args, **kwargs)
        with _item_lock(table_name, key):
            return method(self, table_name, *args, **kwargs)

    return locked


_Backend = dynamodb_models.DynamoDBBackend
_Backend.put_item = _one_step(
    _Backend.put_item,
    lambda b, t, item_attrs=None, *a, **k: _key_of(b, t, item_attrs or k.get("item_attrs", {})),
)
for _name in ("update_item", "delete_item"):
    setattr(
        _Backend,
        _name,
        _one_step(
            getattr(_Backend, _name),
            lambda b, t, key=None, *a, **k: _key_of(b, t, key or k.get("key", {})),
        ),
    )


# CloudWatch as the AWS SDK for Rust calls it (RPC v2 CBOR), in front of moto's own.
_moto_app = threaded_server.DomainDispatcherApplication
threaded_server.DomainDispatcherApplication = lambda create: CloudWatchCbor(_moto_app(create))

server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
host, port = server.get_host_and_port()
print(f"ready {port}", flush=True)
sys.stdin.read()
server.stop()
