"""A function's docstring read as a tool's description and its arguments' descriptions.

The sections are found by griffe (the parser the OpenAI Agents SDK and mkdocstrings
use), in Google style (`Args:`), Sphinx (`:param x:`) or NumPy (`Parameters` underlined),
whichever the docstring is written in. What the model sees of a tool: the docstring's
text without its sections (`Args:`, `Returns:`, `Raises:`, ...); each parameter's line
goes into the JSON Schema of the arguments, unless the parameter's annotation
(`Annotated[..., Field(description=...)]`) or default (`Field(description=...)`) gives
one already.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from griffe import Docstring, DocstringSectionKind


@dataclass(frozen=True)
class Documented:
    """What a function's docstring says of it."""

    description: str
    """Its text without sections: the whole docstring when it has none."""
    parameters: dict[str, str] = field(default_factory=dict)
    """Each documented parameter's description, by name."""


def documented(fn: Callable[..., Any]) -> Documented:
    """What `fn`'s docstring says of the function and its parameters."""
    text = inspect.getdoc(fn) or ""
    if not text:
        return Documented("")
    with _quiet():
        # the style that finds the most sections (griffe's regular expressions miss a
        # section on the docstring's last line)
        sections = Docstring(
            text, lineno=1, parser="auto", parser_options={"method": "max_sections"}
        )
        parsed = sections.parse()
    parameters: dict[str, str] = {}
    said: list[str] = []
    for section in parsed:
        if section.kind is DocstringSectionKind.text:
            said.append(str(section.value).strip())
        elif section.kind is DocstringSectionKind.parameters:
            for parameter in section.value:
                if parameter.description.strip():
                    parameters[parameter.name] = " ".join(parameter.description.split())
    if len(parsed) == len(said):  # no sections: the docstring as written
        return Documented(text)
    return Documented("\n\n".join(s for s in said if s), parameters)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """griffe warns (through logging) of parameters without a type in the docstring:
    types come from the annotations here, so the warnings say nothing."""
    logger = logging.getLogger("griffe")
    before = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = before
