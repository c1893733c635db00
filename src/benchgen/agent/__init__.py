"""The chat agent: one turn harness, thin tools over the services, and interchangeable brains."""
