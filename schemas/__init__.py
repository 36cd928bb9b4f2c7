"""Committed JSON Schemas of the released RunState snapshot versions."""
