"""Benchmarks: their lifecycle, questions, phases, members, imports, outbox, judges, scoring."""
