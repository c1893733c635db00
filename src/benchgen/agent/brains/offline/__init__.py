"""The offline planner: plain-English requests read into steps, with no language model."""
