"""Plain-text previews of agent proposals, rendered from validated arguments, never model text."""

from __future__ import annotations

import json
from typing import Any

from benchgen.core.text import plural
from benchgen.services.benchmarks.lifecycle import ChangePreview


def quote(text: str) -> str:
    """`text` as one quoted, escaped line.

    Prompts, choices, answers and titles come from the language model or from data it read, so
    a value with line breaks could otherwise draw a fake "Answer:" line or a fake question
    into the preview the user approves. Quoted, each value stays visibly one value, and every
    character that prints as nothing (a zero-width space, a direction mark, a line separator)
    is shown by its code: "Pa\\u200bris" is not the answer "Paris", and must not look like it.
    """
    return visible(json.dumps(text, ensure_ascii=False))


def visible(text: str) -> str:
    """`text` with every character that prints as nothing, but a line break or a tab, shown by
    its code: in a diff of a scoring program, direction controls would show the code otherwise
    than it runs ("Trojan Source")."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() or char in "\n\t" else _code(char) for char in text)


def _code(char: str) -> str:
    """A character as an escape: \\u200b, or \\U000e0041 beyond the basic plane."""
    point = ord(char)
    return f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"


def question_lines(number: int, question: dict[str, Any], indent: str = "") -> list[str]:
    """One question as `Canonical.as_dict()` gives it: the prompt, lettered choices, the key,
    tags and metadata."""
    lines = [f"{indent}{number}. {quote(question['prompt'])}"]
    choices: dict[str, str] = question.get("choices") or {}
    lines += [f"{indent}   {label}) {quote(text)}" for label, text in choices.items()]
    answer = question["answer"]
    if isinstance(answer, str):
        # An mcq key is a validated choice label, never free text.
        lines.append(f"{indent}   Answer: {answer}")
    else:
        label = "Answer" if len(answer) == 1 else "Accepted answers"
        lines.append(f"{indent}   {label}: {' | '.join(quote(text) for text in answer)}")
    if question.get("tags"):
        lines.append(f"{indent}   Tags: {', '.join(quote(tag) for tag in question['tags'])}")
    if question.get("metadata"):
        # Stored with the question and shown to the model by later tools: approved as seen.
        metadata = json.dumps(question["metadata"], ensure_ascii=False, sort_keys=True)
        lines.append(f"{indent}   Metadata: {visible(metadata)}")
    return lines


def create_text(
    arguments: dict[str, Any], shown: list[dict[str, Any]], warnings: list[dict[str, Any]]
) -> str:
    """The preview of a new benchmark: title, format, question count, every question and key."""
    count = len(shown)
    lines = [
        f"Create a private {arguments['format']} benchmark {quote(arguments['title'])} "
        f"with {plural(count, 'question')}."
    ]
    if arguments["description"]:
        lines.append(f"Description: {quote(arguments['description'])}")
    for number, question in enumerate(shown, start=1):
        lines += question_lines(number, question)
    lines += [_warning(warning) for warning in warnings]
    return "\n".join(lines)


def edit_text(title: str, diff: ChangePreview) -> str:
    """The preview of a change: each changed field and question, before and after."""
    lines = [f"Change benchmark {quote(title)} ({diff.benchmark_id}):"]
    for name, values in diff.metadata.items():
        lines.append(f"{name.capitalize()}: {quote(values['before'])} → {quote(values['after'])}")
    if diff.questions is not None:
        lines += _question_diff_lines(diff.questions)
        lines.append(
            f"{diff.questions['count_after']} questions after the change; "
            f"version {diff.version_before} → {diff.version_after}."
        )
    lines += [_warning(warning) for warning in diff.warnings]
    return "\n".join(lines)


def _question_diff_lines(questions: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for item in questions["changed"]:
        number = item["position"] + 1
        lines.append(f"Question {number} changes from:")
        lines += question_lines(number, item["before"], "  ")
        lines.append("  to:")
        lines += question_lines(number, item["after"], "  ")
    for item in questions["removed"]:
        lines.append(f"Question {item['position'] + 1} is removed:")
        lines += question_lines(item["position"] + 1, item["question"], "  ")
    for item in questions["added"]:
        lines.append(f"Question {item['position'] + 1} is added:")
        lines += question_lines(item["position"] + 1, item["question"], "  ")
    return lines


def publish_text(title: str, benchmark_id: str, question_count: int) -> str:
    """The preview of publishing: which benchmark, and that everyone will see it."""
    return (
        f"Publish benchmark {quote(title)} ({benchmark_id}, {question_count} questions). "
        "Publishing makes it visible to everyone: every user can see its questions and run "
        "models on it. The answer key stays visible only to you and your collaborators."
    )


def publish_custom_text(title: str, benchmark_id: str, bundle_version: int) -> str:
    """The preview of publishing a custom benchmark, whose tasks are in its bundle."""
    return (
        f"Publish custom benchmark {quote(title)} ({benchmark_id}, bundle version "
        f"{bundle_version}). Publishing makes it visible to everyone: every user can see it and "
        "run models on it. Its reference data stays visible only to you and your collaborators."
    )


def run_text(preview: dict[str, Any]) -> str:
    """The preview of a run: the benchmark, the model (and whose pick it was), the credits, and
    the settings and subset when they differ from the defaults."""
    text = (
        f"Run model {quote(preview['model_name'])} ({preview['model_id']}) on benchmark "
        f"{quote(preview['benchmark_title'])} ({preview['benchmark_id']}): "
        f"{preview['question_count']} questions, estimated at up to "
        f"{preview['estimated_credits']} credits ({preview['basis']})."
    )
    if preview.get("settings"):
        text += f" Settings: {preview['settings']}."
    if preview.get("partial"):
        text += " Only part of the benchmark: a partial run never goes on a leaderboard."
    if preview["phase_id"]:
        text += f" Phase: {preview['phase_id']}."
    if preview["agent_pick"]:
        text += " The agent picked this model: your message left the choice open."
    return text


def _warning(warning: dict[str, Any]) -> str:
    """A validation warning (a duplicate prompt, say) as a note under the preview."""
    where = ".".join(str(part) for part in warning["loc"])
    return f"Note: {where}: {warning['msg']}"


def bundle_text(preview: dict[str, Any]) -> str:
    """The preview of a bundle change: the benchmark, the exact bytes' hash, the diff, and the
    solutions' results with the changed bundle."""
    lines = [
        f"Upload the scratch copy of {quote(preview['title'])} ({preview['benchmark_id']}) as "
        f"bundle version {preview['base_version'] + 1} (sha256 {preview['sha256'][:16]}…).",
    ]
    if preview["binary_changes"]:
        shown = ", ".join(preview["binary_changes"])
        lines.append(f"Files changed, not shown (binary, or too long to diff): {shown}")
    for solution in preview["solutions"]:
        state = "passes" if solution["ok"] else f"FAILS: {solution['error']}"
        lines.append(f"Solution {solution['index']} {state} {solution['scores']}")
    lines.append("Diff:")
    lines.append(preview["diff"] or "(no text changes)")
    # File names and the solutions' errors are a program's or the model's words, as the diff is.
    return visible("\n".join(lines))
