"""An image input over HTTP: the listing tells a client (the playground's form) which inputs take
a file, and a posted part value reaches the adapter as the image, checked on the way."""

from __future__ import annotations

import base64
import hashlib

import httpx

from runport.contracts import ExecutionRequest, ImagePart
from runport.core import parse_contract
from runport.mock import AsyncEmitter, AsyncFunctionRuntime
from runport.server import create_app, serve_in_background

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(24))
DESCRIBE = parse_contract(
    {
        "api_version": "runport/v1alpha1",
        "id": "demo.describe",
        "version": "1.0.0",
        "inputs": {"photo": {"kind": "image", "required": True, "description": "A picture."}},
        "messages": [{"role": "user", "content": "What is in {{ inputs.photo }}?"}],
        "output_schema": {"type": "string"},
    }
)


async def describe(request: ExecutionRequest, emit: AsyncEmitter) -> None:
    """Answers with the media type and digest of the image it was sent."""
    (image,) = [p for p in request.interaction.messages[0].content if isinstance(p, ImagePart)]
    await emit.text(f"{image.media_type} {image.sha256}")
    await emit.finish("stop")


def test_the_listing_marks_the_input_that_takes_a_file_and_a_post_sends_it() -> None:
    app = create_app([DESCRIBE], lambda: AsyncFunctionRuntime(describe))
    photo = {"media_type": "image/png", "data": base64.b64encode(PNG).decode()}
    with serve_in_background(app) as url, httpx.Client(base_url=url) as http:
        (listed,) = http.get("/v1/contracts").json()["contracts"]
        done = http.post(
            "/v1/contracts/demo.describe/executions", json={"inputs": {"photo": photo}}
        )
        bad = http.post(
            "/v1/contracts/demo.describe/executions",
            json={"inputs": {"photo": {**photo, "media_type": "image/gif"}}},
        )
    schema = listed["input_schema"]["properties"]["photo"]
    assert schema["x-runport-part"] == "image"
    assert schema["description"] == "A picture."
    assert done.json()["result"]["text"] == f"image/png {hashlib.sha256(PNG).hexdigest()}"
    (problem,) = bad.json()["diagnostics"]
    assert (problem["code"], problem["json_pointer"]) == ("TQX_VALUE_SCHEMA", "/inputs/photo")
