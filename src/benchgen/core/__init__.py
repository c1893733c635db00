"""Foundations shared by every layer: settings, errors, ids, clock, permissions, context."""
