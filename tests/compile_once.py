"""Compile once per test process what production compiles once per server: SQL, routes, pages.

Every test builds its own engine (`Database` over the test's own database) and every app test its
own app (`create_app` over the test's runtime); each compiled the same things again:

- SQLAlchemy caches compiled SQL per engine and per mapper, keyed by the engine's dialect
  object, so every test compiled every statement and flush it ran afresh: about a third of the
  CPU of the service tests. `share_compiled_sql()` lets the engines that `benchgen.db.session`
  builds alike (same dialect class, server, driver and engine arguments: only the database file
  or name differs) use the first such engine's dialect, once SQLAlchemy has set it up for the
  server, and one compiled-statement cache (SQLAlchemy's `compiled_cache` execution option), as
  one long-lived engine would. Every engine keeps its own pool, connections, connection setup
  and events, on its own database.

- FastAPI 0.16x compiles a route included from a router (its dependency tree, its parameter and
  response models: pydantic TypeAdapters, and its request handler) the first time an app matches
  a request, for that app alone: ~160 routes, about 0.35 s of CPU an app, and every route of
  every router before the one matched (a web page, a 404 or `/healthz` matched last paid for
  all). `share_compiled_routes()` keeps what was compiled for a route and gives it to a later
  app that includes the same route object the same way, as one long-lived server reuses it: the
  handler reads everything else per request (the app, its state, its middleware's limits). The
  one thing of an app it holds is where to look up dependency overrides, so an app that has
  overrides when it first matches a route compiles its own (BenchGen's tests set none). Anything
  else (a route defined per app, another include context, a FastAPI without these internals)
  compiles as usual.
- Each app's Jinja environment parses and compiles every page template it renders.
  `share_compiled_templates()` gives environments that have no bytecode cache one in memory,
  Jinja's own mechanism: a template is compiled once per source text, file and environment
  configuration, and every environment still loads, checks and renders it itself.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jinja2
from fastapi import routing
from jinja2.bccache import Bucket, BytecodeCache
from sqlalchemy import URL, Engine, event
from sqlalchemy.engine import Dialect
from sqlalchemy.util import LRUCache

from benchgen.db import session as db_session

_OWN = "dependency_overrides_provider"  # the app: per app, never compared


def _same_include(first: Any, second: Any, names: tuple[str, ...]) -> bool:
    """Whether two include contexts differ at most in the app they belong to."""
    return first.included_router is second.included_router and all(
        getattr(first, name) == getattr(second, name) for name in names
    )


def _overridden(include_context: Any) -> bool:
    """Whether the app including a route has dependency overrides (its handlers read them)."""
    return bool(getattr(include_context.dependency_overrides_provider, "dependency_overrides", {}))


def share_compiled_routes() -> bool:
    """Install the cache; False (nothing changed) when this FastAPI lacks the hook."""
    context_class = getattr(routing, "_EffectiveRouteContext", None)
    include_class = getattr(routing, "_RouterIncludeContext", None)
    built = getattr(context_class, "from_api_route", None)
    if context_class is None or include_class is None or built is None:
        return False
    if getattr(built, "shared_by_tests", False):
        return True
    compile_route = built.__func__
    names = tuple(
        field.name
        for field in dataclasses.fields(include_class)
        if field.name not in ("included_router", _OWN)
    )
    # id(route) -> (the route, kept alive so its id is never reused; its include; the compiled
    # context, its request handler included)
    compiled: dict[int, tuple[Any, Any, Any]] = {}

    def from_api_route(cls: type, *, original_route: Any, include_context: Any) -> Any:
        seen = compiled.get(id(original_route))
        if _overridden(include_context):
            return compile_route(
                cls, original_route=original_route, include_context=include_context
            )
        if (
            seen is None
            or seen[0] is not original_route
            or not _same_include(seen[1], include_context, names)
        ):
            context = compile_route(
                cls, original_route=original_route, include_context=include_context
            )
            compiled[id(original_route)] = (original_route, include_context, context)
            return context
        return seen[2]

    from_api_route.shared_by_tests = True  # type: ignore[attr-defined]
    context_class.from_api_route = classmethod(from_api_route)
    return True


class _MemoryBytecode(BytecodeCache):
    """Compiled templates in memory, keyed by template, file, source and environment options."""

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def get_bucket(
        self, environment: jinja2.Environment, name: str, filename: str | None, source: str
    ) -> Bucket:
        options = repr(
            (
                environment.block_start_string,
                environment.block_end_string,
                environment.variable_start_string,
                environment.variable_end_string,
                environment.comment_start_string,
                environment.comment_end_string,
                environment.line_statement_prefix,
                environment.line_comment_prefix,
                environment.trim_blocks,
                environment.lstrip_blocks,
                environment.newline_sequence,
                environment.keep_trailing_newline,
                environment.autoescape,
                environment.optimized,
                environment.undefined,
                environment.finalize,
                environment.is_async,
                sorted(environment.extensions),
            )
        )
        key = self.get_cache_key(f"{name}|{options}", filename)
        bucket = Bucket(environment, key, self.get_source_checksum(source))
        self.load_bytecode(bucket)
        return bucket

    def load_bytecode(self, bucket: Bucket) -> None:
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)  # checks the source checksum itself

    def dump_bytecode(self, bucket: Bucket) -> None:
        self._code[bucket.key] = bucket.bytecode_to_string()


def share_compiled_templates() -> None:
    """New Jinja environments without a bytecode cache get the process's one in memory."""
    init = jinja2.Environment.__init__
    if getattr(init, "shared_by_tests", False):
        return
    shared = _MemoryBytecode()

    def with_shared_cache(self: jinja2.Environment, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if self.bytecode_cache is None:
            self.bytecode_cache = shared

    with_shared_cache.shared_by_tests = True  # type: ignore[attr-defined]
    jinja2.Environment.__init__ = with_shared_cache  # type: ignore[method-assign]


def _configuration(engine: Engine, arguments: dict[str, Any]) -> str:
    """What the SQL an engine compiles depends on: its dialect, server, driver and arguments, not
    which file or database it opens."""
    url = engine.url
    server = (url.drivername, url.host, url.port, url.username, sorted(url.query.items()))
    return repr((type(engine.dialect).__qualname__, server, sorted(arguments.items())))


def share_compiled_sql() -> None:
    """Engines that `benchgen.db.session` builds alike share a dialect and compiled statements."""
    build = getattr(db_session, "create_engine", None)
    if build is None or getattr(build, "shared_by_tests", False):
        return
    shared: dict[str, tuple[Dialect, LRUCache[Any, Any]]] = {}

    def create_engine(url: str | URL, **arguments: Any) -> Engine:
        engine = build(url, **arguments)
        configuration = _configuration(engine, arguments)
        if configuration not in shared:
            # Shared once its first connection is made: SQLAlchemy has then set the dialect up
            # for the server (versions, features), as it would for any later engine alike.
            def adopt(*_: Any) -> None:
                shared.setdefault(configuration, (engine.dialect, LRUCache(20_000)))

            event.listen(engine.pool, "connect", adopt, once=True)
            return engine
        dialect, statements = shared[configuration]
        engine.dialect = dialect
        return engine.execution_options(compiled_cache=statements)

    create_engine.shared_by_tests = True  # type: ignore[attr-defined]
    db_session.create_engine = create_engine
