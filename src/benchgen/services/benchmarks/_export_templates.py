"""The fixed files of exported task folders: Inspect AI's task.py, lm-eval's task.yaml, READMEs.

Security: these are code and YAML that someone will run. They hold no user text at all: every
placeholder is filled only with values the exporter checks against a fixed pattern (the task
name, made from the benchmark's id) or a fixed set ("qa"/"mcq"), and the benchmark's own text
lives in dataset.jsonl, which the templates read as data. No `!function`, and the Jinja in the
YAML names fixed fields only (`{{text}}`), so no prompt is ever evaluated as a template.
"""

from __future__ import annotations

# Filled with str.format: {name} (a checked identifier) and {fmt} ("qa" or "mcq").
INSPECT_TASK = '''\
"""Inspect AI task exported from BenchGen. Run it from this folder:

    inspect eval task.py --model openai/<model>

The questions are in dataset.jsonl next to this file (this file holds none of their text).
Multiple choice uses Inspect's multiple_choice() and choice(); free answers are scored as
BenchGen's exact match does: the last "ANSWER:" line (else the whole reply), compared after
case, punctuation, articles and whitespace are normalised.
"""

import re
import string
import unicodedata
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, json_dataset
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Score,
    Target,
    accuracy,
    choice,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState, generate, multiple_choice

DATASET = Path(__file__).parent / "dataset.jsonl"
FORMAT = "{fmt}"
FIELDS = FieldSpec(
    input="input",
    target="target",
    choices="choices",
    id="id",
    metadata=["tags", "metadata"],
)
_LABEL = re.compile(
    r"^[ \\t>#*_-]*(?:the[ \\t]+)?(?:final[ \\t]+)?answer[*_ \\t]*"
    r"(?::|[-\\u2013\\u2014][ \\t])(.*)$",
    re.IGNORECASE | re.MULTILINE,
)
_ARTICLES = {{"a", "an", "the"}}


def _final_answer(reply):
    found = _LABEL.findall(reply)
    return (found[-1] if found else reply).strip(" \\t\\r\\n*`")


def _normalise(text):
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(
        ch
        for ch in folded
        if ch not in string.punctuation and not unicodedata.category(ch).startswith("P")
    )
    words = unicodedata.normalize("NFKC", kept).split()
    return " ".join(word for word in words if word not in _ARTICLES)


@scorer(metrics=[accuracy(), stderr()])
def final_answer_match():
    async def score(state: TaskState, target: Target) -> Score:
        answer = _final_answer(state.output.completion)
        right = any(_normalise(answer) == _normalise(text) for text in target.target)
        return Score(value=CORRECT if right else INCORRECT, answer=answer)

    return score


@task
def {name}():
    dataset = json_dataset(str(DATASET), FIELDS)
    if FORMAT == "mcq":
        return Task(dataset=dataset, solver=multiple_choice(), scorer=choice())
    return Task(dataset=dataset, solver=generate(), scorer=final_answer_match())
'''

# Filled with str.format: {name} (a checked identifier) and, per format, the answer lines.
LM_EVAL_TASK = """\
# lm-evaluation-harness task exported from BenchGen. Run it from this folder:
#   lm_eval --include_path . --tasks {name} --model local-chat-completions \\
#     --model_args base_url=<url>/chat/completions,model=<model> --apply_chat_template
# The questions are in dataset.jsonl next to this file (this file holds none of their text).
task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: dataset.jsonl
test_split: test
output_type: generate_until
doc_to_text: "{{{{text}}}}"
{answer}generation_kwargs:
  until: []
  max_gen_toks: 512
  do_sample: false
filter_list:
  - name: final_answer
    filter:
      - function: regex
        regex_pattern: "{pattern}"
        group_select: -1
      - function: take_first
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    ignore_case: true
    ignore_punctuation: {ignore_punctuation}
metadata:
  version: 1.0
"""
LM_EVAL_MCQ = "doc_to_target: answer_index\ndoc_to_choice: labels\n"
LM_EVAL_QA = "doc_to_target: answers\n"
LM_EVAL_MCQ_PATTERN = "ANSWER:\\\\s*\\\\(?([A-Z])\\\\b"
LM_EVAL_QA_PATTERN = "(?im)^[ \\\\t>#*_-]*answer[*_ \\\\t]*:[ \\\\t]*(.*?)[ \\\\t*`]*$"

INSPECT_README = """\
# Inspect AI task exported from BenchGen

Files: `task.py` (a fixed task definition) and `dataset.jsonl` (the questions with their
answers: keep it private like the benchmark's key).

    pip install inspect-ai openai
    cd this-folder
    inspect eval task.py --model openai/<model>

Fields of each line of dataset.jsonl: `id`, `input` (what Inspect sends: the question, and for
free answers BenchGen's instruction to end with an `ANSWER:` line), `target`, `choices`,
`tags`, `metadata`, plus `prompt` (the question alone) and `text` (BenchGen's whole prompt).
"""

LM_EVAL_README = """\
# lm-evaluation-harness task exported from BenchGen

Files: `task.yaml` (a fixed task definition) and `dataset.jsonl` (the questions with their
answers: keep it private like the benchmark's key).

    pip install lm-eval
    cd this-folder
    lm_eval --include_path . --tasks <task name in task.yaml> \\
      --model local-chat-completions --apply_chat_template \\
      --model_args base_url=<url>/chat/completions,model=<model>

Run it from this folder: `data_files` names dataset.jsonl relative to where lm_eval runs.
Each item is asked with BenchGen's prompt (`text`) and generation; the answer is the final
`ANSWER:` line, compared with the key by exact match.
"""
