"""Agents that hand runs over to each other (tests/integration/test_handoffs.py, the
recorded history `handoff`) and call each other as tools
(tests/integration/test_agent_tools.py)."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel

from durable_agents import Agent, ModelSettings, handoff, tool  # the public face
from tests.support.agents import custodian

REFUNDS: list[dict] = []


@tool(needs_approval=True)
def refund(order: str, amount: float) -> str:
    """Refund an order (needs a person's approval)."""
    REFUNDS.append({"order": order, "amount": amount})
    return f"refunded {amount} on {order}"


class Reason(BaseModel):
    reason: str


billing = Agent(
    name="billing",
    instructions="You handle refunds.",
    model="billing-model",
    tools=[refund],
    handoff_description="Refunds and invoices.",
    turns_per_workflow_run=1,  # continues as new after each of its turns
)
triage = Agent(
    name="triage",
    instructions="Route the customer.",
    model="triage-model",
    handoffs=[handoff(billing, input_type=Reason), "shipping"],
    max_turns=6,
)
shipping = Agent(name="shipping", instructions="You ship.", model="ship-model")
careful = Agent(
    name="careful",
    instructions="Route, with a person's say.",
    model="triage-model",
    handoffs=[handoff(billing, needs_approval=True), "shipping"],
    max_turns=6,
)

NOTICES: list[dict] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(needs_approval=True)
def notify(to: str, text: str) -> str:
    """Send a notice (needs a person's approval)."""
    NOTICES.append({"to": to, "text": text})
    return f"notified {to}"


class Verdict(BaseModel):
    approve: bool
    why: str


researcher = Agent(
    name="researcher", instructions="You research.", model="research-model", tools=[add]
)
mailer = Agent(name="mailer", instructions="You send notices.", model="mail-model", tools=[notify])
analyst = Agent(name="analyst", instructions="You judge.", model="judge-model", output_type=Verdict)
lead = Agent(
    name="lead",
    instructions="You delegate.",
    model="lead-model",
    tools=[researcher.as_tool(), mailer.as_tool(name="ask_mailer"), analyst.as_tool()],
    max_turns=6,
)

desk = Agent(
    name="desk",
    instructions="Notify, or route.",
    model="desk-model",
    tools=[notify],
    handoffs=["billing"],
    max_turns=6,
)
thrifty = Agent(
    name="thrifty",
    instructions="Route on a budget.",
    model="thrifty-model",
    token_budget=10_000,
    model_settings=ModelSettings(max_output_tokens=100),
    handoffs=["shipping"],
    max_turns=6,
)

tidy = Agent(
    name="tidy",
    instructions="Look up, then route.",
    model="tidy-model",
    tools=[add],
    handoffs=[handoff(billing, input_filter="remove_tools")],
    max_turns=6,
)
"""Billing, taking over from it, is not sent its tool calls and results."""
HANDOFF_AGENTS = [triage, billing, shipping, careful, desk, thrifty, tidy]
director = Agent(
    name="director",
    instructions="You ask the lead.",
    model="director-model",
    tools=[lead.as_tool(name="ask_lead")],
    max_turns=4,
)
counter = Agent(
    name="counter",
    instructions="You count.",
    model="count-model",
    tools=[add],
    model_settings=ModelSettings(max_output_tokens=50),
)
budgeted = Agent(
    name="budgeted",
    instructions="Delegate on a budget.",
    model="budgeted-model",
    token_budget=2_000,
    model_settings=ModelSettings(max_output_tokens=100),
    tools=[counter.as_tool(), researcher.as_tool()],
    max_turns=6,
)
vault = Agent(
    name="vault",
    instructions="You ask the custodian.",
    model="vault-model",
    tools=[custodian.as_tool()],
    max_turns=4,
)
"""Its child's `transfer` separates duties: whoever signed the vault's start may not
approve it."""
strict = Agent(
    name="strict",
    instructions="You need the analyst's verdict.",
    model="strict-model",
    tools=[analyst.as_tool(on_failure="fail_run")],
    max_turns=4,
)
"""Fails when the analyst's run does not complete."""
middle = Agent(
    name="middle",
    instructions="You ask the counter.",
    model="middle-model",
    tools=[counter.as_tool()],
    model_settings=ModelSettings(max_output_tokens=50),
)
topper = Agent(
    name="topper",
    instructions="You ask the middle.",
    model="topper-model",
    token_budget=5_000,
    model_settings=ModelSettings(max_output_tokens=50),
    tools=[middle.as_tool()],
)
"""A budget over two levels: what the counter uses counts against the topper's."""
scout = Agent(name="scout", instructions="You dig.", model="scout-model", tools=[notify])
"""Asks for approval at each step: it runs as long as a test wants."""
coordinator = Agent(
    name="coordinator",
    instructions="You coordinate agents working in the background.",
    model="coord-model",
    tools=[scout.as_tool(wait=False), researcher.as_tool(name="research_bg", wait=False)],
    max_turns=6,
)
relay = Agent(
    name="relay",
    instructions="You coordinate, continuing as new after each turn.",
    model="relay-model",
    tools=[scout.as_tool(wait=False)],
    turns_per_workflow_run=1,
    max_turns=6,
    background_check_every=timedelta(seconds=1),  # checks its carried children often
)
saver = Agent(
    name="saver",
    instructions="Count in the background, on a budget.",
    model="saver-model",
    token_budget=2_000,
    model_settings=ModelSettings(max_output_tokens=100),
    tools=[counter.as_tool(wait=False)],
    max_turns=6,
)
"""Its background child gets a share of its budget, counted as used while it runs."""
steady = Agent(
    name="steady", instructions="You notify.", model="steady-model", tools=[notify],
    allow_interrupt=False,
)  # fmt: skip
"""Takes no interrupts: its caller's interrupt leaves it to finish."""
boss = Agent(
    name="boss", instructions="You delegate.", model="boss-model", tools=[steady.as_tool()]
)
AGENT_TOOL_AGENTS = [
    *(lead, researcher, mailer, analyst, director),
    *(counter, budgeted, vault, strict, middle, topper),
    *(scout, coordinator, relay, saver, steady, boss),
]


def by_model(replies: dict[str, list]) -> object:
    """A scripted-model responder answering each request from the list of its model, in
    order (the agents here each have a model of their own: their runs go at once)."""

    def answer(body: dict) -> object:
        return replies[body["model"]].pop(0)

    return answer
