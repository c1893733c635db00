"""Small Codabench v2 bundles built in memory for tests: a scorer, an ingestion program that asks
the model through the per-run proxy, results and code submissions."""

from __future__ import annotations

import io
import json
import os
import threading
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchgen.bundles.sandbox import sandbox_problem
from benchgen.services.benchmarks import _bundle_versions

SANDBOX_RUNTIME = Path(__file__).resolve().parents[1] / ".sandbox-venv"


def require_sandbox() -> Path:
    """The sandbox's Python runtime; skips where programs cannot run isolated, and fails
    instead under CI=true (no skip, no unsandboxed fallback there)."""
    problem = sandbox_problem(SANDBOX_RUNTIME)
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"programs must run sandboxed under CI: {problem}")
        pytest.skip(f"programs cannot run sandboxed here: {problem}")
    return SANDBOX_RUNTIME


SCORER = """
import json, os, pathlib
ref = json.loads(pathlib.Path('/app/input/ref/answers.json').read_text())
res_dir = pathlib.Path('/app/input/res')
found = {}
for name in ('predictions.json',):
    if (res_dir / name).exists():
        found = json.loads((res_dir / name).read_text())
if (res_dir / 'predictions.jsonl').exists():
    for line in (res_dir / 'predictions.jsonl').read_text().splitlines():
        row = json.loads(line)
        found[str(row['id'])] = row['prediction'] or ''
right = sum(1 for k, v in ref.items() if str(found.get(k, '')).strip().lower() == v.lower())
print('scored', len(ref), 'items')
pathlib.Path('/app/output/scores.json').write_text(
    json.dumps({'accuracy': right / len(ref), 'errors': len(ref) - right})
)
"""

INGESTION = """
import json, os, pathlib, urllib.request
base = os.environ['OPENAI_BASE_URL']
key = os.environ['OPENAI_API_KEY']
out = {}
for line in pathlib.Path('/app/input_data/questions.jsonl').read_text().splitlines():
    row = json.loads(line)
    body = json.dumps({'model': 'x', 'messages': [{'role': 'user', 'content': row['prompt']}]})
    request = urllib.request.Request(
        base + '/chat/completions', body.encode(),
        {'Authorization': 'Bearer ' + key, 'Content-Type': 'application/json'},
    )
    reply = json.loads(urllib.request.urlopen(request, timeout=30).read())
    out[row['id']] = reply['choices'][0]['message']['content']
pathlib.Path('/app/output/predictions.json').write_text(json.dumps(out))
print('asked', len(out))
"""

CODE_INGESTION = """
import json, pathlib, sys
sys.path.insert(0, '/app/ingested_program')
import model
out = {}
for line in pathlib.Path('/app/input_data/questions.jsonl').read_text().splitlines():
    row = json.loads(line)
    out[row['id']] = model.predict(row['prompt'])
pathlib.Path('/app/output/predictions.json').write_text(json.dumps(out))
"""

MODEL_CODE = b"def predict(prompt):\n    return {'paris': 'paris', '5': '4'}[prompt]\n"
ANSWERS = {"q1": "paris", "q2": "4"}
QUESTIONS = [{"id": "q1", "prompt": "paris"}, {"id": "q2", "prompt": "5"}]


def competition(**changes: Any) -> dict[str, Any]:
    """A competition.yaml as a dict: one phase, one task, three leaderboard columns."""
    data: dict[str, Any] = {
        "version": 2,
        "title": "Tiny custom",
        "description": "A custom benchmark for tests",
        "docker_image": "codalab/codalab-legacy:py39",
        "terms": "terms.md",
        "pages": [{"title": "Overview", "file": "overview.md"}],
        "phases": [
            {
                "index": 0,
                "name": "Development",
                "start": "1-1-2020",
                "tasks": [0],
                "max_submissions": 5,
            }
        ],
        "tasks": [
            {
                "index": 0,
                "name": "Answer",
                "scoring_program": "scoring_program/",
                "reference_data": "reference_data/",
                "input_data": "input_data/",
            }
        ],
        "solutions": [{"index": 0, "path": "solution/", "tasks": [0]}],
        "leaderboards": [
            {
                "index": 0,
                "title": "Results",
                "key": "main",
                "columns": [
                    {"index": 0, "key": "accuracy", "title": "Accuracy"},
                    {"index": 1, "key": "errors", "title": "Errors", "sorting": "asc"},
                    {
                        "index": 2,
                        "key": "combined",
                        "title": "Sum",
                        "computation": "sum",
                        "computation_indexes": [0, 1],
                    },
                ],
            }
        ],
    }
    data.update(changes)
    return data


def bundle(
    comp: dict[str, Any] | None = None,
    *,
    scorer: str = SCORER,
    ingestion: str | None = None,
    extra: dict[str, bytes] | None = None,
    solution: dict[str, Any] | None = None,
) -> bytes:
    """The bundle zip: programs as folders, reference data, input data, a solution."""
    comp = comp or competition()
    if ingestion is not None:
        for task in comp["tasks"]:
            task["ingestion_program"] = "ingestion_program/"
    files: dict[str, bytes] = {
        "competition.yaml": yaml.safe_dump(comp, sort_keys=False).encode(),
        "terms.md": b"# Terms\n\nBe <b>nice</b>.<script>alert(1)</script>",
        "overview.md": b"# Overview\n\nAnswer the *questions*.",
        "scoring_program/metadata.yaml": b"command: python3 /app/program/score.py\n",
        "scoring_program/score.py": scorer.encode(),
        "reference_data/answers.json": json.dumps(ANSWERS).encode(),
        "input_data/questions.jsonl": "\n".join(json.dumps(q) for q in QUESTIONS).encode(),
        "solution/predictions.json": json.dumps(solution or ANSWERS).encode(),
    }
    if ingestion is not None:
        files["ingestion_program/metadata"] = b"command: python3 $program/ingest.py\n"
        files["ingestion_program/ingest.py"] = ingestion.encode()
    if ingestion == CODE_INGESTION:
        # The solution of a code-ingesting task is code.
        files["solution/model.py"] = MODEL_CODE
    files.update(extra or {})
    return zip_of(files)


def zip_of(files: dict[str, bytes]) -> bytes:
    """A zip holding `files` (name → bytes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def results(predictions: dict[str, str]) -> bytes:
    """A results submission."""
    return zip_of({"predictions.json": json.dumps(predictions).encode()})


def programs_started(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """An event set when an upload's first solution program starts (the real one still runs)."""
    started = threading.Event()
    evaluate = _bundle_versions.evaluate_task

    def signalled(*args: Any) -> Any:
        started.set()
        return evaluate(*args)

    monkeypatch.setattr(_bundle_versions, "evaluate_task", signalled)
    return started


class HeldPrograms:
    """An upload's solution programs held before they run until `release` (or `hold_s`), so
    that a test acts while they would be running; the real ones run once released."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, hold_s: float = 8.0) -> None:
        self.started = threading.Event()
        self.released = threading.Event()
        evaluate = _bundle_versions.evaluate_task

        def holding(*args: Any) -> Any:
            self.started.set()
            self.released.wait(hold_s)
            return evaluate(*args)

        monkeypatch.setattr(_bundle_versions, "evaluate_task", holding)

    def wait_started(self) -> None:
        assert self.started.wait(30), "the bundle's programs never started"

    def release(self) -> None:
        self.released.set()

    def rearm(self) -> None:
        """Hold the next programs again."""
        self.started.clear()
        self.released.clear()
