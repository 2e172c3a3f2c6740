# CloudWatch in the protocol the AWS SDK for Rust speaks: Smithy RPC v2 CBOR (aws-sdk-cloudwatch
# 1.126 and later send `POST /service/GraniteServiceVersion20100801/operation/<Operation>` with a
# CBOR body and `smithy-protocol: rpc-v2-cbor`). Moto 5.2.5 serves CloudWatch in AWS Query and
# AWS JSON 1.0 only, and its router knows no such path. This WSGI layer in front of moto turns
# each such request into the same operation in AWS JSON 1.0 (`X-Amz-Target`), lets moto answer,
# and turns the answer back into CBOR, shaped by botocore's model of the operation's output
# (timestamps as tag 1 epoch seconds, blobs as byte strings, doubles as floats, errors as
# `__type` and `message`). Every other request goes to moto untouched.
#
# The CBOR codec is the subset of RFC 8949 the protocol uses: every major type, definite and
# indefinite lengths, half, single and double floats; tags other than 1 are read through.
import base64
import datetime
import gzip
import io
import json
import math
import struct

import botocore.session

CLOUDWATCH_PREFIX = "/service/GraniteServiceVersion20100801/operation/"
CLOUDWATCH_TARGET = "GraniteServiceVersion20100801"


class Epoch(float):
    """A CBOR tag 1 value: seconds since the epoch."""


class _Break:
    pass


_BREAK = _Break()


class CborError(ValueError):
    pass


def cbor_loads(data):
    stream = io.BytesIO(data)
    value = _read_item(stream)
    if value is _BREAK:
        raise CborError("a break outside an indefinite item")
    if stream.read(1):
        raise CborError("bytes after the top-level item")
    return value


def _take(stream, n):
    chunk = stream.read(n)
    if len(chunk) != n:
        raise CborError("truncated")
    return chunk


def _argument(stream, info):
    if info < 24:
        return info
    if info == 24:
        return _take(stream, 1)[0]
    if info == 25:
        return struct.unpack(">H", _take(stream, 2))[0]
    if info == 26:
        return struct.unpack(">I", _take(stream, 4))[0]
    if info == 27:
        return struct.unpack(">Q", _take(stream, 8))[0]
    raise CborError(f"reserved additional information {info}")


def _read_item(stream):
    initial = _take(stream, 1)[0]
    major, info = initial >> 5, initial & 0x1F
    if major == 7:
        return _read_simple(stream, info)
    if info == 31:
        return _read_indefinite(stream, major)
    n = _argument(stream, info)
    if major == 0:
        return n
    if major == 1:
        return -1 - n
    if major == 2:
        return _take(stream, n)
    if major == 3:
        return _take(stream, n).decode("utf-8")
    if major == 4:
        return [_read_value(stream) for _ in range(n)]
    if major == 5:
        out = {}
        for _ in range(n):
            key = _read_value(stream)
            out[key] = _read_value(stream)
        return out
    # major 6: a tag
    content = _read_value(stream)
    if n == 1:
        if isinstance(content, bool) or not isinstance(content, (int, float)):
            raise CborError("tag 1 holds no number")
        return Epoch(content)
    return content


def _read_value(stream):
    value = _read_item(stream)
    if value is _BREAK:
        raise CborError("a break where a value belongs")
    return value


def _read_indefinite(stream, major):
    if major in (2, 3):
        chunks = []
        while (chunk := _read_item(stream)) is not _BREAK:
            chunks.append(chunk)
        return b"".join(chunks) if major == 2 else "".join(chunks)
    if major == 4:
        items = []
        while (item := _read_item(stream)) is not _BREAK:
            items.append(item)
        return items
    if major == 5:
        out = {}
        while (key := _read_item(stream)) is not _BREAK:
            out[key] = _read_value(stream)
        return out
    raise CborError(f"major type {major} has no indefinite length")


def _read_simple(stream, info):
    if info == 20:
        return False
    if info == 21:
        return True
    if info in (22, 23):
        return None
    if info == 25:
        return struct.unpack(">e", _take(stream, 2))[0]
    if info == 26:
        return struct.unpack(">f", _take(stream, 4))[0]
    if info == 27:
        return struct.unpack(">d", _take(stream, 8))[0]
    if info == 31:
        return _BREAK
    raise CborError(f"simple value {info}")


def _head(out, major, n):
    if n < 24:
        out.append(major << 5 | n)
    elif n < 0x100:
        out += bytes([major << 5 | 24, n])
    elif n < 0x10000:
        out += bytes([major << 5 | 25]) + struct.pack(">H", n)
    elif n < 0x100000000:
        out += bytes([major << 5 | 26]) + struct.pack(">I", n)
    else:
        out += bytes([major << 5 | 27]) + struct.pack(">Q", n)


def cbor_dumps(value):
    out = bytearray()
    _write(out, value)
    return bytes(out)


def _write(out, value):
    if value is None:
        out.append(0xF6)
    elif value is True:
        out.append(0xF5)
    elif value is False:
        out.append(0xF4)
    elif isinstance(value, Epoch):
        out.append(0xC1)
        _write(out, float(value))
    elif isinstance(value, int):
        if value >= 0:
            _head(out, 0, value)
        else:
            _head(out, 1, -1 - value)
    elif isinstance(value, float):
        out.append(0xFB)
        out += struct.pack(">d", value)
    elif isinstance(value, str):
        data = value.encode("utf-8")
        _head(out, 3, len(data))
        out += data
    elif isinstance(value, (bytes, bytearray)):
        _head(out, 2, len(value))
        out += value
    elif isinstance(value, list):
        _head(out, 4, len(value))
        for item in value:
            _write(out, item)
    elif isinstance(value, dict):
        _head(out, 5, len(value))
        for key, item in value.items():
            _write(out, key)
            _write(out, item)
    else:
        raise CborError(f"cannot encode {type(value).__name__}")


def _to_json(value):
    """A decoded CBOR request as AWS JSON 1.0 sends it: timestamps as epoch seconds, blobs base64."""
    if isinstance(value, Epoch):
        return float(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, list):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        # AWS JSON's spelling of the doubles JSON has no number for.
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _epoch(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Epoch(value)
    if isinstance(value, str):
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=datetime.timezone.utc)
        return Epoch(parsed.timestamp())
    raise CborError(f"timestamp {value!r}")


def shaped(value, shape):
    """Moto's JSON answer as CBOR values, by the output shape: what JSON cannot say apart."""
    if shape is None or value is None:
        return value
    kind = shape.type_name
    if kind == "structure":
        return {k: shaped(v, shape.members.get(k)) for k, v in value.items()}
    if kind == "list":
        return [shaped(v, shape.member) for v in value]
    if kind == "map":
        return {k: shaped(v, shape.value) for k, v in value.items()}
    if kind == "timestamp":
        return _epoch(value)
    if kind == "blob":
        return base64.b64decode(value) if isinstance(value, str) else value
    if kind in ("double", "float"):
        return float(value)
    if kind in ("integer", "long", "short", "byte"):
        return int(value)
    return value


class CloudWatchCbor:
    """The WSGI layer: RPC v2 CBOR CloudWatch requests through moto's AWS JSON 1.0."""

    def __init__(self, app):
        self.app = app
        self.model = botocore.session.get_session().get_service_model("cloudwatch")

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if not path.startswith(CLOUDWATCH_PREFIX):
            return self.app(environ, start_response)
        operation = path[len(CLOUDWATCH_PREFIX):]
        try:
            output_shape = self.model.operation_model(operation).output_shape
        except Exception:  # botocore's OperationNotFoundError
            return self._error(start_response, "404 Not Found", "UnknownOperation", operation)
        try:
            params = self._request(environ)
        except (CborError, ValueError, OSError) as e:
            return self._error(start_response, "400 Bad Request", "SerializationException", str(e))
        body = json.dumps(_to_json(params)).encode("utf-8")
        inner = dict(environ)
        for name in ("HTTP_CONTENT_ENCODING", "HTTP_SMITHY_PROTOCOL", "HTTP_ACCEPT"):
            inner.pop(name, None)
        inner.update(
            {
                "PATH_INFO": "/",
                "RAW_URI": "/",
                "REQUEST_URI": "/",
                "QUERY_STRING": "",
                "CONTENT_TYPE": "application/x-amz-json-1.0",
                "CONTENT_LENGTH": str(len(body)),
                "HTTP_X_AMZ_TARGET": f"{CLOUDWATCH_TARGET}.{operation}",
                "wsgi.input": io.BytesIO(body),
            }
        )
        answer = {}

        def capture(status, headers, exc_info=None):
            answer["status"] = status
            answer["headers"] = headers
            return lambda data: None

        chunks = self.app(inner, capture)
        try:
            raw = b"".join(chunks)
        finally:
            if hasattr(chunks, "close"):
                chunks.close()
        status = answer.get("status", "500 Internal Server Error")
        headers = [
            (k, v)
            for k, v in answer.get("headers", [])
            if k.lower() not in ("content-type", "content-length")
        ]
        try:
            data = json.loads(raw) if raw.strip() else {}
        except ValueError:
            data = {"__type": "InternalFailure", "message": raw.decode("utf-8", "replace")}
        if int(status.split()[0]) >= 400:
            code = str(data.get("__type") or data.get("code") or "InternalFailure")
            message = data.get("message") or data.get("Message") or ""
            out = {"__type": code, "message": str(message)}
        else:
            out = shaped(data, output_shape) if output_shape is not None else {}
        payload = cbor_dumps(out)
        headers += [
            ("Content-Type", "application/cbor"),
            ("Content-Length", str(len(payload))),
            ("smithy-protocol", "rpc-v2-cbor"),
        ]
        start_response(status, headers)
        return [payload]

    @staticmethod
    def _request(environ):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        if "gzip" in environ.get("HTTP_CONTENT_ENCODING", "").lower():
            raw = gzip.decompress(raw)
        params = cbor_loads(raw) if raw else {}
        if not isinstance(params, dict):
            raise CborError("the request body is no map")
        return params

    @staticmethod
    def _error(start_response, status, code, message):
        payload = cbor_dumps({"__type": code, "message": message})
        start_response(
            status,
            [
                ("Content-Type", "application/cbor"),
                ("Content-Length", str(len(payload))),
                ("smithy-protocol", "rpc-v2-cbor"),
            ],
        )
        return [payload]
