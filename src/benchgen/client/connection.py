"""The connection every `BenchGen` call goes through: the token, paging and error mapping."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Self
from urllib.parse import quote

import httpx

from benchgen import __version__
from benchgen.client.errors import (
    BadResponse,
    InvalidInput,
    Unavailable,
    Unreachable,
    error_from_response,
)
from benchgen.client.shapes import QuotaStatus

API_PREFIX = "/api/v1"
Source = str | PathLike[str] | bytes
"""A file to send: a path to it, or its bytes."""
FilePart = tuple[str, bytes | BinaryIO, str]
"""One file of a multipart body: its name, its bytes (or the open file) and its media type."""
# Page sizes below each route's maximum: the server fetches one row more than asked to learn
# whether another page follows, and some services refuse that extra row at the maximum.
PAGE = 100
GET_ATTEMPTS = 4  # a read answered 503 (busy, nothing changed) is asked up to this often
MAX_RETRY_WAIT_S = 10
# What OpenSSL says when the server answers a TLS greeting in plain HTTP (before 3.2; since).
NOT_TLS = ("WRONG_VERSION_NUMBER", "record layer failure")


class Connection:
    """One server, one token and an httpx connection pool; the calls build on it.

    Args:
        base_url: The server's address, e.g. `http://127.0.0.1:8000` (a trailing `/api/v1` is
            accepted too).
        token: A personal API token (`bgp_…`); when None, the `BENCHGEN_TOKEN` variable.
        timeout: Seconds to wait for each response.
        transport: An httpx transport to use instead of the network (tests, proxies).

    Raises:
        ValueError: No token was given and `BENCHGEN_TOKEN` is empty, the token holds
            characters no token has, or `base_url` is not an http:// or https:// address or
            holds a user name or password.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout: float = 30,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        secret = checked_token(token or os.environ.get("BENCHGEN_TOKEN", ""))
        # Blanks around it, as around the token: an address read from a file or pasted keeps
        # its line end or a space, which httpx refused or sent as part of the path.
        root = base_url.strip().rstrip("/")
        root = root.removesuffix(API_PREFIX)
        checked_address(root)
        self.base_url = root
        self._timeout = timeout
        self.quota: QuotaStatus | None = None
        """Creation quota reported by the last successful create or import, if any."""
        self.etag: str | None = None
        """The benchmark's entity tag answered by the last successful `get_benchmark`,
        `questions`, `preview_change` or `change_benchmark`: the state that call read, for
        `change_benchmark(..., if_match=...)` to send back. A failed call leaves it as it was:
        None would make such a change unconditional, where an older tag only gets it refused."""
        self._http = httpx.Client(
            base_url=root + API_PREFIX,
            headers={
                "Authorization": f"Bearer {secret}",
                "User-Agent": f"benchgen-client/{__version__}",
                "Accept": "application/json",
            },
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _send(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        timeout: float | None = None,
        files: Mapping[str, FilePart] | None = None,
        data: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        # Passed only when set: httpx reads an explicit `timeout=None` as "wait for ever", and
        # `files`/`data` make the body multipart/form-data instead of JSON.
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        if headers is not None:
            extra["headers"] = dict(headers)
        if files is not None:
            extra["files"] = dict(files)
            extra["data"] = dict(data or {})
        attempt = 1
        while True:
            try:
                response = self._http.request(method, path, params=params, json=json, **extra)
            except httpx.TransportError as exc:
                raise unreachable(exc, self.base_url) from exc
            except httpx.InvalidURL as exc:
                # An id or search words tens of thousands of characters long: httpx refused
                # to build the request, which the CLI printed as a traceback.
                said = f"cannot send this request ({exc}): an id or search words are too long"
                raise InvalidInput(0, "invalid_input", said) from None
            if response.is_redirect and not self._within_api(response):
                raise self._redirected(response)
            if not response.is_error:
                return response
            error = error_from_response(response)
            # A busy server (or a proxy before it) changed nothing: a read is asked again, so
            # waiting for a run or paging a list does not end at one 503 on the way.
            if not (isinstance(error, Unavailable) and method == "GET" and attempt < GET_ATTEMPTS):
                raise error
            time.sleep(min(error.retry_after or 1, MAX_RETRY_WAIT_S))
            attempt += 1

    def _within_api(self, response: httpx.Response) -> bool:
        """Whether a redirect stays in this server's API (`/benchmarks/` of an empty id to
        `/benchmarks`): then the answer is merely not one the call can use."""
        target = response.url.join(response.headers["Location"])
        return str(target).startswith(str(self._http.base_url))

    def _redirected(self, response: httpx.Response) -> BadResponse:
        """A redirect elsewhere is not followed (a POST would be sent again as a GET, or the
        token to another host): it names the address to use instead (https://, say)."""
        said = (
            f"{self.base_url} redirects to {response.headers['Location']}; give the server's own "
            "address (https:// rather than http://, say)"
        )
        return BadResponse(response.status_code, "bad_response", said)

    def _json(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        return self._object(self._send(method, path, params, json, timeout))

    def _tagged(
        self,
        method: str,
        path: str,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """A call on one benchmark whose answer carries its entity tag, kept in `etag`."""
        response = self._send(method, path, json=json, headers=headers)
        found = self._object(response)
        self.etag = response.headers.get("ETag")
        return found

    def _object(self, response: httpx.Response) -> dict[str, Any]:
        """A success's JSON object; anything else is `BadResponse` (it was a JSONDecodeError
        from the calls that send files, a traceback in the CLI)."""
        try:
            body = response.json()
        except ValueError:  # a --url that is not a BenchGen server, or a proxy's page
            body = None
        if not isinstance(body, dict):
            said = f"{self.base_url} did not answer with a JSON object; is it a BenchGen server?"
            raise BadResponse(response.status_code, "bad_response", said)
        return body

    def _download(
        self, path: str, params: Mapping[str, Any] | None, media_types: tuple[str, ...]
    ) -> httpx.Response:
        """GET a file, refusing a success of another media type than `media_types`: the HTML
        page of a proxy or of a server that is not BenchGen would otherwise be returned (and
        saved by the CLI) as the file, and found out only when someone opens it."""
        response = self._send("GET", path, params=params)
        sent = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if sent not in media_types:
            said = (
                f"{self.base_url} answered with {sent or 'no media type'} instead of "
                f"{' or '.join(media_types)}; is it a BenchGen server, or is a proxy in between "
                "answering for it?"
            )
            raise BadResponse(response.status_code, "bad_response", said)
        return response

    def _pages(
        self,
        path: str,
        params: Mapping[str, Any],
        limit: int | None,
        on_page: Callable[[httpx.Headers], None] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every item of a list, page after page; `on_page` sees each page's headers."""
        query = dict(params)
        if limit is not None:
            query["limit"] = limit
        while True:
            response = self._send("GET", path, params=query)
            if on_page is not None:
                on_page(response.headers)
            page = self._items(response)
            yield from page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return
            query["cursor"] = cursor

    def _page(self, path: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """One page of a list: a JSON object whose `items` is a list. Anything else is
        `BadResponse` (a server other than BenchGen answering JSON was a KeyError, a traceback
        in the CLI)."""
        return self._items(self._send("GET", path, params=params))

    def _items(self, response: httpx.Response) -> dict[str, Any]:
        page = self._object(response)
        if not isinstance(page.get("items"), list):
            said = f"{self.base_url} did not answer with a page of a list; is it a BenchGen server?"
            raise BadResponse(response.status_code, "bad_response", said)
        return page

    def _note_quota(self, response: httpx.Response) -> None:
        headers = response.headers
        try:
            self.quota = QuotaStatus(
                int(headers["X-RateLimit-Limit"]),
                int(headers["X-RateLimit-Remaining"]),
                datetime.fromtimestamp(int(headers["X-RateLimit-Reset"]), UTC),
            )
        except (KeyError, ValueError):
            self.quota = None


@contextmanager
def file_part(
    source: Source, filename: str | None, fallback: str, media_type: str
) -> Iterator[FilePart]:
    """`source` as one file of a multipart body, named `filename` (default: the path's name,
    or `fallback` for bytes). A path is sent open, read as it goes out: the body declares its
    length, so a server refuses a file over its limit before reading it, where a 5 GB file
    was first read whole into memory."""
    if isinstance(source, bytes):
        yield (filename or fallback, source, media_type)
        return
    path = Path(source)
    with path.open("rb") as opened:
        yield (filename or path.name, opened, media_type)


def checked_token(secret: str) -> str:
    """The token without the blanks around it (a line read from a file keeps its newline).

    Raises:
        ValueError: There is none, or it holds characters no token has. The token is not
            repeated: httpx refused such a header with an error that quoted it whole, which
            the CLI printed as a broken connection.
    """
    secret = secret.strip()
    if not secret:
        raise ValueError("Give a personal API token (bgp_…) or set BENCHGEN_TOKEN.")
    if not secret.isascii() or not secret.isprintable() or " " in secret:
        raise ValueError(
            "The API token holds characters no token has (spaces, accents or control "
            "characters); copy it again from where it was made."
        )
    return secret


def checked_address(url: str) -> None:
    """Refuse a server address that cannot be parsed (httpx's own error came out as a
    traceback), that is not an http:// or https:// address with a host, or that holds
    credentials: httpx sends those as Basic credentials in place of the token (every call then
    failed with "Send a personal API token"), and every error message names the address, so
    they are refused without being repeated.

    Raises:
        ValueError: Why, in words.
    """
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"The server's address cannot be read: {exc}.") from None
    if parsed.userinfo:
        raise ValueError(
            "Give the server's address without a user name or password (user:password@): "
            "the API token is what signs you in."
        )
    if parsed.query or parsed.fragment:
        # Copied from a browser's address bar (`/signin?next=…`): the calls' own queries went
        # after it, and the server answered with a redirect to its sign-in page.
        raise ValueError(
            "Give the server's address without a ?… or #… part: the calls add their own."
        )
    if parsed.scheme not in ("http", "https"):
        # `127.0.0.1:8000` was accepted, and every call then failed as "unreachable".
        raise ValueError(
            "Give the server's address with http:// or https:// at its start "
            "(http://127.0.0.1:8000, say)."
        )
    if not parsed.host:
        raise ValueError(
            "Give the server's address with a host after http:// or https:// "
            "(http://127.0.0.1:8000, say)."
        )


def segment(identifier: str) -> str:
    """An id made safe to put in a URL path (ids never contain these, but input may).

    Dots are escaped too: an id of `.` or `..` was read as a path step and sent elsewhere
    (`run(".")` answered the list of runs as if it were one run)."""
    return quote(identifier, safe="").replace(".", "%2E")


def unreachable(exc: httpx.TransportError, url: str) -> Unreachable:
    """What failed, in words: httpx's class names (`ConnectError`) mean little to a reader."""
    if isinstance(exc, httpx.TimeoutException):
        said = f"no answer from {url} in time"
    elif isinstance(exc, httpx.ConnectError) and any(said in str(exc) for said in NOT_TLS):
        # TLS spoken to a server that answers plain HTTP (`benchgen serve` does, on its own).
        plain = url.replace("https://", "http://", 1)
        said = f"cannot connect to {url}: it does not speak https; give {plain} instead"
    elif isinstance(exc, httpx.ConnectError):
        said = f"cannot connect to {url} ({exc})"
    else:
        said = f"the connection to {url} broke off ({exc})"
    return Unreachable(0, "unreachable", said)
