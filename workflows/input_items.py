"""A run's input, or a session's message, given as a list of items, as the OpenAI Agents
SDK's `Runner.run(agent, input_list)` takes it. Pure.

Each item is a user message in the Responses API's input shape: `{"role": "user",
"content": "text"}`, or `{"role": "user", "content": [{"type": "input_text", "text":
...}, {"type": "input_image", "image_url": "https://..." | "data:image/png;base64,...",
"detail"?: "auto" | "low" | "high"}]}` (`"type": "message"` may come with it). Each
becomes one `UserMessage`; an image given as a data URL is kept whole (an
`Attachment`: a type models read, its bytes checked, at most `MAX_ATTACHMENT_BYTES`),
one given as a URL must be `https`. Anything else (another role, another item or part
type, an unreadable or oversized image) is refused when the run starts or the message
arrives, with the reason.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from durable_agents.workflows.run_items import (
    MAX_ATTACHMENT_BYTES,
    Attachment,
    ImagePart,
    TextPart,
    UserMessage,
)
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

MAX_INPUT_ITEMS = 100
"""Items in one input list."""
MAX_INPUT_IMAGES = 16
"""Images in one input list."""
MAX_IMAGE_URL_CHARS = 2_048
"""The longest `https` image URL (a data URL is bounded by its image's size)."""

_DATA_URL = re.compile(r"^data:(image/[a-z+.-]+);base64,(.*)$", re.DOTALL)


def _text_or_list(value: object) -> str:
    return "parts" if isinstance(value, list | tuple) else "text"


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputText(_Item):
    """Text of a user message."""

    type: Literal["input_text"]
    text: str


class InputImage(_Item):
    """An image of a user message: an `https` URL or a data URL."""

    type: Literal["input_image"]
    image_url: str = Field(min_length=1)
    detail: Literal["auto", "low", "high"] | None = None

    @field_validator("image_url")
    @classmethod
    def _readable(cls, url: str) -> str:
        if url.startswith("data:"):
            _attachment(url)  # raises with the reason
            return url
        if not url.startswith("https://") or len(url) > MAX_IMAGE_URL_CHARS:
            raise ValueError(
                f"an image URL is https (at most {MAX_IMAGE_URL_CHARS:,} characters) or a "
                "data URL (data:image/png;base64,...)"
            )
        return url


class InputMessage(_Item):
    """One user message of an input list."""

    type: Literal["message"] | None = None
    role: str
    content: Annotated[
        Annotated[str, Tag("text")]
        | Annotated[
            list[Annotated[InputText | InputImage, Field(discriminator="type")]], Tag("parts")
        ],
        Discriminator(_text_or_list),
    ]

    @field_validator("role")
    @classmethod
    def _user(cls, role: str) -> str:
        if role != "user":
            raise ValueError(
                f"role {role[:40]!r}: an input list holds the user's messages (the "
                "agent's instructions are its system message; replies are the model's)"
            )
        return role

    @model_validator(mode="after")
    def _not_empty(self) -> InputMessage:
        if isinstance(self.content, list) and not self.content:
            raise ValueError("a message has text or an image")
        return self


InputList = Annotated[list[InputMessage], Field(min_length=1, max_length=MAX_INPUT_ITEMS)]
"""A run's input or a session's message given as items."""

TextOrItems = Annotated[
    Annotated[str, Tag("text")] | Annotated[InputList, Tag("parts")],
    Discriminator(_text_or_list),
]
"""A text, or an input list (whose problems alone are reported when it is one)."""


def images_problem(items: list[InputMessage]) -> str | None:
    """Why `items` hold too many images, or None."""
    count = sum(
        isinstance(part, InputImage)
        for item in items
        if isinstance(item.content, list)
        for part in item.content
    )
    if count > MAX_INPUT_IMAGES:
        return f"{count} images; an input list holds at most {MAX_INPUT_IMAGES}"
    return None


def user_messages(given: str | list[InputMessage]) -> list[UserMessage]:
    """The user messages `given` (a text, or an input list) stands for."""
    if isinstance(given, str):
        return [UserMessage(content=given)]
    return [_message(item) for item in given]


def text_of(given: str | list[InputMessage]) -> str:
    """What `given` says in text (its text parts, a line each): for summaries and limits."""
    return "\n".join(m.content for m in user_messages(given))


def _message(item: InputMessage) -> UserMessage:
    if isinstance(item.content, str):
        return UserMessage(content=item.content)
    parts: list[TextPart | ImagePart] = []
    for part in item.content:
        if isinstance(part, InputText):
            parts.append(TextPart(text=part.text))
        elif part.image_url.startswith("data:"):
            parts.append(ImagePart(image=_attachment(part.image_url), detail=part.detail))
        else:
            parts.append(ImagePart(url=part.image_url, detail=part.detail))
    text = "\n".join(p.text for p in parts if isinstance(p, TextPart))
    return UserMessage(content=text, parts=parts)


def _attachment(url: str) -> Attachment:
    """The image a data URL holds; ValueError with the reason if it is none a model
    reads, or too large."""
    found = _DATA_URL.match(url)
    if found is None:
        raise ValueError("a data URL is data:image/<type>;base64,<data>")
    mime, data = found.groups()
    size = len(data) * 3 // 4
    if size > MAX_ATTACHMENT_BYTES:
        raise ValueError(f"an image of about {size:,} bytes; at most {MAX_ATTACHMENT_BYTES:,}")
    try:
        return Attachment(mime_type=mime, data=data)
    except ValueError as err:
        raise ValueError(f"the data URL's image: {_first_error(err)}") from None


def _first_error(err: ValueError) -> str:
    errors = getattr(err, "errors", None)
    if callable(errors):
        found = errors()
        if found:
            return str(found[0].get("msg", err))[:300]
    return str(err)[:300]
