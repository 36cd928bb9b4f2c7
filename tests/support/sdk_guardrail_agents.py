"""Guardrails written with the OpenAI Agents SDK the way its guardrails example writes
them (`examples/agent_patterns/input_guardrails.py`, `output_guardrails.py`): an input
guardrail that runs an agent with `Runner.run`, an output guardrail on a typed output;
converted by `from_sdk_agent`. `homework_desk` ends the run on a tripwire; `polite_desk`
refuses and keeps the session, as the SDK's customer-service demo does."""

from __future__ import annotations

from agents import (
    Agent,
    GuardrailFunctionOutput,
    RunContextWrapper,
    Runner,
    TResponseInputItem,
    input_guardrail,
    output_guardrail,
)
from pydantic import BaseModel

from durable_agents.openai_agents import from_sdk_agent

SEEN: list[tuple[str, object]] = []
"""What the guardrails were given: (guardrail, context or output), in order."""


class MathHomeworkOutput(BaseModel):
    reasoning: str
    is_math_homework: bool


guardrail_agent = Agent(
    name="Guardrail check",
    instructions="Check if the user is asking you to do their math homework.",
    model="guardrail-model",
    output_type=MathHomeworkOutput,
)


@input_guardrail
async def math_guardrail(
    context: RunContextWrapper[dict], agent: Agent, input: str | list[TResponseInputItem]
) -> GuardrailFunctionOutput:
    """This is an input guardrail function, which happens to call an agent to check if the
    input is a math homework question."""
    SEEN.append(("math_guardrail", context.context))
    result = await Runner.run(guardrail_agent, input, context=context.context)
    final_output = result.final_output_as(MathHomeworkOutput)
    return GuardrailFunctionOutput(
        output_info=final_output,
        tripwire_triggered=final_output.is_math_homework,
    )


class MessageOutput(BaseModel):
    reasoning: str
    response: str


@output_guardrail
async def sensitive_data_check(
    context: RunContextWrapper, agent: Agent, output: MessageOutput
) -> GuardrailFunctionOutput:
    SEEN.append(("sensitive_data_check", output))
    phone_number_in_response = "650" in output.response
    phone_number_in_reasoning = "650" in output.reasoning
    return GuardrailFunctionOutput(
        output_info={
            "phone_number_in_response": phone_number_in_response,
            "phone_number_in_reasoning": phone_number_in_reasoning,
        },
        tripwire_triggered=phone_number_in_response or phone_number_in_reasoning,
    )


homework_agent = Agent(
    name="sdk_homework",
    instructions="You are a customer support agent. You help customers with their questions.",
    model="support-model",
    input_guardrails=[math_guardrail],
    output_guardrails=[sensitive_data_check],
    output_type=MessageOutput,
)

polite_agent = Agent(
    name="sdk_polite",
    instructions="You are a customer support agent. You help customers with their questions.",
    model="support-model",
    input_guardrails=[math_guardrail],
)

homework_desk = from_sdk_agent(homework_agent)
polite_desk = from_sdk_agent(
    polite_agent,
    guardrail_refusals={"math_guardrail": "Sorry, I can only help with your account."},
)
