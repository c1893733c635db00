"""`benchgen serve`: the API and the web pages, with embedded job workers."""

from __future__ import annotations

import socket
from typing import Annotated

import typer

from benchgen.cli.common import console, labelled, open_runtime, prepare, say_error
from benchgen.cli.helptext import App
from benchgen.cli.lazy import lasting_imports

commands = App()
APP = "benchgen.app:create_app"  # by name: uvicorn imports it again in each worker process
HOST, PORT = "127.0.0.1", 8000  # where `serve` listens unless told (`demo` says so too)


@commands.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = HOST,
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = PORT,
    workers: Annotated[
        int, typer.Option(min=1, help="Web server processes (each with its own job workers).")
    ] = 1,
) -> None:
    """Serve the web app and the API (docs at /api/docs, liveness at /healthz).

    Each process also runs BENCHGEN_WORKER_THREADS job workers (default 2) that run models,
    scoring programs and training, unless BENCHGEN_BROKER_URL is set or the variable is 0: then
    `benchgen worker` processes do that work.

    \b
    Examples:
      $ benchgen serve
      $ benchgen serve --host 0.0.0.0 --port 8080 --workers 2
    """
    import uvicorn
    from uvicorn.importer import import_from_string

    from benchgen.agent.brains import BrainUnavailable, configured_brain

    with open_runtime() as runtime:
        problem = _cannot_listen(host, port)
        if problem:
            # Said before anything starts: the banner went out, then uvicorn failed to listen.
            say_error(problem)
            raise typer.Exit(1)
        proxies = _forwarded_allow_ips(runtime.settings.trusted_proxies)
        prepare(runtime)  # migrate and seed once here, before several workers could race
        try:
            configured_brain(runtime.settings)  # each worker builds it again; fail before them
        except BrainUnavailable as exc:
            labelled("Cannot start:", str(exc), to=console)
            raise typer.Exit(2) from None
    # Only a process that goes on to serve comes here (never a test's). The app uvicorn serves,
    # imported by name as a command's module is (lazy.preload): a few tenths of a second
    # sooner, and never walked by the collector again.
    with lasting_imports():
        import_from_string(APP)
    console.print(f"BenchGen on http://{host}:{port}  (API docs: /api/docs)")
    uvicorn.run(
        APP,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="warning",
        forwarded_allow_ips=proxies,
    )


def _cannot_listen(host: str, port: int) -> str:
    """Why this process could not listen on host:port ("" when it can, as far as a trial
    bind shows: another process may still take the port before the server does)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as trial:
        trial.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            trial.bind((host, port))
        except OSError as exc:
            return f"cannot listen on {host}:{port}: {exc.strerror or exc}."
    return ""


def _forwarded_allow_ips(trusted: str) -> str:
    """Who uvicorn believes X-Forwarded-Proto and -For from: the configured proxies, and this
    machine as by uvicorn's default. Behind a TLS proxy on another machine the scheme stayed
    http, and cookies went out without `Secure`."""
    proxies = [entry.strip() for entry in trusted.split(",") if entry.strip()]
    return ",".join(dict.fromkeys(["127.0.0.1", *proxies]))
