"""THE COMPARISON, NOT THE PRODUCT: the bench's trivial handler made idempotent with Powertools
for AWS Lambda (Python), as its documentation shows (`@idempotent`, DynamoDBPersistenceLayer,
the key from `order`), run through the paths of make bench-idempotency against the
counting proxy. Installed, never copied: .venv-powertools, bench/requirements-powertools.txt.

Environment: BENCH_TABLE, BENCH_PROXY (host:port of the proxy, for marks), BENCH_CACHE
(1: Powertools' local cache on), BENCH_SPAWN_NS (the runner's clock when it started this
process), and the standard AWS_ENDPOINT_URL / AWS_REGION / credentials.
Prints one JSON line: init time, peak RSS and each path's outcome.
"""

import time

T0 = time.perf_counter()

import json  # noqa: E402
import os  # noqa: E402
import threading  # noqa: E402
import urllib.request  # noqa: E402

from aws_lambda_powertools.utilities.idempotency import (  # noqa: E402
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
)

# Init, once per execution environment, as a Lambda function's module does.
persistence = DynamoDBPersistenceLayer(table_name=os.environ["BENCH_TABLE"])
config = IdempotencyConfig(
    event_key_jmespath="order",
    use_local_cache=os.environ.get("BENCH_CACHE") == "1",
)

# Invocations whose handler waits (by request id): (inside, let go).
GATES = {
    "hold-inflight": (threading.Event(), threading.Event()),
    "hold-abandoned": (threading.Event(), threading.Event()),  # never let go: a timed-out call
}


@idempotent(config=config, persistence_store=persistence)
def handler(event, context):
    gate = GATES.get(context.aws_request_id)
    if gate:
        gate[0].set()
        gate[1].wait(timeout=30)
    return {"ok": True}


INIT_MS = (time.perf_counter() - T0) * 1000
READY_NS = time.time_ns()


class Context:
    """The parts of Lambda's context Powertools reads: a 30 s invocation by default."""

    function_name = "bench"
    function_version = "$LATEST"
    memory_limit_in_mb = 128
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"

    def __init__(self, request_id, timeout_s=30):
        self.aws_request_id = request_id
        self._deadline = time.time() + timeout_s

    def get_remaining_time_in_millis(self):
        return int((self._deadline - time.time()) * 1000)


def mark(name):
    url = "http://%s/__bench/mark?name=%s" % (os.environ["BENCH_PROXY"], name)
    urllib.request.urlopen(url, timeout=10).read()


def call(event, request_id, timeout_s=30):
    try:
        return {"result": handler(event, Context(request_id, timeout_s))}
    except Exception as e:  # the in-flight duplicate's answer
        return {"error": type(e).__name__}


def vmhwm_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return None


def main():
    out = {}
    first = {"order": "o-1", "amount": 42}
    mark("first")
    out["first"] = call(first, "r-1")
    mark("dup_done")
    out["dup_done"] = call(dict(first), "r-2")

    held = {"order": "o-2", "amount": 42}
    entered, release = GATES["hold-inflight"]
    mark("inflight_held")
    box = {}
    t = threading.Thread(target=lambda: box.update(r=call(held, "hold-inflight")))
    t.start()
    entered.wait(timeout=30)
    mark("inflight_dup")
    out["inflight_dup"] = call(dict(held), "r-4")
    mark("inflight_rest")
    release.set()
    t.join()
    out["inflight_first"] = box.get("r")

    # A call that times out inside the handler (a 1 s invocation, never let go), then a retry
    # once its lease has run out.
    lost = {"order": "o-3", "amount": 42}
    mark("abandoned")
    threading.Thread(target=call, args=(lost, "hold-abandoned", 1), daemon=True).start()
    GATES["hold-abandoned"][0].wait(timeout=30)
    time.sleep(1.5)
    mark("retry_after_timeout")
    out["retry_after_timeout"] = call(dict(lost), "r-6")
    mark("end")
    print(
        json.dumps(
            {
                "init_ms": INIT_MS,
                "spawn_to_ready_ms": (READY_NS - int(os.environ["BENCH_SPAWN_NS"])) / 1e6,
                "vmhwm_kb": vmhwm_kb(),
                "outcomes": out,
            }
        ),
        flush=True,
    )


main()
