"""SigV4 signing through botocore's signer, as an ``httpx.Auth`` (the extra
``runport-bedrock[sigv4]``, ``runport[bedrock]``;
adr/0057-bedrock-and-the-amazon-eventstream.md)."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import httpx

__all__ = ["SigV4Auth"]

_SIGNED_BY_BOTOCORE = (
    "authorization",
    "x-amz-date",
    "x-amz-security-token",
    "x-amz-content-sha256",
)


class SigV4Auth(httpx.Auth):
    """Signs each request with AWS Signature Version 4 for ``service`` in ``region``.

    ``credentials`` are botocore's (``botocore.credentials.Credentials``); by default the
    standard AWS chain's (environment, shared files, SSO, container and instance roles), read
    again at every request so refreshed credentials are used; a chain that finds none is a
    ``ValueError`` here, before any request. Pass it to the adapter as
    ``auth=``. The signature covers the method, the path as sent (an ARN model id's
    percent-escapes included), the query, the ``Host`` and every header the request carries
    when it is signed, and the body's SHA-256.
    """

    requires_request_body = True

    def __init__(self, region: str, *, service: str = "bedrock", credentials: Any = None) -> None:
        try:
            import botocore.auth
            import botocore.awsrequest
            import botocore.session
        except ImportError:
            raise ImportError(
                "SigV4 signing needs botocore: pip install 'runport[bedrock]'"
            ) from None
        if not region:
            raise ValueError("region must name an AWS region, e.g. us-east-1")
        self.region = region
        self.service = service
        self._given = credentials
        self._session = None if credentials is not None else botocore.session.get_session()
        self._signer = botocore.auth.SigV4Auth
        self._request = botocore.awsrequest.AWSRequest
        if self._session is not None and self._found() is None:
            raise ValueError(
                "no AWS credentials found in the standard chain (AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, a container or instance role): set "
                "them, or give a Bedrock API key instead"
            )

    def _found(self) -> Any:
        """The chain's credentials (``None`` when it has none or a source failed)."""
        import botocore.exceptions

        assert self._session is not None
        try:
            return self._session.get_credentials()
        except botocore.exceptions.BotoCoreError:
            return None

    def _credentials(self) -> Any:
        if self._given is not None:
            return self._given
        found = self._found()
        if found is None:
            raise httpx.RequestError(
                "no AWS credentials found in the standard chain for SigV4 signing"
            )
        return found.get_frozen_credentials()

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        headers = {
            name: value
            for name, value in request.headers.items()
            if name.lower() not in _SIGNED_BY_BOTOCORE
        }
        signed = self._request(
            method=request.method,
            url=str(request.url),
            data=request.content,
            headers=headers,
        )
        self._signer(self._credentials(), self.service, self.region).add_auth(signed)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            value = signed.headers.get(name)
            if value is not None:
                request.headers[name] = value
        yield request

    def __repr__(self) -> str:
        return f"SigV4Auth(region={self.region!r}, service={self.service!r})"
