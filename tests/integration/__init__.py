"""Integration tests: a real Temporal dev server, real workers and the scripted
OpenAI-compatible HTTP server (tests/conftest.py)."""
