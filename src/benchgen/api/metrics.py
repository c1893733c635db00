"""`/metrics`: queue depth and job ages for Prometheus, for the operator's metrics token only."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import PlainTextResponse

from benchgen.api.deps import get_runtime
from benchgen.core.context import Principal
from benchgen.core.permissions import Action
from benchgen.services import metrics
from benchgen.services.runtime import Runtime, transaction

router = APIRouter(tags=["ops"])
SCRAPER = Principal.system("metrics", frozenset({Action.METRICS_READ}))


# Not in the API's OpenAPI document: Prometheus scrapes it, no client is generated for it.
@router.get("/metrics", response_class=PlainTextResponse, include_in_schema=False)
def read_metrics(
    request: Request, runtime: Annotated[Runtime, Depends(get_runtime)]
) -> PlainTextResponse:
    """Prometheus metrics: jobs by kind and status, the oldest due job's age, lost leases, runs
    and training jobs by status. Needs `Authorization: Bearer <BENCHGEN_METRICS_TOKEN>`; absent
    (404) while no metrics token is set."""
    # Answered in plain text, not as the web app's pages: a scraper reads this.
    expected = runtime.settings.metrics_token
    if expected is None:
        return PlainTextResponse("metrics are off: set BENCHGEN_METRICS_TOKEN\n", 404)
    # The scheme is case-insensitive (RFC 9110), as the API's; a bare token is no credential.
    scheme, _, given = request.headers.get("authorization", "").strip().partition(" ")
    if scheme.casefold() != "bearer":
        given = ""
    given = given.strip()
    # Constant time: the token is compared without telling how much of it matched.
    if not hmac.compare_digest(given.encode(), expected.get_secret_value().encode()):
        headers = {"WWW-Authenticate": "Bearer"}
        return PlainTextResponse("the metrics token is missing or wrong\n", 401, headers=headers)
    with transaction(runtime, SCRAPER, write=False) as ctx:
        text = metrics.render_metrics(ctx)
    return PlainTextResponse(text, media_type="text/plain; version=0.0.4")
