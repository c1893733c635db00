"""Calls on datasets: upload training data (train scope), list and read your own."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Literal, cast

from benchgen.client.connection import PAGE, Connection, Source, file_part, segment
from benchgen.client.shapes import Dataset

DatasetFormat = Literal["auto", "chat", "prompt_completion", "csv", "parquet"]
# A large file takes the server a while to check row by row.
UPLOAD_TIMEOUT_S = 300.0


class DatasetCalls(Connection):
    """Datasets: training data only their owner can see."""

    def upload_dataset(
        self,
        source: Source,
        name: str,
        format: DatasetFormat = "auto",
        mapping: Mapping[str, str] | None = None,
        filename: str | None = None,
    ) -> Dataset:
        """Upload a dataset; nothing is stored unless every row is valid.

        Args:
            source: The file: a path, or its bytes.
            name: The dataset's name.
            format: `chat` (JSON lines of `{"messages": [{"role", "content"}, …]}`),
                `prompt_completion` (JSON lines of `{"prompt", "completion"}`), `csv`,
                `parquet`, or `auto` (by the name and first bytes, then the first row).
            mapping: Source field per part, e.g. `{"prompt": "question", "completion":
                "answer"}` or `{"messages": "conversation"}`.
            filename: The name to send (default: the path's name, or `data.jsonl`).

        Returns:
            The stored dataset with its row count, token estimate and preview.

        Raises:
            InvalidInput: The file or rows are wrong; each of `errors` has its `loc`
                `["file", line or row number, field, …]`.
            PermissionDenied: The token lacks the `train` scope.
            TooLarge: The file is over the server's dataset limit.
        """
        fields = {"name": name, "format": format, "mapping": json.dumps(dict(mapping or {}))}
        with file_part(source, filename, "data.jsonl", "application/octet-stream") as part:
            response = self._send(
                "POST", "/datasets", files={"file": part}, data=fields, timeout=UPLOAD_TIMEOUT_S
            )
        return cast(Dataset, self._object(response))

    def datasets(self) -> list[Dataset]:
        """Your datasets, newest first (every page).

        Returns:
            The datasets.
        """
        return cast(list[Dataset], list(self._pages("/datasets", {}, PAGE)))

    def get_dataset(self, dataset_id: str) -> Dataset:
        """One of your datasets.

        Args:
            dataset_id: Its id (`ds_…`).

        Returns:
            The dataset with a preview of its first rows.

        Raises:
            NotFound: It does not exist or is not yours.
        """
        return cast(Dataset, self._json("GET", f"/datasets/{segment(dataset_id)}"))
