"""A loopback Amazon Bedrock Runtime that checks what Bedrock checks before it answers: the
URL (``/model/{modelId}/converse-stream`` or ``/converse``, or InvokeModel's
``/invoke-with-response-stream`` and ``/invoke``, the model id one percent-encoded segment), the
JSON body (for InvokeModel, Anthropic's with Bedrock's ``anthropic_version`` and neither
``model`` nor ``stream``), and the credentials — a Bedrock API key as ``Authorization: Bearer``,
or a SigV4 signature it verifies by recomputing it with botocore from the request as it
arrived. A request that fails a check gets Bedrock's 403 (or 400, 404); one that passes gets
the eventstream messages the test gave, one HTTP chunk each."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from botocore.auth import SigV4Auth as BotocoreSigner
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from runport.conformance.loopback import Connection, Handler, head

EVENTSTREAM = "application/vnd.amazon.eventstream"
ACCESS_KEY = "AKIDRUNPORTEXAMPLE"
SECRET_KEY = "runport/loopback/secret/key/for/tests0"
REGION = "us-west-2"

_PATH = re.compile(r"/model/([^/]+)/(converse-stream|converse|invoke-with-response-stream|invoke)")
ANTHROPIC_VERSION = "bedrock-2023-05-31"
_AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
    r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})"
)


@dataclass
class Received:
    """What the emulation saw of one request."""

    target: str
    headers: dict[str, str]
    body: Any
    model: str
    operation: str


@dataclass
class Bedrock:
    """The emulation's settings: the one credential it accepts (``api_key``, or SigV4
    ``credentials`` in ``region``) and what it saw."""

    api_key: str | None = None
    credentials: Credentials | None = None
    region: str = REGION
    received: list[Received] = field(default_factory=list)

    def answering(self, messages: Sequence[bytes], *, body: Any = None) -> Handler:
        """A handler: the request checked, then ``messages`` streamed (or ``body`` as JSON
        when the request was Converse)."""

        def handler(connection: Connection, raw: bytes) -> bool:
            refusal = self.check(raw)
            if refusal is not None:
                status, kind, message = refusal
                data = json.dumps({"message": message}).encode()
                headers = {
                    "Content-Type": "application/json",
                    "Content-Length": str(len(data)),
                    "x-amzn-ErrorType": kind,
                }
                connection.write(head(status, headers) + data)
                return True
            if self.received[-1].operation in ("converse", "invoke"):
                data = json.dumps(body).encode()
                length = str(len(data))
                connection.write(
                    head("200 OK", {"Content-Type": "application/json", "Content-Length": length})
                    + data
                )
                return True
            connection.write(
                head("200 OK", {"Content-Type": EVENTSTREAM, "Transfer-Encoding": "chunked"})
            )
            for message in messages:
                connection.chunk(message)
            connection.write(b"0\r\n\r\n")
            return True

        return handler

    def check(self, raw: bytes) -> tuple[str, str, str] | None:
        head_bytes, _, body = raw.partition(b"\r\n\r\n")
        lines = head_bytes.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        found = _PATH.fullmatch(target)
        if method != "POST" or found is None:
            return "404 Not Found", "UnknownOperationException", f"no operation at {target}"
        try:
            parsed = json.loads(body)
        except ValueError:
            return "400 Bad Request", "ValidationException", "the body is not JSON"
        if headers.get("content-type") != "application/json":
            return "400 Bad Request", "ValidationException", "Content-Type must be JSON"
        if not isinstance(parsed.get("messages"), list):
            return "400 Bad Request", "ValidationException", "messages is required"
        if found[2].startswith("invoke"):
            if parsed.get("anthropic_version") != ANTHROPIC_VERSION:
                return "400 Bad Request", "ValidationException", "invalid anthropic_version"
            for extraneous in ("model", "stream"):
                if extraneous in parsed:
                    message = f"extraneous key [{extraneous}] is not permitted"
                    return "400 Bad Request", "ValidationException", message
        self.received.append(Received(target, headers, parsed, unquote(found[1]), found[2]))
        return self._credential(method, target, headers, body)

    def _credential(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[str, str, str] | None:
        authorization = headers.get("authorization", "")
        if self.api_key is not None:
            if authorization == f"Bearer {self.api_key}":
                return None
            return "403 Forbidden", "AccessDeniedException", "Invalid API Key format"
        assert self.credentials is not None
        found = _AUTHORIZATION.fullmatch(authorization)
        if found is None:
            return "403 Forbidden", "MissingAuthenticationTokenException", "not signed"
        access, date, region, service, signed, signature = found.groups()
        if access != self.credentials.access_key:
            return "403 Forbidden", "UnrecognizedClientException", "unknown access key"
        stamp = headers.get("x-amz-date", "")
        if region != self.region or service != "bedrock" or not stamp.startswith(date):
            return "403 Forbidden", "InvalidSignatureException", "wrong credential scope"
        if self.credentials.token and headers.get("x-amz-security-token") != self.credentials.token:
            return "403 Forbidden", "UnrecognizedClientException", "wrong security token"
        names = signed.split(";")
        if "host" not in names or any(name not in headers for name in names):
            return "403 Forbidden", "InvalidSignatureException", "a signed header is missing"
        request = AWSRequest(
            method=method,
            url=f"http://{headers['host']}{target}",
            data=body,
            headers={name: headers[name] for name in names},
        )
        request.context["timestamp"] = stamp
        signer = BotocoreSigner(self.credentials, "bedrock", self.region)
        expected = signer.signature(
            signer.string_to_sign(request, signer.canonical_request(request)), request
        )
        if expected != signature:
            return (
                "403 Forbidden",
                "InvalidSignatureException",
                "The request signature we calculated does not match the signature you provided.",
            )
        return None
