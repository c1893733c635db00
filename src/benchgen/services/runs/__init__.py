"""Runs: launching, executing, the live log, results, rescoring and leaderboards."""
