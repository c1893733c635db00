"""Run a bundle's scoring or ingestion program at Codabench's paths; read the scores it wrote."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from benchgen.core.errors import InvalidInput

from .sandbox import Limits, Mount, Outcome, run_sandboxed

Kind = Literal["scoring", "ingestion"]

PROGRAM = "/app/program"
INPUT = "/app/input"
REF = "/app/input/ref"
RES = "/app/input/res"
OUTPUT = "/app/output"
INPUT_DATA = "/app/input_data"
INGESTED_PROGRAM = "/app/ingested_program"
SHARED = "/app/shared"
SCORE_FILE_BYTES = 1 << 20

# Old Codalab bundles name their folders with placeholders; Codabench replaced them with fixed
# paths. Longer names first, so `$program` does not eat into `$program_dir`-like names.
_PLACEHOLDERS: dict[Kind, dict[str, str]] = {
    "scoring": {
        "$program": PROGRAM,
        "$input": INPUT,
        "$output": OUTPUT,
        "$shared": SHARED,
        "$hidden": REF,
    },
    "ingestion": {
        "$submission_program": INGESTED_PROGRAM,
        "$ingestion_program": PROGRAM,
        "$program": PROGRAM,
        "$input": INPUT_DATA,
        "$output": OUTPUT,
        "$shared": SHARED,
        "$hidden": REF,
    },
}


@dataclass(frozen=True)
class ProgramDirs:
    """Host folders for one program run; None means the folder is not shown to the program."""

    program: Path
    output: Path
    ref: Path | None = None
    res: Path | None = None
    input_data: Path | None = None
    ingested_program: Path | None = None
    shared: Path | None = None


def program_argv(command: str, kind: Kind) -> list[str]:
    """The argv that runs a metadata `command:` line through the sandbox's shell."""
    names = sorted(_PLACEHOLDERS[kind], key=len, reverse=True)
    for name in names:
        command = command.replace(name, _PLACEHOLDERS[kind][name])
    # The shell runs inside the sandbox, so whatever the command says stays confined there.
    return ["/bin/sh", "-c", command]


def run_program(
    kind: Kind,
    command: str,
    dirs: ProgramDirs,
    *,
    runtime: Path,
    limits: Limits = Limits(),  # noqa: B008 - frozen, so one shared default is safe
    env: Mapping[str, str] = {},
    socket: Path | None = None,
    allow_unsandboxed: bool = False,
) -> Outcome:
    """Run a scoring or ingestion program sandboxed, with its folders at Codabench's paths.

    Raises:
        Conflict: programs cannot run isolated here and unsandboxed runs are not allowed.
    """
    return run_sandboxed(
        program_argv(command, kind),
        _mounts(dirs),
        runtime=runtime,
        limits=limits,
        env=env,
        workdir=PROGRAM,
        socket=socket,
        allow_unsandboxed=allow_unsandboxed,
        dirs=[INPUT],  # Codabench always has it, even when only one of ref and res is given
    )


def _mounts(dirs: ProgramDirs) -> list[Mount]:
    # Only the output and shared folders are writable: the program, the reference data (which a
    # submission must never alter) and a submission's results stay read-only.
    wanted: list[tuple[Path | None, str, bool]] = [
        (dirs.program, PROGRAM, False),
        (dirs.ref, REF, False),
        (dirs.res, RES, False),
        (dirs.output, OUTPUT, True),
        (dirs.input_data, INPUT_DATA, False),
        (dirs.ingested_program, INGESTED_PROGRAM, False),
        (dirs.shared, SHARED, True),
    ]
    return [Mount(source, target, writable) for source, target, writable in wanted if source]


def read_scores(output: Path, columns: Sequence[str]) -> dict[str, float]:
    """Read the scores a scoring program wrote (scores.json, else scores.txt) for `columns`.

    Raises:
        InvalidInput: no score file, an unreadable or non-finite score, or a column missing.
    """
    scores = _parse_scores(output)
    # Only the declared columns are checked: programs often add notes or timings alongside.
    missing = [column for column in columns if column not in scores]
    if missing:
        raise InvalidInput(
            f"The scoring program wrote no score for {', '.join(missing)}.",
            [{"loc": ["scores", column], "msg": "missing"} for column in missing],
        )
    return {column: _number(column, scores[column]) for column in columns}


def _parse_scores(output: Path) -> dict[str, object]:
    json_file, text_file = output / "scores.json", output / "scores.txt"
    if _is_plain_file(json_file):
        raw = _read_capped(json_file)
        try:
            data: Any = json.loads(raw)
        except ValueError as exc:  # also an integer past Python's digit limit
            raise InvalidInput(f"scores.json is not valid JSON: {exc}.") from exc
        except RecursionError:  # the program chose the nesting: a refusal, never a crash
            raise InvalidInput("scores.json is not valid JSON: it is nested too deeply.") from None
        if not isinstance(data, dict):
            raise InvalidInput("scores.json must be an object of column names to numbers.")
        return {str(key): value for key, value in data.items()}
    if _is_plain_file(text_file):
        scores: dict[str, object] = {}
        for line in _read_capped(text_file).splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip():
                scores[key.strip()] = value.strip()
        return scores
    raise InvalidInput("The scoring program wrote no scores.json or scores.txt.")


def _is_plain_file(path: Path) -> bool:
    # The program wrote this folder: a link could point at a host file, so it is not followed.
    return path.is_file() and not path.is_symlink()


def _read_capped(path: Path) -> str:
    # O_NOFOLLOW: a link swapped in after the check still does not lead out of the folder.
    with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as handle:
        data = handle.read(SCORE_FILE_BYTES + 1)
    if len(data) > SCORE_FILE_BYTES:
        raise InvalidInput(f"{path.name} is larger than {SCORE_FILE_BYTES >> 20} MiB.")
    return data.decode(errors="replace")


def _number(column: str, value: object) -> float:
    # bool is an int to Python but never a score; NaN, infinities and integers too large for a
    # float (JSON allows any number of digits) cannot be ranked.
    number = math.nan
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            number = float(value)
        except (ValueError, OverflowError):
            number = math.nan
    if not math.isfinite(number):
        # The value only in the detail: the message reaches whoever reads the run, and the
        # column may be hidden from them (its value is the organisers').
        raise InvalidInput(
            f"The score for {column} is not a finite number.",
            [{"loc": ["scores", column], "msg": f"not a finite number: {_preview(value)}"}],
        )
    return number


def _preview(value: object) -> str:
    # Only scalars are shown: repr of a deeply nested list would recurse, and a huge integer's
    # str is refused past Python's digit limit.
    if isinstance(value, str):
        return repr(value[:50])
    if isinstance(value, float | bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return f"an integer of {value.bit_length()} bits"
    return f"a JSON {'object' if isinstance(value, dict) else 'array'}"
