"""Property-based tests of the whole API against its own OpenAPI spec (schemathesis).

Every operation in /api/v1/openapi.json gets generated requests, valid and invalid, sent to the
ASGI app in process with a token holding all six scopes over seeded data, so requests get past
authentication and reach real objects. Checks (schemathesis' defaults): no 5xx, every status is
documented, bodies, headers and content types match the spec, invalid input is refused.
SQLite only, with bounded examples, to keep it under a minute.

This uses schemathesis' Python API (`as_strategy` under Hypothesis' `@given`) rather than its
pytest plugin: the plugin's fixture-based loader (`schemathesis.pytest.from_fixture`) writes
`request.node._nodeid`, which pytest 9 no longer has.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.generation import GenerationMode

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.core.permissions import Scope
from benchgen.jobs.worker import Worker
from benchgen.services import models
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.support import MCQ, World

FIRST = "mdl_builtin_first"
MAX_EXAMPLES = 30
NOTES = ("title", "description")  # schema keys that constrain nothing


@pytest.fixture
def backend() -> str:
    """SQLite only (overrides the two-backend parametrisation): the spec is the same on both."""
    return "sqlite"


@pytest.fixture
def api_schema(runtime: Runtime, world: World) -> Any:
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    ana = world.user("ana@example.com", credits_=1000)
    secret = world.token(ana, sorted(scope.value for scope in Scope))
    benchmark = world.benchmark(ana, MCQ)
    web = Principal.web(ana)
    run = world.do(web, launch.start_run, benchmark, FIRST).id
    worker = Worker(runtime)
    while worker.run_once():
        pass
    queued = world.do(web, launch.start_run, benchmark, FIRST).id
    spec = {"name": "Mine", "endpoint_model": "m", "base_url": "http://127.0.0.1:9/v1"}
    model = world.do(web, models.create_model, spec).id
    config = SchemathesisConfig.from_dict(
        {
            "headers": {"Authorization": f"Bearer {secret}"},
            # Real ids most of the time, so requests reach objects; generated ones otherwise.
            "dictionaries": {
                "benchmarks": {"values": [benchmark]},
                "runs": {"values": [run, queued]},
                "models": {"values": [model, FIRST]},
            },
            "parameters": {
                "path.benchmark_id": {"dictionary": "benchmarks", "probability": 0.8},
                "query.benchmark_id": {"dictionary": "benchmarks", "probability": 0.8},
                "body.benchmark_id": {"dictionary": "benchmarks", "probability": 0.8},
                "path.run_id": {"dictionary": "runs", "probability": 0.8},
                "path.model_id": {"dictionary": "models", "probability": 0.8},
                "query.model_id": {"dictionary": "models", "probability": 0.8},
                "body.model_id": {"dictionary": "models", "probability": 0.8},
            },
            # Schema-valid is not always valid: rules the schema cannot express (mcq answers
            # among the choices, a cursor this API issued, the credit balance, an If-Match
            # naming the state now) refuse with 422, 402 or 412, as documented.
            "checks": {
                "positive_data_acceptance": {
                    "expected-statuses": [
                        *("2xx", "401", "402", "403", "404", "409", "412", "422", "429")
                    ]
                },
                # Off: the request shapes strip whitespace before checking `max_length`, so a
                # string over `maxLength` only by surrounding whitespace (say U+0085 × 20,001)
                # is accepted, trimmed. Negative cases still run for every other check.
                "negative_data_rejection": {"enabled": False},
            },
        }
    )
    app = create_app(runtime.settings, runtime)
    return schemathesis.openapi.from_asgi("/api/v1/openapi.json", app, config=config)


MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
Statuses = dict[tuple[str, str], Counter[int]]


def test_api_conforms_to_its_openapi_spec(api_schema: Any) -> None:
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 20, "the spec lost its operations"
    statuses: Statuses = defaultdict(Counter)
    failures: list[str] = []
    for operation in operations:
        for mode in MODES:
            if mode is GenerationMode.NEGATIVE and not _can_be_invalid(operation):
                continue
            try:
                _fuzz(operation, mode, statuses)
            except (Exception, BaseExceptionGroup) as exc:  # report every operation together
                failures.append(f"{operation.label} ({mode.value}): {str(exc)[:3000]}")
    assert not failures, "\n\n".join(failures)
    # The token and the seeded ids did their job: valid requests reached the routes.
    positive = {label: seen for (label, mode), seen in statuses.items() if mode == "positive"}
    assert not [label for label, seen in positive.items() if 401 in seen], positive
    succeeded = [label for label, seen in positive.items() if any(200 <= s < 300 for s in seen)]
    assert len(succeeded) >= len(operations) // 2, positive


def _can_be_invalid(operation: Any) -> bool:
    """Whether any request to `operation` breaks its schema: not when it has no body and its
    only parameters (the token's header aside) are free-form path strings. Hypothesis spent
    about a second on each such operation before giving up (Unsatisfiable), which is now a
    failure for the others."""
    if list(operation.body):
        return True
    return any(
        parameter.location.value != "path"
        or {k: v for k, v in parameter.definition.get("schema", {}).items() if k not in NOTES}
        != {"type": "string"}
        for parameter in operation.iter_parameters()
        if parameter.name != "Authorization"  # set by the test's config on every request
    )


def _fuzz(operation: Any, mode: GenerationMode, statuses: Statuses) -> None:
    """Run Hypothesis on one operation: generated cases, sent and validated by schemathesis."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        # The same examples on every run, so CI is reproducible; change the profile locally
        # (or raise MAX_EXAMPLES) to explore further.
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],  # no shrinking: the first failure is reported as found
    )
    def run(case: Any) -> None:
        response = case.call_and_validate()
        statuses[(operation.label, mode.value)][response.status_code] += 1

    run()
