"""python-telegram-bot's HTTP requests over aiohttp instead of its default httpx.

Measured here (docs/performance.md), a ``sendMessage`` through PTB's ``HTTPXRequest`` cost
1.5 ms of CPU with fifty chats sending at once, and 0.4 ms through this class: httpcore
walks every pooled connection and every queued request on each request, and goes through
anyio for every lock and socket. aiohttp is already what serves the webhook.

The timeouts keep PTB's meaning as far as aiohttp can: waiting for a free connection and
opening one are bounded together by ``pool`` + ``connect`` (aiohttp times them as one),
opening one alone by ``connect``, and each wait for the answer by ``read``. aiohttp has no
write timeout, so a request as a whole is bounded by the sum of all four.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import aiohttp
from telegram.error import NetworkError, TimedOut
from telegram.request import BaseRequest, RequestData

# PTB's "not given" timeouts are instances of its private DefaultValue class; the public
# BaseRequest.DEFAULT_NONE is one, so its type stands for the class (as HTTPXRequest checks).
_NOT_GIVEN = type(BaseRequest.DEFAULT_NONE)
#: A file to upload: (file name, content, MIME type), as RequestData.multipart_data holds it.
_Files = Mapping[str, tuple[str, Any, str]]


class AiohttpRequest(BaseRequest):
    """A :class:`telegram.request.BaseRequest` with a pool of ``connections`` keep-alive
    connections, through the proxy the environment sets (``HTTPS_PROXY``, ``NO_PROXY``) as
    with httpx."""

    def __init__(self, *, connections: int, pool_timeout: float | None = 1.0,
                 connect_timeout: float | None = 5.0, read_timeout: float | None = 5.0,
                 write_timeout: float | None = 5.0, media_write_timeout: float | None = 20.0
                 ) -> None:
        self._connections = connections
        self._defaults = {"pool": pool_timeout, "connect": connect_timeout,
                          "read": read_timeout, "write": write_timeout,
                          "media_write": media_write_timeout}
        self._session: aiohttp.ClientSession | None = None

    @property
    def read_timeout(self) -> float | None:
        return self._defaults["read"]

    async def initialize(self) -> None:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._connections),
                headers={"User-Agent": self.USER_AGENT})

    async def shutdown(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: object = BaseRequest.DEFAULT_NONE,
        write_timeout: object = BaseRequest.DEFAULT_NONE,
        connect_timeout: object = BaseRequest.DEFAULT_NONE,
        pool_timeout: object = BaseRequest.DEFAULT_NONE,
    ) -> tuple[int, bytes]:
        if self._session is None:
            raise RuntimeError("This AiohttpRequest is not initialized!")
        files = request_data.multipart_data if request_data else {}
        pool = self._given(pool_timeout, "pool")
        connect = self._given(connect_timeout, "connect")
        read = self._given(read_timeout, "read")
        write = self._given(write_timeout, "media_write" if files else "write")
        timeout = aiohttp.ClientTimeout(
            total=_sum(pool, connect, write, read), connect=_sum(pool, connect),
            sock_connect=connect, sock_read=read)
        try:
            async with self._session.request(
                    method, url, data=_body(request_data, files), timeout=timeout,
                    proxy=_env_proxy(url)) as response:
                return response.status, await response.read()
        except TimeoutError as error:  # aiohttp's own timeouts are TimeoutErrors too
            raise TimedOut from error
        except aiohttp.ClientError as error:
            raise NetworkError(f"aiohttp.{type(error).__name__}: {error}") from error

    def _given(self, value: object, name: str) -> float | None:
        if isinstance(value, _NOT_GIVEN):
            return self._defaults[name]
        return float(value) if isinstance(value, int | float) else None


def _env_proxy(url: str) -> str | None:
    parts = urlsplit(url)
    return _env_proxy_for(parts.scheme, parts.hostname or "")


@functools.cache
def _env_proxy_for(scheme: str, host: str) -> str | None:
    """Looked up once per host: aiohttp's own ``trust_env`` reads the environment and the
    netrc file (on a thread) on every request."""
    return None if proxy_bypass(host) else getproxies().get(scheme)


def _sum(*timeouts: float | None) -> float | None:
    return None if None in timeouts else sum(t or 0.0 for t in timeouts)


def _body(request_data: RequestData | None, files: _Files) -> Any:
    """A form (urlencoded), or multipart with files, as PTB's HTTPXRequest sends them."""
    if request_data is None:
        return None
    if not files:  # encoded here: given a dict, aiohttp builds a multipart writer first
        return aiohttp.BytesPayload(
            request_data.url_encoded_parameters().encode(),
            content_type="application/x-www-form-urlencoded")
    form = aiohttp.FormData()
    for name, value in request_data.json_parameters.items():
        form.add_field(name, value)
    for name, (filename, content, mime_type) in files.items():
        form.add_field(name, content, filename=filename, content_type=mime_type)
    return form
