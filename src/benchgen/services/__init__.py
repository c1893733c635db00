"""All rules live here: permissions, credits, freezing, rate limits, validation, audit."""
