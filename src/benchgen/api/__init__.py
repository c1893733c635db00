"""The HTTP API under /api/v1: thin routes that authenticate, call one service, map errors."""
