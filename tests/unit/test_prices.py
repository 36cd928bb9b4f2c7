"""The worker's price table (durable_agents.prices) and what a price makes of usage."""

from __future__ import annotations

import pytest
from durable_agents.workflows.agent_spec import ModelPrice
from durable_agents.workflows.run_items import Usage

from durable_agents.prices import PriceTableError, parse_prices, prices_from_env


def test_a_price_counts_cached_input_at_its_own_rate_and_reasoning_as_output():
    price = ModelPrice(input=2.0, cached_input=0.5, output=8.0)
    usage = Usage(
        input_tokens=1_000, cached_input_tokens=600, output_tokens=200, reasoning_tokens=150
    )
    assert price.cost(usage) == pytest.approx((400 * 2.0 + 600 * 0.5 + 200 * 8.0) / 1e6)
    uncached = ModelPrice(input=2.0, output=8.0)  # no cached rate: cached input at `input`
    assert uncached.cost(usage) == pytest.approx((1_000 * 2.0 + 200 * 8.0) / 1e6)


def test_a_provider_reporting_more_cached_than_input_tokens_is_not_paid_back():
    price = ModelPrice(input=2.0, cached_input=0.5, output=0.0)
    assert price.cost(Usage(input_tokens=10, cached_input_tokens=50)) == pytest.approx(
        10 * 0.5 / 1e6
    )


def test_the_table_reads_models_and_prices():
    table = parse_prices('{"gpt-x": {"input": 1, "output": 4.5, "currency": "EUR"}}')
    assert table == {"gpt-x": ModelPrice(input=1.0, output=4.5, currency="EUR")}


@pytest.mark.parametrize(
    "text, problem",
    [
        ("[]", "(root): Input should be an object"),
        (
            '{"m": {"input": -1, "output": 1}}',
            "m.input: Input should be greater than or equal to 0",
        ),
        ('{"m": {"input": "1", "output": 1}}', "m.input: Input should be a valid number"),
        ('{"m": {"input": 1e999, "output": 1}}', "m.input: Input should be a finite number"),
        ('{"m": {"input": 1}}', "m.output: Field required"),
        ('{"m": {"input": 1, "output": 1, "currency": "euro"}}', "m.currency"),
        ('{"m": {"input": 1, "output": 1, "per": "token"}}', "m.per: Extra inputs"),
        ('{" ": {"input": 1, "output": 1}}', "a model name cannot be blank"),
        ("{not json", "Invalid JSON"),
    ],
)
def test_a_table_that_cannot_be_used_is_refused_with_why(text, problem):
    with pytest.raises(PriceTableError) as caught:
        parse_prices(text)
    assert problem in caught.value.message


def test_the_environment_names_the_table(tmp_path):
    assert prices_from_env({}) == {}
    path = tmp_path / "prices.json"
    path.write_text('{"m": {"input": 1, "output": 2}}')
    assert prices_from_env({"AGENT_PRICES": str(path)}) == {"m": ModelPrice(input=1, output=2)}
    with pytest.raises(PriceTableError, match="AGENT_PRICES: cannot read"):
        prices_from_env({"AGENT_PRICES": str(tmp_path / "missing.json")})
    path.write_text('{"m": {"input": 1}}')
    with pytest.raises(PriceTableError, match=r"AGENT_PRICES \(.*prices.json\) is not a valid"):
        prices_from_env({"AGENT_PRICES": str(path)})


def test_only_a_serving_plugin_reads_the_price_table(tmp_path, monkeypatch):
    from openai import AsyncOpenAI

    from durable_agents import AgentsPlugin

    broken = tmp_path / "prices.json"
    broken.write_text("{not json")
    monkeypatch.setenv("AGENT_PRICES", str(broken))
    assert AgentsPlugin().prices == {}  # a client: the worker's table is none of its business
    with pytest.raises(PriceTableError, match="AGENT_PRICES"):
        AgentsPlugin(model_client=AsyncOpenAI(api_key="x", max_retries=0))
