"""Unit tests: pure functions and data, no server, no process (fast)."""
