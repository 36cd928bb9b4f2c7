"""The worker CLI: `python worker.py [--dev] --agents MODULE` (see `durable_agents.worker`).

Installed, the same command is `durable-agents-worker`."""

from durable_agents.worker import main

if __name__ == "__main__":
    raise SystemExit(main())
