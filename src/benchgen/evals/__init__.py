"""Pure evaluation engines: model adapters, prompts, scorers, aggregates, the async run engine."""
