"""Calls on models: the platform's and your own endpoints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from benchgen.client.connection import PAGE, Connection, segment
from benchgen.client.shapes import Model


class ModelCalls(Connection):
    """List, read, register and change models."""

    def models(self, benchmark_id: str | None = None) -> list[Model]:
        """Models you may run: the platform's first, then your own (every page).

        Args:
            benchmark_id: Only the models that can answer this benchmark's questions.

        Returns:
            Every model with its prices, status and the formats it answers.
        """
        params = {"benchmark_id": benchmark_id} if benchmark_id else {}
        return cast(list[Model], list(self._pages("/models", params, PAGE)))

    def get_model(self, model_id: str) -> Model:
        """One model you may use.

        Args:
            model_id: Its id (`mdl_…`).

        Returns:
            The model.
        """
        return cast(Model, self._json("GET", f"/models/{segment(model_id)}"))

    def create_model(
        self,
        name: str,
        endpoint_model: str,
        base_url: str | None = None,
        kind: Literal["openai_compat", "anthropic"] = "openai_compat",
        api_key: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Model:
        """Register your own OpenAI-compatible or Anthropic endpoint (your key pays).

        Args:
            name: A name to show on leaderboards.
            endpoint_model: The model's name at the endpoint, e.g. `qwen2.5-7b-instruct`.
            base_url: The endpoint's base URL (`…/v1`); optional for `anthropic`.
            kind: `openai_compat` or `anthropic`.
            api_key: The endpoint's key; stored encrypted, never shown again.
            params: `max_tokens`, `timeout_s`, `seed`.

        Returns:
            The new model.

        Raises:
            InvalidInput: A refused address (private networks) or bad parameters.
        """
        body: dict[str, Any] = {"name": name, "kind": kind, "endpoint_model": endpoint_model}
        if base_url is not None:
            body["base_url"] = base_url
        if api_key is not None:
            body["api_key"] = api_key
        if params is not None:
            body["params"] = dict(params)
        return cast(Model, self._json("POST", "/models", json=body))

    def update_model(
        self,
        model_id: str,
        name: str | None = None,
        api_key: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Model:
        """Rename one of your models, rotate its key or change its parameters.

        Args:
            model_id: Its id.
            name: A new name.
            api_key: A new key.
            params: New parameters (replace the old ones).

        Returns:
            The changed model.
        """
        body: dict[str, Any] = {}
        if name is not None:
            body["name"] = name
        if api_key is not None:
            body["api_key"] = api_key
        if params is not None:
            body["params"] = dict(params)
        return cast(Model, self._json("PATCH", f"/models/{segment(model_id)}", json=body))
