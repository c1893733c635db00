"""BenchGen: build AI benchmarks, run models on them, rank the results."""
