"""The offline planner's steps for the everyday requests: list, show, is it done, results,
publish, and the A13 refusal. Every step is a pure function of the request and results."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from benchgen.agent.brains.offline import render
from benchgen.agent.brains.offline.ask import Ask, Call, Step
from benchgen.agent.brains.offline.labels import MAX_OPTIONS, no_single, titled
from benchgen.agent.brains.offline.naming import TITLE_KEYS, find, find_id, mentioned
from benchgen.agent.brains.offline.parse import Intent
from benchgen.agent.never import refusal
from benchgen.core.permissions import Action

# "show my runs on Capitals": the benchmark the runs are on, named after them.
_RUNS_ON = re.compile(r"\bruns?\b.*?\s(?:on|of|for|in)\s+(?P<bm>.+?)[\s.!?]*$", re.I)
# Where the web page for an A13 action lives: the kind of id its link is built from.
_TARGETS = {
    Action.RUN_EDIT_SCORE: "run",
    Action.LEADERBOARD_MANAGE: "run",
    Action.MODEL_DELETE: "mdl",
    Action.DATASET_DELETE: "ds",
    Action.TRAINING_DELETE: "tr",
    Action.BILLING_MANAGE: "",
    Action.TOKENS_MANAGE: "",
    Action.NOTIFICATIONS_MANAGE: "",
}


def step_list(ask: Ask, intent: Intent) -> Step:
    """List benchmarks, models or runs: each list asked for, all called in one step."""
    tools = (intent.kind, *intent.also)
    missing: list[Call] = []
    for tool in tools:
        if ask.result(tool) is None:
            args = _list_args(ask, intent, tool)
            if not isinstance(args, dict):
                return args
            missing.append((tool, args))
    if missing:
        return missing
    return "\n\n".join(_listed(ask.result(tool), tool, intent.mine) for tool in tools)


def _list_args(ask: Ask, intent: Intent, tool: str) -> dict[str, Any] | Step:
    if tool == "list_benchmarks":
        return {"mine_only": intent.mine}
    return runs_filter(ask) if tool == "list_runs" else {}


def _listed(got: Any, tool: str, mine: bool) -> str:
    if tool == "list_benchmarks":
        return render.benchmarks(got, mine)
    return render.models(got) if tool == "list_models" else render.runs(got)


def runs_filter(ask: Ask) -> dict[str, Any] | Step:
    """The `list_runs` arguments for the runs a request means: those on the benchmark it names
    (by id, or by title after "runs on"), else all; or the step that finds that benchmark."""
    benchmark_id = find_id(ask.text, "bm")
    if benchmark_id is not None:
        return {"benchmark_id": benchmark_id}
    on = _RUNS_ON.search(ask.text)
    if on is None:
        return {}
    listed = ask.result("list_benchmarks")
    if listed is None:
        return [("list_benchmarks", {"mine_only": False})]
    found = find(on.group("bm"), listed["benchmarks"], TITLE_KEYS)
    if len(found) == 1:
        return {"benchmark_id": found[0]["id"]}
    names = ", ".join(titled(b) for b in (found or listed["benchmarks"])[:MAX_OPTIONS])
    known = f" Benchmarks you can see: {names}." if names else ""
    return f'I found no single benchmark called "{on.group("bm")}".{known}'


def step_show(ask: Ask, intent: Intent) -> Step:
    """Show one benchmark, named by id or title; offer the candidates when it is unclear."""
    shown = ask.result("show_benchmark")
    if shown is not None:
        return render.benchmark(shown)
    benchmark_id = find_id(ask.text, "bm")
    if benchmark_id is None:
        listed = ask.result("list_benchmarks")
        if listed is None:
            return [("list_benchmarks", {"mine_only": False})]
        found = find(intent.phrase, listed["benchmarks"], TITLE_KEYS)
        if len(found) != 1:
            return _offer_benchmarks(intent.phrase, found or listed["benchmarks"], "show", "Show")
        benchmark_id = found[0]["id"]
    return [("show_benchmark", {"benchmark_id": benchmark_id, "limit": render.MAX_SHOWN})]


def step_status(ask: Ask, intent: Intent) -> Step:
    """Whether a run is done and how it did: the one named, else the latest."""
    got = ask.result("run_status")
    if got is not None:
        return render.status(got)
    run_id = find_id(ask.text, "run")
    return [("run_status", {"run_id": run_id} if run_id else {})]


def step_results(ask: Ask, intent: Intent) -> Step:
    """A run's per-question results: the one named, else the latest."""
    got = ask.result("run_results")
    if got is not None:
        return render.results(got)
    run_id = find_id(ask.text, "run")
    if run_id is None:
        latest = ask.result("run_status")
        if latest is None:
            return [("run_status", {})]
        if not latest.get("run"):
            return render.status(latest)
        run_id = latest["run"]["id"]
    return [("run_results", {"run_id": run_id, "limit": 20})]


def step_publish(ask: Ask, intent: Intent) -> Step:
    """Propose publishing the user's benchmark; offer their unpublished ones when unclear."""
    benchmark_id = find_id(ask.text, "bm")
    if benchmark_id is None:
        listed = ask.result("list_benchmarks")
        if listed is None:
            return [("list_benchmarks", {"mine_only": True})]
        found = find(intent.phrase, listed["benchmarks"], TITLE_KEYS)
        if len(found) != 1:
            pool = found or listed["benchmarks"]
            unpublished = [b for b in pool if b.get("visibility") != "published"]
            if not unpublished:
                return _nothing_to_publish(listed["benchmarks"])
            return _offer_benchmarks(intent.phrase, unpublished, "publish", "Publish")
        benchmark_id = found[0]["id"]
    return [("propose_publish", {"benchmark_id": benchmark_id})]


def _nothing_to_publish(mine: list[dict[str, Any]]) -> str:
    if not mine:
        return "You have no benchmarks to publish yet."
    return "All your benchmarks are already published; there is nothing to publish."


def _offer_benchmarks(phrase: str, pool: list[dict[str, Any]], verb: str, label: str) -> Step:
    if not pool:
        return render.benchmarks({"benchmarks": []}, mine=verb == "publish")
    lead = no_single(phrase, pool)
    options = [f"{label} {titled(b)}" for b in pool[:MAX_OPTIONS]]
    return [
        ("ask_user", {"question": f"{lead}Which benchmark should I {verb}?", "options": options})
    ]


def step_never(ask: Ask, intent: Intent) -> Step:
    """A13: refuse, with the page where the user can do it, naming the object when known."""
    assert intent.action is not None
    kind = _TARGETS.get(intent.action, "bm")
    object_id = find_id(ask.text, kind) if kind else None
    if object_id is None and kind == "bm":
        listed = ask.result("list_benchmarks")
        if listed is None:
            # The benchmark one joins is someone else's: published, or one the user is invited to.
            mine_only = intent.action is not Action.BENCHMARK_JOIN
            return [("list_benchmarks", {"mine_only": mine_only})]
        named = mentioned(ask.text, listed.get("benchmarks", []), ("title",))
        object_id = named[0]["id"] if len(named) == 1 else None
    return refusal(ask.settings, intent.action, object_id or "")


STEPS: dict[str, Callable[[Ask, Intent], Step]] = {
    "list_benchmarks": step_list,
    "list_models": step_list,
    "list_runs": step_list,
    "show": step_show,
    "results": step_results,
    "publish": step_publish,
    "never": step_never,
}
