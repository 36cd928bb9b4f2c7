"""durable_agents.workflows."""

if (
    __name__ != "durable_agents.workflows"
):  # the repository's folder imported as a top-level package
    raise ImportError(
        f"import durable_agents.workflows, not {__name__}: everything installs under the "
        "durable_agents namespace (agents: `from durable_agents import Agent, tool`)"
    )
