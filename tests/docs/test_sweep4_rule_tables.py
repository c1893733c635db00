"""The docs' tables of run settings, training hyperparameters, scopes, roles and the agent's
never-list say what the code enforces: each is read from its page and compared with the model
or rule it describes, so a changed range, default, role or page fails here, not for a reader."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from benchgen.core.permissions import RULES, Role, Scope, Target
from benchgen.services.runs.settings import RunOptions, RunSettings
from benchgen.services.training.plans import HyperparametersIn, TrainingIn

DOCS = Path(__file__).resolve().parents[2] / "docs"
NUMBER = r"2³¹−1|[0-9][0-9,.e-]*"


def _table(page: str, header: str) -> list[list[str]]:
    """The cells of each row of the table whose header row starts with `header`."""
    lines = (DOCS / page).read_text(encoding="utf-8").split(f"\n{header}", 1)[1].splitlines()
    rows = []
    for line in lines[2:]:  # the rest of the header row, then its |---| line
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def _number(text: str) -> float:
    return float(2**31 - 1) if text == "2³¹−1" else float(text.replace(",", ""))


def _bounds(field: FieldInfo) -> tuple[str, float, float]:
    """How a numeric field is bounded below ("[" at least, "(" above) and its two bounds."""
    found: dict[type, Any] = {type(item): item for item in field.metadata}
    if annotated_types.Gt in found:
        return "(", float(found[annotated_types.Gt].gt), float(found[annotated_types.Le].le)
    return "[", float(found[annotated_types.Ge].ge), float(found[annotated_types.Le].le)


def _documented_bounds(text: str) -> tuple[str, float, float] | None:
    """The range a cell gives: "1–20 answers" or "(0, 0.1]"; None when it gives none."""
    closed = re.match(rf"({NUMBER})–({NUMBER})", text)
    if closed:
        return "[", _number(closed.group(1)), _number(closed.group(2))
    opened = re.match(rf"\(({NUMBER}), ({NUMBER})\]", text)
    return ("(", _number(opened.group(1)), _number(opened.group(2))) if opened else None


def _names(cell: str) -> list[str]:
    return re.findall(r"`(\w+)`", cell)


def _paths(cell: str) -> list[str]:
    return re.findall(r"`(/[^`]*)`", cell)


def test_run_settings_table_names_every_option_with_its_range() -> None:
    rows = _table("run-settings.md", "| Setting | Range | Default |")
    fields = RunSettings.model_fields | RunOptions.model_fields
    assert [name for cells in rows for name in _names(cells[0])] == [
        *RunSettings.model_fields,
        *(name for name in RunOptions.model_fields if name != "settings"),
    ]
    for cells in rows:
        field = fields[_names(cells[0])[0]]
        documented = _documented_bounds(cells[1])
        if documented:
            assert documented == _bounds(field), cells
        if re.fullmatch(r"[0-9]+", cells[2]):
            assert int(cells[2]) == field.get_default(), cells


def _default(model: type[BaseModel], name: str) -> Any:
    return model.model_fields[name].get_default(call_default_factory=True)


def test_training_table_gives_each_hyperparameters_range_and_default() -> None:
    rows = _table("training.md", "| part | what | range / default |")
    named = [name for cells in rows for name in cells[0].replace("`", "").split(" / ")]
    assert named == ["job_type", *HyperparametersIn.model_fields, "compute"]
    assert _names(rows[0][2]) == [_default(TrainingIn, "job_type")]
    for cells in rows[1:-1]:
        names = cells[0].replace("`", "").split(" / ")
        ranges, _, defaults = cells[2].rpartition("; " if "; " in cells[2] else ", ")
        if names == ["target_modules"]:
            field = HyperparametersIn.model_fields[names[0]]
            lengths = {type(item): item for item in field.metadata}
            least, most = lengths[annotated_types.MinLen], lengths[annotated_types.MaxLen]
            assert ranges == f"{least.min_length}–{most.max_length} names"
            assert re.findall(r'"(\w+)"', defaults) == _default(HyperparametersIn, names[0])
            continue
        pairs = zip(names, ranges.split(" / "), defaults.split(" / "), strict=True)
        for name, documented, default in pairs:
            field = HyperparametersIn.model_fields[name]
            assert _documented_bounds(documented) == _bounds(field), name
            assert _number(default) == _default(HyperparametersIn, name), name


def test_scope_tables_list_exactly_the_scopes() -> None:
    for page, header in [("permissions.md", "| Scope | Allows |"), ("api.md", "| Scope |")]:
        assert [_names(cells[0])[0] for cells in _table(page, header)] == list(Scope), page


def test_role_table_and_who_column_are_the_rules() -> None:
    roles = [cells[0] for cells in _table("permissions.md", "| Role | Who |")]
    assert sorted(roles) == sorted(Role)
    for action, rule in RULES.items():
        if rule.target in {Target.BENCHMARK, Target.RUN}:
            row = next(r for r in _table("permissions.md", "| Action |") if r[0] == f"`{action}`")
            assert sorted(row[3].split(", ")) == sorted(rule.roles), action


def test_the_agents_never_list_links_the_pages_people_use() -> None:
    """Each page agent.md's A13 table points to is where a session-only act is done."""
    session_pages = {rule.page for rule in RULES.values() if rule.scope is None or not rule.agent}
    pages = [page for cells in _table("agent.md", "| Never | Page |") for page in _paths(cells[1])]
    assert pages and set(pages) <= session_pages


def test_the_range_reader() -> None:
    assert _documented_bounds("0–2³¹−1 (each sample …)") == ("[", 0.0, float(2**31 - 1))
    assert _documented_bounds("(0, 0.1]") == ("(", 0.0, 0.1)
    assert _documented_bounds("a fixed choice") is None
