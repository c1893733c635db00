"""The JSON Schema of the competition.yaml that competition.py accepts, published in docs/."""

from __future__ import annotations

from typing import Any

from benchgen.bundles.competition import (
    COMPUTATIONS,
    KEPT_TOP_LEVEL_KEYS,
    MAX_COLUMNS,
    MAX_DOCKER_IMAGE,
    MAX_PAGES,
    MAX_PHASES,
    MAX_TASKS,
    SORTINGS,
)


def bundle_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of the competition.yaml this parser accepts.

    Unknown keys are allowed (they are warnings, not errors), so objects stay open.
    """
    text = {"type": "string"}
    whole = {"type": ["integer", "null"], "minimum": 0}
    path = {"$ref": "#/$defs/path"}
    indexes = {"type": ["array", "null"], "items": {"type": "integer", "minimum": 0}}
    known = {
        key: {"description": "Codabench setting kept, not used"} for key in KEPT_TOP_LEVEL_KEYS
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://benchgen.dev/schemas/codabench-bundle.json",
        "title": "Codabench v2 competition.yaml as accepted by BenchGen",
        "type": "object",
        "required": ["version", "title", "phases", "tasks"],
        "oneOf": [{"required": ["leaderboards"]}, {"required": ["leaderboard"]}],
        "properties": {
            "version": {"enum": [2, "2"]},
            "title": {"type": "string", "minLength": 1},
            "description": text,
            "image": path,
            "docker_image": {"type": "string", "maxLength": MAX_DOCKER_IMAGE},
            "terms": path,
            "pages": {
                "type": ["array", "null"],
                "maxItems": MAX_PAGES,
                "items": {"$ref": "#/$defs/page"},
            },
            "phases": _listed("phase", MAX_PHASES),
            "tasks": _listed("task", MAX_TASKS),
            "solutions": {"type": ["array", "null"], "items": {"$ref": "#/$defs/solution"}},
            "leaderboards": {"$ref": "#/$defs/leaderboards"},
            "leaderboard": {"$ref": "#/$defs/leaderboards"},
            **dict(sorted(known.items())),
        },
        "$defs": {
            "path": {
                "type": "string",
                "description": "Bundle-relative folder, .zip or file; no '..', '/' or '\\\\'",
                "pattern": r"^(?!/)(?![A-Za-z]:)(?!.*\\)(?!(.*/)?\.\.(/|$)).+$",
            },
            "date": {
                "type": ["string", "null"],
                "description": "2026-01-31[ 12:00[:00]][Z|+hh:mm], or month-day-year 1-31-2026 "
                "or 1/31/2026; no zone means UTC",
                "pattern": r"^(\d{4}-\d{1,2}-\d{1,2}|\d{1,2}([-/])\d{1,2}\2\d{4})",
            },
            "page": {
                "type": "object",
                "required": ["title", "file"],
                "properties": {"title": text, "file": path},
            },
            "phase": {
                "type": "object",
                "required": ["tasks"],
                "properties": {
                    "index": whole,
                    "name": text,
                    "description": text,
                    "start": {"$ref": "#/$defs/date"},
                    "end": {"$ref": "#/$defs/date"},
                    "tasks": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    "max_submissions": whole,
                    "max_submissions_per_day": whole,
                    "execution_time_limit": {"type": ["integer", "null"], "minimum": 1},
                },
            },
            "task": {
                "type": "object",
                "required": ["scoring_program"],
                "properties": {
                    "index": whole,
                    "name": text,
                    "description": text,
                    **{k: path for k in ("scoring_program", "ingestion_program")},
                    **{k: path for k in ("reference_data", "input_data")},
                    "ingestion_only_during_scoring": {"type": ["boolean", "null"]},
                },
            },
            "solution": {
                "type": "object",
                "required": ["path"],
                "properties": {"index": whole, "name": text, "path": path, "tasks": indexes},
            },
            "leaderboards": {
                "oneOf": [
                    {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/board"}},
                    {"$ref": "#/$defs/board"},
                ]
            },
            "board": {
                "type": "object",
                "required": ["key", "columns"],
                "properties": {
                    "index": whole,
                    "key": text,
                    "title": text,
                    "columns": _listed("column", MAX_COLUMNS),
                },
            },
            "column": {
                "type": "object",
                "required": ["key"],
                "properties": {
                    "index": whole,
                    "key": text,
                    "title": text,
                    "sorting": {"enum": [*SORTINGS, None]},
                    "computation": {"enum": [*COMPUTATIONS, None]},
                    "computation_indexes": indexes,
                    "precision": whole,
                    "hidden": {"type": ["boolean", "null"]},
                },
            },
        },
    }


def _listed(kind: str, most: int) -> dict[str, Any]:
    """A list of one to `most` of the `kind` defined in `$defs`."""
    return {"type": "array", "minItems": 1, "maxItems": most, "items": {"$ref": f"#/$defs/{kind}"}}
