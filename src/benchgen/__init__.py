"""BenchGen: build AI benchmarks, run models on them, rank the results."""

__version__ = "0.1.0"
