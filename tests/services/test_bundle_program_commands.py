"""A program's `command:` holding a NUL or a lone surrogate (YAML's "\\0" and "\\ud800" escapes)
is refused at upload with its place: no argv holds either, so the upload's solution crashed the
request and, without solutions, every run of the benchmark crashed its job."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput
from benchgen.services.benchmarks import bundles, lifecycle
from tests.bundle_factory import bundle, competition, require_sandbox
from tests.support import World


@pytest.mark.parametrize("escape", ["\\0", "\\ud800"])
@pytest.mark.parametrize("solutions", [True, False], ids=["solutions", "none"])
def test_a_command_that_is_not_text_is_refused_at_its_program(
    world: World, escape: str, solutions: bool
) -> None:
    require_sandbox()
    ana = Principal.web(world.user("ana@example.com"))
    comp = competition() if solutions else competition(solutions=[])
    metadata = f'command: "python3 /app/program/score.py {escape}"\n'.encode()
    data = bundle(comp, extra={"scoring_program/metadata.yaml": metadata})
    with pytest.raises(InvalidInput) as caught:
        world.do(ana, bundles.upload_bundle, data, "odd.zip")
    problem = caught.value.errors[0]
    assert problem["loc"] == ["tasks", 0, "scoring_program"]
    assert "'command' in 'scoring_program/metadata.yaml' holds a NUL" in problem["msg"]
    assert world.do(ana, lifecycle.list_benchmarks, True) == []
