"""Codabench v2 bundles, kept pure: parse and validate, unpack safely, run programs sandboxed."""
