"""The offline planner's replies, written by code from tool results so they are deterministic."""

from __future__ import annotations

import re
from typing import Any

from benchgen.core.text import plural

MAX_LISTED = 20
MAX_SHOWN = 5
MAX_PROMPT_CHARS = 120
TITLE_QUESTION = "What should the benchmark be called?"
QUESTIONS_QUESTION = "Which questions should the benchmark have?"
ONE_AT_A_TIME = "I do one request at a time, so ask me that once the benchmark is created."
EXAMPLE_QA = "Q: What is the capital of France?\nA: Paris"
EXAMPLE_MCQ = "1. Colour of the sky?\na) Green\nb) Blue\nAnswer: b"
# One entry a kind of request; "how do I …?" answers with the entries its verb names.
CAN_DO_ENTRIES = (
    "- list your benchmarks, models or runs: `list my benchmarks`, `which models can I use?`, "
    "`show my runs`",
    "- show a benchmark: `show benchmark Capitals` (or its id, bm_…), its leaderboard: "
    "`show the leaderboard of Capitals`, or one answer: `what is the answer to question 1 of "
    "Capitals?`",
    "- run a model on a benchmark: `run Baseline: seeded random on Capitals`, or on part of it: "
    "`run … on the first 20 questions of Capitals`, `… on a random 50 of Capitals`, "
    "`… on the questions tagged geo of Capitals`",
    "- check a run: `is it done?`, `how did my last run do?`, `results of run_…`, "
    "`why was question 5 wrong in run_…?`",
    "- compare runs: `compare my last two runs`, `is run_… better than run_…?`",
    "- publish a benchmark: `publish Capitals`",
    "- fine-tune a model on one of your datasets: `fine-tune SmolLM2 on Support replies`, "
    "`train … on … for 3 epochs with learning rate 1e-4 on a GPU`; `is the training done?`, "
    "`list my datasets`, `which models can I train?`",
    "- change a benchmark: `rename Capitals to World capitals`, `change the description of "
    "Capitals to …`, `remove question 3 from Capitals`, `change the answer of question 3 of "
    "Capitals to Paris`, `add these questions to Capitals:` or `replace the questions of "
    "Capitals with:` followed by questions",
    "- create a qa or mcq benchmark from questions in your message: `Create a benchmark called "
    f'"Capitals":` followed by lines like\n{EXAMPLE_QA}\n  or\n{EXAMPLE_MCQ}\n  or '
    "`France: Paris`, `France -> Paris`, `France | Paris` lines",
    "- `continue` goes on after a turn stopped at its time limit, or with a benchmark written "
    "part by part; it never approves and never starts over",
)
CAN_DO = "\n".join(CAN_DO_ENTRIES)
_ACTIONS = {
    "list_benchmarks": "list the benchmarks",
    "show_benchmark": "show that benchmark",
    "list_models": "list the models",
    "list_runs": "list your runs",
    "run_status": "look up the run",
    "run_results": "read the run's results",
    "propose_create_benchmark": "prepare the new benchmark",
    "propose_publish": "prepare publishing that benchmark",
    "propose_edit_benchmark": "prepare that change",
    "compare_runs": "compare those runs",
    "explain_result": "explain that result",
    "propose_run": "prepare that run",
    "list_datasets": "list your datasets",
    "list_training_bases": "list the models that can be trained",
    "list_compute": "look up the compute for training",
    "list_training_jobs": "list your training jobs",
    "training_status": "look up the training job",
    "propose_training": "prepare that training job",
    "ask_user": "ask you",
    "my_account": "look up your account",
    "show_leaderboard": "read the leaderboard",
}


def help_text() -> str:
    """What the offline assistant understands, with an example of each request."""
    return f"I am BenchGen's offline assistant. I understand these requests:\n{CAN_DO}"


def not_understood(text: str) -> str:
    """A request none of the forms matched: say so, and what can be asked."""
    quoted = " ".join(text.split())[:200]
    return f'I did not understand "{quoted}". Here is what I can do:\n{CAN_DO}'


def nothing_to_continue(last_reply: str) -> str:
    """`continue` after a request that was answered: nothing is left to go on with."""
    lines = [line for line in last_reply.splitlines() if line.strip()]
    said = lines[0].strip()[:MAX_PROMPT_CHARS] if lines else ""
    return (
        "There is nothing to continue: your last request was answered (approved, declined or "
        f'replied to), and nothing of it is left to do. Last I said: "{said}" '
        "Tell me what to do next, or `help` for what I can do."
    )


def error(tool: str, result: dict[str, Any]) -> str:
    """A tool's refusal or failure, said plainly."""
    message = str(result["error"].get("message", "it failed"))
    readable = re.sub(
        r"\bquestions\.(\d+)\.(\w+)",
        lambda m: f"question {int(m.group(1)) + 1} ({m.group(2)})",
        message,
    )
    # Services count positions from 0; people count questions from 1.
    readable = re.sub(
        r"\bat position (\d+)", lambda m: f"for question {int(m.group(1)) + 1}", readable
    )
    return f"I could not {doing(tool)}: {readable}"


def doing(tool: str) -> str:
    """What calling `tool` does, in words that follow "I could not"."""
    return _ACTIONS.get(tool, tool)


def benchmarks(result: dict[str, Any], mine: bool) -> str:
    """The benchmarks, one line each with their ids."""
    found = result.get("benchmarks", [])
    if not found:
        none = "You have no benchmarks yet." if mine else "There are no benchmarks you can see yet."
        return f"{none} To make one, write its questions in a message, e.g.\n{EXAMPLE_QA}"
    head = "Your benchmarks" if mine else "Benchmarks you can see"
    return _listing(head, [benchmark_line(b) for b in found])


def benchmark_line(item: dict[str, Any]) -> str:
    """One benchmark in a list."""
    told = [item.get("format", "?"), *_counted(item), item.get("visibility", "?")]
    return f"{item['title']} ({item['id']}): {', '.join(told)}"


def _counted(item: dict[str, Any]) -> list[str]:
    """Its number of questions, or none for a custom benchmark: its bundle's program scores
    tasks, and "0 questions" would read as empty."""
    if item.get("format") == "custom":
        return []
    return [plural(item.get("question_count", 0), "question")]


def models(result: dict[str, Any]) -> str:
    """The models the user can run, with their ids and prices."""
    found = result.get("models", [])
    if not found:
        return "There are no models you can run yet."
    return _listing("Models you can run", [_model_line(m) for m in found])


def _model_line(model: dict[str, Any]) -> str:
    per_question, per_tokens = (
        model.get("price_per_question", 0),
        model.get("price_per_1k_tokens", 0),
    )
    price = "free" if not per_question and not per_tokens else _price(per_question, per_tokens)
    status = "" if model.get("status") in (None, "available") else f", {model['status']}"
    formats = model.get("formats")
    # Most models answer every format; name the limit only for those (baselines) that do not.
    only = f", {' or '.join(formats)} only" if formats and len(formats) == 1 else ""
    return f"{model['name']} ({model['id']}): {model.get('kind', '?')}, {price}{only}{status}"


def _price(per_question: int, per_tokens: int) -> str:
    parts = [f"{per_question} credits per question"] if per_question else []
    parts += [f"{per_tokens} credits per 1k tokens"] if per_tokens else []
    return " + ".join(parts)


def runs(result: dict[str, Any]) -> str:
    """The user's runs, newest first."""
    found = result.get("runs", [])
    if not found:
        return "You have no runs yet. Ask me to run a model on a benchmark."
    return _listing("Your runs, newest first", [_run_line(run) for run in found])


def _run_line(run: dict[str, Any]) -> str:
    done = f"{run.get('done_count', 0)}/{run.get('question_count', 0)} done"
    return (
        f"{run['id']}: {run.get('model_name', run.get('model_id'))} on {run['benchmark_id']} — "
        f"{run['status']}, {done}{_accuracy_words(run)}"
    )


def benchmark(result: dict[str, Any]) -> str:
    """One benchmark with its first questions (and their answers when the user may see them)."""
    shown, questions = result["benchmark"], result.get("questions", [])
    frozen = ["questions frozen"] if shown.get("questions_frozen") else []
    told = [shown["format"], shown["visibility"], *_counted(shown), *frozen]
    lines = [f"{shown['title']} ({shown['id']}): {', '.join(told)}."]
    if shown.get("description"):
        lines.append(str(shown["description"]))
    lines += [_question_line(q) for q in questions[:MAX_SHOWN]]
    if shown["question_count"] > min(len(questions), MAX_SHOWN):
        lines.append(f"… and {shown['question_count'] - min(len(questions), MAX_SHOWN)} more.")
    return "\n".join(lines)


def _question_line(question: dict[str, Any]) -> str:
    line = f"{question.get('position', 0) + 1}. {short(question.get('prompt', ''))}"
    choices = question.get("choices")
    if isinstance(choices, dict) and choices:
        line += " " + " ".join(f"{label}) {text}" for label, text in choices.items())
    if "answer" in question:
        answer = question["answer"]
        shown = " | ".join(answer) if isinstance(answer, list) else str(answer)
        line += f" — answer: {shown}"
    return line


def status(result: dict[str, Any]) -> str:
    """Whether a run is done, its progress, scores and cost."""
    run = result.get("run")
    if not run:
        return "You have no runs yet. Ask me to run a model on a benchmark."
    head = (
        f"Run {run['id']} ({run.get('model_name', run.get('model_id'))} on {run['benchmark_id']})"
    )
    progress = f"{run.get('done_count', 0)}/{run.get('question_count', 0)} questions answered"
    errors = run.get("error_count", 0)
    progress += f", {plural(errors, 'error')}" if errors else ""
    return "\n".join([f"{head}: {_state(run)}", f"Progress: {progress}.", *_outcome(run)])


def _state(run: dict[str, Any]) -> str:
    state = str(run["status"])
    if state == "queued":
        return "queued — not done yet; it has not started."
    if state == "running":
        return "running — not done yet."
    if state == "failed":
        return f"failed. {run.get('error') or ''}".strip()
    return f"{state}."


def _outcome(run: dict[str, Any]) -> list[str]:
    lines = []
    summary = run.get("summary") or {}
    if summary.get("accuracy") is not None:
        lines.append(f"Accuracy: {_accuracy(summary)}.")
    extra = {k: v for k, v in (run.get("scores") or {}).items() if k != "accuracy"}
    if extra:
        lines.append("Scores: " + ", ".join(f"{k} {_number(v)}" for k, v in extra.items()))
    if run.get("cost") is not None:
        lines.append(f"Cost: {plural(run['cost'], 'credit')}.")
    else:
        lines.append(f"Cost: up to {plural(run.get('estimated_cost', 0), 'credit')} (estimate).")
    return lines


def _accuracy_words(run: dict[str, Any]) -> str:
    summary = run.get("summary") or {}
    words = "" if summary.get("accuracy") is None else f", accuracy {_accuracy(summary)}"
    # The leaderboard shows the owner's correction: say why its figure differs from this one.
    official = (run.get("scores") or {}).get("accuracy")
    if run.get("score_edited") and isinstance(official, int | float):
        words += f"; its official score was corrected by hand to {official:.0%}"
    return words


def _accuracy(summary: dict[str, Any]) -> str:
    words = (
        f"{summary['accuracy']:.0%} ({summary.get('correct', 0)} of {summary.get('n', 0)} correct"
    )
    if summary.get("ci_low") is not None and summary.get("ci_high") is not None:
        words += f"; 95% interval {summary['ci_low']:.0%}–{summary['ci_high']:.0%}"
    return words + ")"


def results(result: dict[str, Any]) -> str:
    """A page of a run's per-question results."""
    rows = result.get("results", [])
    head = status({"run": result["run"]})
    if not rows:
        return f"{head}\nNo answers are recorded yet."
    return f"{head}\n\nAnswers:\n" + "\n".join(_result_line(row) for row in rows)


def _result_line(row: dict[str, Any]) -> str:
    answer = row.get("extracted") or row.get("raw") or row.get("error") or "(no answer)"
    line = f"{row.get('position', 0) + 1}. {short(row.get('prompt') or '')} → {short(answer)}"
    if row.get("outcome"):
        expected = row.get("expected")
        shown = " | ".join(expected) if isinstance(expected, list) else expected
        line += f" ({row['outcome']}; expected {shown})"
    return line


def _listing(head: str, lines: list[str]) -> str:
    shown = lines[:MAX_LISTED]
    more = f"\n… and {len(lines) - MAX_LISTED} more." if len(lines) > MAX_LISTED else ""
    return f"{head}:\n" + "\n".join(f"- {line}" for line in shown) + more


def short(text: Any) -> str:
    """`text` on one line, cut to MAX_PROMPT_CHARS."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= MAX_PROMPT_CHARS else flat[: MAX_PROMPT_CHARS - 1] + "…"


def _number(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)
