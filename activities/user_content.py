"""A user message given as parts (text and images, `workflows.input_items`), as each
model API carries it; a message without parts is its text."""

from __future__ import annotations

from typing import Any

from durable_agents.workflows.run_items import Attachment, TextPart, UserMessage


def chat_content(message: UserMessage) -> str | list[dict[str, Any]]:
    """The `content` of a Chat Completions user message: `text` and `image_url` parts."""
    if not message.parts:
        return message.content
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
            continue
        image: dict[str, Any] = {"url": _url(part.url, part.image)}
        if part.detail is not None:
            image["detail"] = part.detail
        parts.append({"type": "image_url", "image_url": image})
    return parts


def responses_content(message: UserMessage) -> str | list[dict[str, Any]]:
    """The `content` of a Responses input message: `input_text` and `input_image` parts."""
    if not message.parts:
        return message.content
    return [
        {"type": "input_text", "text": part.text}
        if isinstance(part, TextPart)
        else {
            "type": "input_image",
            "image_url": _url(part.url, part.image),
            "detail": part.detail or "auto",
        }
        for part in message.parts
    ]


def _url(url: str | None, image: Attachment | None) -> str:
    if url is not None:
        return url
    assert image is not None  # an ImagePart has one or the other
    return f"data:{image.mime_type};base64,{image.data}"
