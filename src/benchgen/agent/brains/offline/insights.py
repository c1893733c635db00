"""The offline planner's read-only insight requests: compare two runs ("compare my last two
runs", "is run_B better than run_A?") and explain one question's result ("why was question 5
wrong?"), with replies written from the tools' results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchgen.agent.brains.offline import render
from benchgen.agent.brains.offline.ask import Ask, Step
from benchgen.agent.brains.offline.naming import find_id
from benchgen.agent.brains.offline.parse import Intent
from benchgen.agent.brains.offline.steps import runs_filter
from benchgen.core.text import plural

# The statuses the comparison accepts (services/runs/compare.py COMPARABLE).
FINISHED = ("completed", "cancelled")
SIGNIFICANCE = 0.05
MAX_CHANGED_SHOWN = 5


def step_compare(ask: Ask, intent: Intent) -> Step:
    """Compare the two runs named, else the user's most recent finished run (B) with the one
    before it on the same benchmark (A, the reference)."""
    got = ask.result("compare_runs")
    if got is not None:
        return comparison(got)
    assert intent.form is not None
    named = list(intent.form.runs)
    if len(named) >= 2:
        return [("compare_runs", {"run_a": named[0], "run_b": named[1]})]
    listed = ask.result("list_runs")
    if listed is None:
        wanted = runs_filter(ask)
        return [("list_runs", wanted)] if isinstance(wanted, dict) else wanted
    runs = listed.get("runs", [])
    finished = [run for run in runs if run["status"] in FINISHED and run["id"] not in named]
    if named:
        return _with_latest(named[0], runs, finished)
    if len(finished) < 2:
        have = plural(len(finished), "finished run")
        return f"To compare runs I need two finished runs, and you have {have} here."
    # Runs compare only on one benchmark: the newest run and the newest before it of its own.
    newer = finished[0]
    same = [run for run in finished[1:] if run["benchmark_id"] == newer["benchmark_id"]]
    if not same:
        return (
            f"Your latest finished run, {newer['id']}, is the only finished one on "
            f"{newer['benchmark_id']}: runs compare only on one benchmark. Name two runs."
        )
    return [("compare_runs", {"run_a": same[0]["id"], "run_b": newer["id"]})]


def _with_latest(run_id: str, runs: list[dict[str, Any]], finished: list[dict[str, Any]]) -> Step:
    """One run named: compare it (as B) with the latest other finished run of its benchmark."""
    own = next((run for run in runs if run["id"] == run_id), None)
    same = [r for r in finished if own is None or r["benchmark_id"] == own["benchmark_id"]]
    if not same:
        return f"I found no other finished run of the same benchmark to compare {run_id} with."
    return [("compare_runs", {"run_a": same[0]["id"], "run_b": run_id})]


def comparison(result: dict[str, Any]) -> str:
    """Run B against run A: accuracies, the difference with its interval, the McNemar p-value
    in plain words, the paired counts and (for the benchmark's team) what changed."""
    c = result["comparison"]
    a, b = c["run_a"], c["run_b"]
    lines = [
        f"Run {b} ({c['model_b']}) compared with run {a} ({c['model_a']}) on {c['benchmark_id']},"
        f" over the {plural(c['n'], 'question')} both answered:",
        f"- Accuracy: {c['accuracy_a']:.1%} for {a}, {c['accuracy_b']:.1%} for {b}.",
        f"- Difference ({b} − {a}): {_points(c['difference'])}; "
        f"{c['confidence']:.0%} interval {_points(c['ci_low'])} to {_points(c['ci_high'])}.",
        f"- Exact McNemar test: p = {c['p_value']:.3g}. {_verdict(c)}",
        f"- Both right: {c['both_right']}, both wrong: {c['both_wrong']}, only {a} right: "
        f"{c['only_a']}, only {b} right: {c['only_b']}.",
    ]
    unpaired = c.get("unpaired_a", 0) + c.get("unpaired_b", 0)
    if unpaired:
        lines.append(
            f"- {plural(unpaired, 'question')} answered in only one of the runs "
            "are left out of every figure."
        )
    lines += _changed(c)
    return "\n".join(lines)


def _verdict(c: dict[str, Any]) -> str:
    if c["only_a"] + c["only_b"] == 0:
        return "The two runs got exactly the same questions right: there is no difference."
    if c["p_value"] < SIGNIFICANCE:
        better = c["run_b"] if c["difference"] > 0 else c["run_a"]
        return (
            f"The difference is significant at the 0.05 level: {better} is better on this "
            "benchmark, beyond what chance would explain."
        )
    return (
        "The difference is not significant at the 0.05 level: it may well be noise, so these "
        "runs do not show that either is better."
    )


def _points(value: float) -> str:
    return f"{value * 100:+.1f} points".replace("-", "−")


def _changed(c: dict[str, Any]) -> list[str]:
    items = c.get("changed_items")
    if not items:
        return []
    who = {"only_a": c["run_a"], "only_b": c["run_b"]}
    lines = [
        f"  - question {item['position'] + 1} ({render.short(item['prompt'])}): right only in "
        f"{who[item['category']]}"
        for item in items[:MAX_CHANGED_SHOWN]
    ]
    total = c.get("changed_items_total", len(items))
    more = f" (the first {MAX_CHANGED_SHOWN} of {total})" if total > MAX_CHANGED_SHOWN else ""
    return [f"- Questions that changed{more}:", *lines]


def step_explain(ask: Ask, intent: Intent) -> Step:
    """One question's result in the run named, else in the latest run; questions are counted
    from 1 in words and from 0 by the tool."""
    got = ask.result("explain_result")
    if got is not None:
        return explanation(got)
    assert intent.form is not None
    number = intent.form.numbers[0]
    if number < 1:
        return "Questions are counted from 1: question 1 is the first one."
    run_id = find_id(ask.text, "run")
    if run_id is None:
        latest = ask.result("run_status")
        if latest is None:
            return [("run_status", {})]
        if not latest.get("run"):
            return render.status(latest)
        run_id = latest["run"]["id"]
    return [("explain_result", {"run_id": run_id, "position": number - 1})]


def explanation(result: dict[str, Any]) -> str:
    """What the model was asked and replied, and for the benchmark's team the extracted
    answer, the verdict, the expected answer and the judge's reasoning."""
    r = result["result"]
    lines = [f"Question {r['position'] + 1} of run {r['run_id']}: {_quoted(r.get('prompt'))}"]
    choices = _choices(r.get("choices"))
    if choices:
        lines.append("Choices: " + " ".join(f"{label}) {text}" for label, text in choices))
    if r.get("error"):
        lines.append(f"Asking the model failed: {render.short(r['error'])}")
    else:
        lines.append(f"The model replied: {_quoted(r.get('reply'))}")
    if not r.get("detail_visible"):
        lines.append(
            "Only the benchmark's owner and collaborators can see the extracted answer, the "
            "verdict and the expected answer, so I cannot say how it was scored."
        )
        return "\n".join(lines)
    return "\n".join(lines + _verdict_lines(r, choices))


def _verdict_lines(r: dict[str, Any], choices: list[tuple[str, str]]) -> list[str]:
    extracted = r.get("extracted")
    lines = [
        f"Extracted answer: {_quoted(extracted)}"
        if extracted
        else "No answer could be extracted from the reply."
    ]
    lines.append(f"Verdict: {r.get('outcome') or 'not scored'}.")
    expected = r.get("expected")
    if expected is not None:
        lines.append(f"Expected answer: {_expected(expected, dict(choices))}.")
    if r.get("reasoning"):
        lines.append(f"Reasoning: {render.short(r['reasoning'])}")
    if r.get("outcome") == "wrong" and extracted and expected is not None:
        lines.append("It was scored wrong because the extracted answer is not an accepted one.")
    return lines


def _choices(choices: Any) -> list[tuple[str, str]]:
    if isinstance(choices, dict):
        return [(str(label), str(text)) for label, text in choices.items()]
    if isinstance(choices, list):
        return [(chr(ord("A") + i), str(text)) for i, text in enumerate(choices)]
    return []


def _expected(expected: Any, choices: dict[str, str]) -> str:
    accepted = expected if isinstance(expected, list) else [expected]
    shown = [f"{a} ({choices[a]})" if a in choices else str(a) for a in accepted]
    return " | ".join(shown)


def _quoted(text: Any) -> str:
    return f'"{render.short(text)}"' if text else "(none)"


STEPS: dict[str, Callable[[Ask, Intent], Step]] = {
    "compare": step_compare,
    "explain": step_explain,
}
