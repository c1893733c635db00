"""Storage: typed tables, the engine and sessions, and Alembic migrations."""
