"""`BenchGen`: the one client class, assembled from the calls of each resource area."""

from __future__ import annotations

from benchgen.client.account import AccountCalls
from benchgen.client.benchmarks import BenchmarkCalls
from benchgen.client.bundles import BundleCalls
from benchgen.client.chat import ChatCalls
from benchgen.client.compare import CompareCalls
from benchgen.client.datasets import DatasetCalls
from benchgen.client.formats import FormatCalls
from benchgen.client.models import ModelCalls
from benchgen.client.runs import RunCalls
from benchgen.client.settings import SettingsCalls
from benchgen.client.training import TrainingCalls


class BenchGen(
    AccountCalls,
    BenchmarkCalls,
    FormatCalls,
    BundleCalls,
    ModelCalls,
    DatasetCalls,
    TrainingCalls,
    RunCalls,
    CompareCalls,
    SettingsCalls,
    ChatCalls,
):
    """A synchronous client for one BenchGen server and one personal API token.

    Use it as a context manager (or call `close()`) to release its connections. Every method
    raises a `ClientError` subclass when the request fails.

    Args:
        base_url: The server's address, e.g. `http://127.0.0.1:8000` (a trailing `/api/v1` is
            accepted too).
        token: A personal API token (`bgp_…`); when None, the `BENCHGEN_TOKEN` variable.
        timeout: Seconds to wait for each response.
        transport: An httpx transport to use instead of the network (tests, proxies).

    Raises:
        ValueError: No token was given and `BENCHGEN_TOKEN` is empty, or `base_url` is not an
            http:// or https:// address (see `Connection`).
    """
