"""The tables of docs/api.md tell what the server serves: every route with its scope and its
client call, and every list's page-size limit and default, read from the app's OpenAPI document.
Before, three lists (datasets, training jobs, conversations) and the logs' limits were missing
from the page, and nothing would have noticed a route or scope that changed."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from benchgen.app import create_app
from benchgen.client import BenchGen
from benchgen.services.runtime import Runtime

ROOT = Path(__file__).resolve().parents[2]
API_MD = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
METHODS = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE)\b")


@pytest.fixture
def openapi(runtime: Runtime) -> dict[str, Any]:
    """The OpenAPI document the server publishes at /api/v1/openapi.json."""
    document: dict[str, Any] = create_app(runtime.settings, runtime).openapi()
    return document


def _rows(heading: str) -> list[list[str]]:
    """The cells of each row of the first table after `heading`, its header left out."""
    lines = API_MD.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|---"))
    rows = []
    for line in lines[start + 1 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def _place(path: str) -> str:
    """A path as the docs and the server both name it: under /api/v1, every `{…}` alike."""
    return re.sub(r"\{[^}]+\}", "{}", path.split("?")[0].removeprefix("/api/v1"))


def _routes(cell: str) -> list[tuple[str, str]]:
    """(method, path) for each route a cell names: "`GET`/`PUT /me/x`", "`GET /a` · `POST` (…)",
    "`GET /a`, `GET /b`" (a part without a path is the previous one's)."""
    routes, path = [], ""
    for part in re.split(r"·|, ", cell):
        found = re.search(r"(/[a-z{][^`\s]*)", part)
        path = _place(found.group(1)) if found else path
        routes += [(method, path) for method in METHODS.findall(part)]
    return routes


def _served(openapi: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """(method, path) → the scope it declares, for every API route the document lists."""
    return {
        (method.upper(), _place(path)): operation.get("x-scope")
        for path, operations in openapi["paths"].items()
        if path.startswith("/api/v1/")
        for method, operation in operations.items()
    }


def test_the_endpoint_table_lists_every_route_with_its_scope(openapi: dict[str, Any]) -> None:
    documented: dict[tuple[str, str], Any] = {}
    for cells in _rows("## Endpoints at a glance"):
        routes = _routes(cells[0])
        scopes = [None if cell == "any" else cell for cell in re.findall(r"`?(\w+)`?", cells[1])]
        scopes = scopes * len(routes) if len(scopes) == 1 else scopes
        assert len(scopes) == len(routes), f"scopes do not pair with routes in {cells}"
        documented.update(zip(routes, scopes, strict=True))
    assert documented == _served(openapi)


def test_the_query_parameters_named_exist(openapi: dict[str, Any]) -> None:
    taken = {
        (method.upper(), _place(path)): {p["name"] for p in op.get("parameters", [])}
        for path, operations in openapi["paths"].items()
        for method, op in operations.items()
    }
    unknown = []
    for cells in _rows("## Endpoints at a glance"):
        for part in cells[0].split("·"):
            query = re.search(r"\?([^`]*)", part)
            named = {pair.split("=")[0] for pair in query.group(1).split("&")} if query else set()
            for route in _routes(part):
                unknown += [f"{route}: ?{name}" for name in named - taken.get(route, set())]
    assert unknown == []


def test_each_client_call_named_exists_with_its_arguments() -> None:
    wrong = []
    for cells in _rows("## Endpoints at a glance"):
        for name, arguments in re.findall(r"(\w+)\(([^)]*)\)", cells[2]):
            call = getattr(BenchGen, name, None)
            if call is None:
                wrong.append(f"no BenchGen.{name}")
                continue
            params = list(inspect.signature(call).parameters)[1:]  # after self
            for argument in (a.strip().split("=")[0] for a in arguments.split(",")):
                # `id` is the call's first parameter; `…` and `**plan` stand for the rest.
                if argument in {"", "…", "id"} or argument.startswith("**"):
                    continue
                if argument not in params:
                    wrong.append(f"BenchGen.{name} takes no {argument} (it takes {params})")
    assert wrong == []


def test_the_page_sizes_are_the_servers(openapi: dict[str, Any]) -> None:
    served: dict[str, tuple[int, ...]] = {}
    for path, operations in openapi["paths"].items():
        for parameter in operations.get("get", {}).get("parameters", []):
            if parameter["name"] == "limit":
                schema = parameter["schema"]
                served[_place(path)] = (schema["maximum"], schema["default"])
    documented: dict[str, tuple[int, ...]] = {}
    for cells in _rows("| List | `limit` up to | default |"):
        limits = tuple(int(cell.replace(",", "")) for cell in cells[1:3])
        documented |= {path: limits for _, path in _routes(cells[0])}
    assert documented == served


def test_the_table_reader_reads_each_shape() -> None:
    assert _routes("`GET`/`PUT /me/notifications`") == [
        ("GET", "/me/notifications"),
        ("PUT", "/me/notifications"),
    ]
    assert _routes("`GET /benchmarks/{id}/bundle` · `POST` (new version)") == [
        ("GET", "/benchmarks/{}/bundle"),
        ("POST", "/benchmarks/{}/bundle"),
    ]


def test_the_success_statuses_named_are_the_servers(openapi: dict[str, Any]) -> None:
    """Before, `POST /runs/{id}/rejudge` answered 202 while the page said 200."""
    text = " ".join(API_MD.split())
    made = text.split("`201 Created`", 1)[1].split("They answer", 1)[0]
    queued = text.split("`202 Accepted`", 1)[1].split("Everything else", 1)[0]
    documented = {path: "201" for path in re.findall(r"(/[a-z{][^`]*)", made)}
    documented |= {path: "202" for path in re.findall(r"(/[a-z{][^`]*)", queued)}
    served = {
        _place(path): next(code for code in operation["responses"] if code.startswith("2"))
        for path, operations in openapi["paths"].items()
        for method, operation in operations.items()
        if method == "post"
    }
    assert {_place(path): code for path, code in documented.items()} == {
        path: code for path, code in served.items() if code != "200"
    }
