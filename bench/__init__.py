"""Small measurements of the runtime, run by hand: `python -m bench.<name>`."""
