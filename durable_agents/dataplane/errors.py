"""The data plane's error root."""

from __future__ import annotations


class DataPlaneError(Exception):
    """Base class of every error of the data plane (codec keys and payloads, the
    payload store): a configuration that cannot work, or data that does not decode."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        """One line that says what went wrong, fit for a terminal."""
