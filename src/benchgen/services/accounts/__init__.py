"""Accounts: users, API tokens and turn credentials, credits, rate limits, leaked secrets."""
