"""`benchgen benchmarks …`: the app that gathers the file and Codabench bundle commands."""

from __future__ import annotations

from benchgen.cli import benchmark_files, bundle_commands
from benchgen.cli.doors import WHERE
from benchgen.cli.helptext import App

app = App(
    help="Benchmarks as files: import questions from JSONL, CSV, Parquet or Hugging Face "
    "dataset files, export them for Inspect AI or lm-evaluation-harness; custom benchmarks made "
    "from Codabench v2 bundles: upload, new versions, download, submit." + WHERE,
    no_args_is_help=True,
)
app.command("import")(benchmark_files.import_file)
app.command("export")(benchmark_files.export)
app.command("upload")(bundle_commands.upload)
app.command("download-bundle")(bundle_commands.download_bundle)
app.command("submit")(bundle_commands.submit)


commands = App()
commands.add_typer(app, name="benchmarks")
