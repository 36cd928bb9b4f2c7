"""MkDocs hook: the CLI reference pages print the commands' own `--help`, so the
docs cannot drift from the parsers (`<!-- agentctl-help -->`, `<!-- worker-help -->`)."""

from __future__ import annotations

import argparse
import contextlib
import io
import os

AGENTCTL_MARK = "<!-- agentctl-help -->"
WORKER_MARK = "<!-- worker-help -->"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps its subparsers here, nowhere public
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _block(text: str) -> str:
    return "```text\n" + text.rstrip() + "\n```\n"


def agentctl_help() -> str:
    from durable_agents.client.cli import build_parser

    parser = build_parser()
    parts = ["## agentctl\n", _block(parser.format_help())]
    for name, sub in _subcommands(parser).items():
        parts += [f"## agentctl {name}\n", _block(sub.format_help())]
        for inner, subsub in _subcommands(sub).items():
            parts += [f"### agentctl {name} {inner}\n", _block(subsub.format_help())]
    return "\n".join(parts)


def worker_help() -> str:
    from durable_agents.worker import parse_args

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        parse_args(["--help"])
    return _block(out.getvalue())


def on_page_markdown(markdown: str, **_: object) -> str:
    if AGENTCTL_MARK not in markdown and WORKER_MARK not in markdown:
        return markdown
    os.environ["COLUMNS"] = "100"  # argparse wraps at the terminal's width otherwise
    if AGENTCTL_MARK in markdown:
        markdown = markdown.replace(AGENTCTL_MARK, agentctl_help())
    if WORKER_MARK in markdown:
        markdown = markdown.replace(WORKER_MARK, worker_help())
    return markdown
