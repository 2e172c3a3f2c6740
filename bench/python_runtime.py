"""A minimal Lambda Runtime API client: the loop the managed Python runtime runs.

Used by `make bench` to run bench/powertools_handler.py as a Lambda function under the
bench driver's Runtime API emulator, the same way the Rust `receiver` binary runs there:

    AWS_LAMBDA_RUNTIME_API=127.0.0.1:PORT python bench/python_runtime.py powertools_handler.handler

It imports the handler (the function's init), then polls `invocation/next` over one
keep-alive connection, calls the handler and posts its result or error. Nothing more: a
lighter loop than the managed runtime's, so any CPU difference it makes favours the peer.
"""

import http.client
import importlib
import json
import os
import sys
import time
import traceback

API = "/2018-06-01/runtime"


class Context:
    """The parts of the Lambda context object that handlers and Powertools read."""

    def __init__(self, request_id, deadline_ms, arn):
        self.aws_request_id = request_id
        self.invoked_function_arn = arn
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self._deadline_ms = deadline_ms

    def get_remaining_time_in_millis(self):
        return max(self._deadline_ms - int(time.time() * 1000), 0)


def main():
    host, port = os.environ["AWS_LAMBDA_RUNTIME_API"].rsplit(":", 1)
    module_name, function_name = sys.argv[1].rsplit(".", 1)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    conn = http.client.HTTPConnection(host, int(port))
    try:
        handler = getattr(importlib.import_module(module_name), function_name)
    except Exception as exc:  # the function's init failed: say so, as the runtime does
        body = json.dumps({"errorMessage": str(exc), "errorType": type(exc).__name__})
        conn.request("POST", f"{API}/init/error", body=body.encode())
        conn.getresponse().read()
        raise
    while True:
        conn.request("GET", f"{API}/invocation/next")
        resp = conn.getresponse()
        event = json.loads(resp.read())
        request_id = resp.getheader("Lambda-Runtime-Aws-Request-Id")
        context = Context(
            request_id,
            int(resp.getheader("Lambda-Runtime-Deadline-Ms")),
            resp.getheader("Lambda-Runtime-Invoked-Function-Arn", ""),
        )
        try:
            body = json.dumps(handler(event, context)).encode()
            path = f"{API}/invocation/{request_id}/response"
        except Exception as exc:
            body = json.dumps(
                {
                    "errorMessage": str(exc),
                    "errorType": type(exc).__name__,
                    "stackTrace": traceback.format_exc().splitlines(),
                }
            ).encode()
            path = f"{API}/invocation/{request_id}/error"
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        conn.getresponse().read()


if __name__ == "__main__":
    main()
