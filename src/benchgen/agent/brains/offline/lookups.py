"""The offline planner's read-only look-ups of one benchmark: its leaderboard ("show the
leaderboard of Capitals", "what's on the leaderboard?") and one question's answer ("what is the
answer to question 1 of Capitals?"), given only where the user may see the answer key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchgen.agent.brains.offline import render
from benchgen.agent.brains.offline.ask import Ask, Step
from benchgen.agent.brains.offline.labels import MAX_OPTIONS, no_single, titled
from benchgen.agent.brains.offline.naming import TITLE_KEYS, find, find_id, words
from benchgen.agent.brains.offline.parse import Intent
from benchgen.core.text import plural

TOP_ROWS = 10
# The words of a leaderboard request that name no benchmark ("what's on the leaderboard?").
_BOARD_WORDS = frozenset(
    (
        *("show", "what", "s", "is", "are", "on", "at", "who", "whos", "top", "view", "see"),
        *("display", "open", "get", "give", "current", "now", "list", "tell", "about"),
        *("leaderboard", "leaderboards", "leader", "board", "boards"),
        *("standings", "ranking", "rankings"),
    )
)
_TEAM = ("owner", "collaborator")


def step_leaderboard(ask: Ask, intent: Intent) -> Step:
    """The top rows of the leaderboard of the benchmark named, else of the user's only one."""
    board = ask.result("show_leaderboard")
    if board is not None:
        return _board(ask, board["leaderboard"])
    named = " ".join(sorted(words(intent.phrase) - _BOARD_WORDS))
    target = _benchmark(ask, named, "Leaderboard of {}")
    if not isinstance(target, dict):
        return target
    return [("show_leaderboard", {"benchmark_id": target["id"], "limit": TOP_ROWS})]


def step_answer_of(ask: Ask, intent: Intent) -> Step:
    """One question and its answer, read from the benchmark where the user may see the key."""
    assert intent.form is not None
    number = intent.form.numbers[0]
    shown = [content for tool, content in ask.results if tool == "show_benchmark"]
    if shown:
        return _answer_or_next(shown[-1], number, len(shown))
    label = f"What is the answer to {_which(number)} of {{}}?"
    target = _benchmark(ask, intent.form.phrase, label)
    if not isinstance(target, dict):
        return target
    # The last question's place is known once its benchmark's count is.
    offset = max(number - 1, 0)
    return [("show_benchmark", {"benchmark_id": target["id"], "offset": offset, "limit": 1})]


def _benchmark(ask: Ask, phrase: str, label: str) -> dict[str, Any] | Step:
    """The benchmark meant: by id, by the title the phrase names, or, named by nothing, the
    user's only own one; else buttons (labelled from `label`, read back as the request)."""
    given = find_id(ask.text, "bm")
    if given is not None:
        return {"id": given}
    listed = ask.result("list_benchmarks")
    if listed is None:
        return [("list_benchmarks", {"mine_only": False})]
    visible = listed.get("benchmarks", [])
    own = [b for b in visible if set(b.get("roles") or ()) & set(_TEAM)]
    pool = find(phrase, visible, TITLE_KEYS) if phrase.strip() else own or visible
    if len(pool) == 1:
        return pool[0]
    if not visible:
        return render.benchmarks({"benchmarks": []}, mine=False)
    lead = no_single(phrase, visible)
    options = [label.format(titled(b)) for b in (pool or visible)[:MAX_OPTIONS]]
    return [("ask_user", {"question": f"{lead}Which benchmark do you mean?", "options": options})]


def _board(ask: Ask, board: dict[str, Any]) -> str:
    benchmark_id = board["benchmark_id"]
    name = _title(ask, benchmark_id)
    link = ask.settings.link(f"/benchmarks/{benchmark_id}/leaderboard")
    rows = board.get("rows", [])
    if not rows:
        return (
            f"No run is on the leaderboard of {name} yet: its owner puts runs on it by hand, "
            f"from a run's page. The leaderboard: {link}"
        )
    lines = [f"Leaderboard of {name}, best first:"]
    lines += [_row(row, board.get("titles", {})) for row in rows]
    lines.append(f"The whole leaderboard: {link}")
    return "\n".join(lines)


def _row(row: dict[str, Any], titles: dict[str, str]) -> str:
    scores = ", ".join(
        f"{titles.get(key, key)} {_score(key, value)}" for key, value in row["scores"].items()
    )
    edited = " (corrected by hand)" if row.get("score_edited") else ""
    return (
        f"{row['rank']}. {row['model_name']} — {scores or 'no score'}{edited} "
        f"({row['run_id']}, by {row.get('submitted_by') or 'unknown'})"
    )


def _score(key: str, value: Any) -> str:
    if value is None:
        return "—"
    if key == "accuracy" and isinstance(value, int | float):
        return f"{value:.1%}"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _title(ask: Ask, benchmark_id: str) -> str:
    listed = ask.result("list_benchmarks") or {}
    known = [b for b in listed.get("benchmarks", []) if b["id"] == benchmark_id]
    return titled(known[0]) if known else benchmark_id


def _answer_or_next(shown: dict[str, Any], number: int, calls: int) -> Step:
    benchmark, questions = shown["benchmark"], shown.get("questions", [])
    count = int(benchmark.get("question_count", 0))
    if number == -1 and calls == 1 and count > 1:
        return [("show_benchmark", {"benchmark_id": benchmark["id"], "offset": count - 1})]
    name = titled(benchmark)
    if benchmark.get("format") == "custom":
        return f"{name} is a custom benchmark: its bundle's program scores tasks, not questions."
    if not questions:
        return f"{name} has {plural(count, 'question')}: there is no {_which(number)}."
    question = questions[0]
    said = f"{_which(number).capitalize()} of {name}: {render.short(question.get('prompt', ''))}"
    if "answer" not in question:
        # The service left the key out: only the owner and collaborators may see it.
        return (
            f"{said}\nI can't show you its answer: only the benchmark's owner and "
            "collaborators may see the answer key."
        )
    return f"{said}\nAnswer: {_answer(question)}"


def _answer(question: dict[str, Any]) -> str:
    answer = question["answer"]
    shown = " | ".join(map(str, answer)) if isinstance(answer, list) else str(answer)
    choices = question.get("choices")
    if isinstance(choices, dict) and shown in choices:
        return f"{shown}) {choices[shown]}"
    return shown


def _which(number: int) -> str:
    return "the last question" if number == -1 else f"question {number}"


STEPS: dict[str, Callable[[Ask, Intent], Step]] = {
    "leaderboard": step_leaderboard,
    "answer_of": step_answer_of,
}
