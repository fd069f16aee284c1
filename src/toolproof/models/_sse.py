r"""An incremental decoder for server-sent events (``text/event-stream``).

Feed it bytes as they arrive; it returns the complete events so far. It follows the WHATWG
event-stream rules that matter for chat-completions streams: lines end with ``\n``,
``\r\n`` or ``\r``; ``data:`` lines of one event are joined with ``\n``; a single space after
the colon is dropped; lines starting with ``:`` are comments (keep-alives); a blank line ends
an event. Unlike a browser it also delivers an event left without its closing blank line when
the stream ends, because some servers end with ``data: [DONE]\n`` and nothing after it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SSEDecoder", "ServerSentEvent"]


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One event of the stream.

    Attributes:
        data: The event's data (its ``data:`` lines joined with newlines).
        event: The ``event:`` field, ``"message"`` when absent.
        id: The ``id:`` field, if any.
    """

    data: str
    event: str = "message"
    id: str | None = None


class SSEDecoder:
    """Turns a byte stream into :class:`ServerSentEvent` objects, chunk by chunk."""

    __slots__ = ("_buffer", "_data", "_event", "_has_data", "_id", "_pending_cr")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._has_data = False
        self._event = ""
        self._id: str | None = None
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode ``chunk`` and return the events it completes."""
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the "\n" of a "\r\n" split across chunks
        self._pending_cr = False
        buffer = self._buffer + chunk
        events: list[ServerSentEvent] = []
        if b"\r" in buffer:
            if buffer.endswith(b"\r"):
                self._pending_cr = True
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *lines, self._buffer = buffer.split(b"\n")
        for line in lines:
            event = self._line(line.decode("utf-8", "replace"))
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[ServerSentEvent]:
        """Flush what is left when the stream ends (a last event without a blank line)."""
        events: list[ServerSentEvent] = []
        if self._buffer:
            event = self._line(self._buffer.decode("utf-8", "replace"))
            self._buffer = b""
            if event is not None:
                events.append(event)
        event = self._line("")
        if event is not None:
            events.append(event)
        return events

    def _line(self, line: str) -> ServerSentEvent | None:
        if not line:
            if not self._has_data:
                self._event = ""
                return None
            event = ServerSentEvent("\n".join(self._data), self._event or "message", self._id)
            self._data = []
            self._has_data = False
            self._event = ""
            return event
        if line[0] == ":":
            return None  # a comment, used as keep-alive
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value
        return None
