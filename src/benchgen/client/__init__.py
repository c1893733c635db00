"""A typed Python client for BenchGen's HTTP API (`/api/v1`), built on httpx (synchronous).

It runs on a user's machine against a remote server, so it imports nothing of the server
(services, storage, routes): only httpx and the standard library. Responses come back as plain
dicts described by `TypedDict`s (timestamps stay ISO 8601 strings); failures raise a
`ClientError` subclass chosen from the error envelope's `code` and the HTTP status.

Import everything from here; the modules behind it are `shapes` (the `TypedDict`s, checked
against the server's OpenAPI document by the tests), `errors` (the exceptions), `connection`
(the token, paging, error mapping) and one module of calls per resource area, which `client`
assembles into `BenchGen`.

Example:
    A benchmark, a run of a built-in baseline model, and its results::

        from benchgen.client import BenchGen

        with BenchGen("http://127.0.0.1:8000", "bgp_…") as bg:
            created = bg.create_benchmark(
                "Capitals", "qa", [{"prompt": "Capital of France?", "answer": "Paris"}]
            )
            run = bg.start_run(created["benchmark"]["id"], "mdl_builtin_echo")
            done = bg.wait_for_run(run["id"])
            print(done["status"], done["summary"].get("accuracy"))
            for row in bg.results(done["id"]):
                print(row["position"], row["raw"])

    A custom benchmark from a Codabench v2 bundle, and a submission to it::

        created = bg.upload_bundle("competition.zip")
        bundle = bg.get_bundle(created["benchmark"]["id"])
        print([(s["name"], s["ok"], s["scores"]) for s in bundle["solutions"] or []])
        run = bg.submit(created["benchmark"]["id"], "predictions.zip")
        print(bg.wait_for_run(run["id"])["scores"])
"""

from benchgen.client.benchmarks import as_input
from benchgen.client.client import BenchGen
from benchgen.client.errors import (
    BadResponse,
    ClientError,
    Conflict,
    Frozen,
    InsufficientCredits,
    InvalidInput,
    NotFound,
    PermissionDenied,
    RateLimited,
    RunTimeout,
    ServerError,
    Stale,
    TooLarge,
    TurnTimeout,
    Unauthenticated,
    Unavailable,
    Unreachable,
    error_from_response,
)
from benchgen.client.runs import FINAL_STATUSES
from benchgen.client.shapes import (
    Benchmark,
    Bundle,
    Button,
    ChangePreview,
    Conversation,
    CreatedBenchmark,
    Dataset,
    EditedBenchmark,
    Estimate,
    Leaderboard,
    LeaderboardRow,
    LedgerLine,
    LogLine,
    Me,
    Model,
    Proposal,
    Question,
    QuotaStatus,
    Rejudging,
    Rescore,
    Run,
    Transcript,
    Turn,
    TurnRecord,
)

__all__ = [
    "FINAL_STATUSES",
    "BadResponse",
    "BenchGen",
    "Benchmark",
    "Bundle",
    "Button",
    "ChangePreview",
    "ClientError",
    "Conflict",
    "Conversation",
    "CreatedBenchmark",
    "Dataset",
    "EditedBenchmark",
    "Estimate",
    "Frozen",
    "InsufficientCredits",
    "InvalidInput",
    "Leaderboard",
    "LeaderboardRow",
    "LedgerLine",
    "LogLine",
    "Me",
    "Model",
    "NotFound",
    "PermissionDenied",
    "Proposal",
    "Question",
    "QuotaStatus",
    "RateLimited",
    "Rejudging",
    "Rescore",
    "Run",
    "RunTimeout",
    "ServerError",
    "Stale",
    "TooLarge",
    "Transcript",
    "Turn",
    "TurnRecord",
    "TurnTimeout",
    "Unauthenticated",
    "Unavailable",
    "Unreachable",
    "as_input",
    "error_from_response",
]
