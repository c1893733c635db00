"""A column hidden when a run was scored stays hidden on the leaderboard, as on the run's page,
after a next bundle version shows it: in the rows, every download, and the cursor."""

from __future__ import annotations

import csv
import io
import json

from benchgen.core.context import Principal
from benchgen.services.benchmarks import bundles
from benchgen.services.runs import exports, launch, leaderboards, submissions
from benchgen.services.runtime import Runtime
from tests.bundle_factory import ANSWERS, bundle, results
from tests.services.test_hidden_columns import joined_with_hidden_column
from tests.services.test_runs import work_all
from tests.support import World


def test_a_column_shown_by_a_later_version_stays_hidden_for_runs_scored_while_hidden(
    world: World, runtime: Runtime
) -> None:
    """The run's page kept `errors` hidden from everyone but the organisers; the board showed
    it to anyone once v2 showed the column, and its cursor carried it too."""
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    benchmark = joined_with_hidden_column(world, ana, bob)
    owner, participant = Principal.web(ana), Principal.web(bob)
    run_ids = [
        world.do(participant, submissions.submit, benchmark, results(ANSWERS), f"{n}.zip").id
        for n in (1, 2)
    ]
    work_all(runtime)
    for run_id in run_ids:
        world.do(owner, leaderboards.add_to_leaderboard, run_id)
    secret = world.do(owner, launch.get_run, run_ids[0]).scores["errors"]
    world.do(owner, bundles.upload_bundle_version, benchmark, bundle(), "v2.zip")
    assert "errors" not in world.do(participant, launch.get_run, run_ids[0]).scores

    page = world.do(participant, leaderboards.leaderboard_page, benchmark, None, 1)
    assert "errors" in page.board.columns  # v2 shows the column
    assert page.board.rows[0].scores["errors"] is None
    index = page.board.columns.index("errors")
    assert page.standings[0].scores[index] is None
    # The next page still follows on from the first, the cursor's gap read from the run.
    after = world.do(
        participant, leaderboards.leaderboard_page, benchmark, None, 1, page.standings[0]
    )
    assert [row.run_id for row in page.board.rows + after.board.rows] == [
        row.run_id for row in world.do(owner, leaderboards.get_leaderboard, benchmark).rows
    ]
    _, document = world.do(participant, exports.export_leaderboard, benchmark, "json")
    assert all(row["scores"]["errors"] is None for row in json.loads(document)["rows"])
    _, table = world.do(participant, exports.export_leaderboard, benchmark, "csv")
    assert secret is not None
    assert [row["Errors"] for row in csv.DictReader(io.StringIO(table))] == ["", ""]
