"""Scoring methods for qa and mcq answers, their shared extraction helpers and the registry."""
