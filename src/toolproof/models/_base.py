"""The model seam: one abstract async method."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from toolproof._messages import Message, ModelResponse, ModelSettings, ToolDefinition

__all__ = ["Model"]


class Model(ABC):
    """A chat model that may call tools.

    Implement :meth:`request`; everything else has a default. Real adapters, the text
    protocol wrapper, scripted fakes and replay models are all peers behind this seam.

    Attributes:
        name: A readable name recorded in traces (``"deepseek:deepseek-chat"``).
    """

    name: str = "model"

    @abstractmethod
    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        """Ask the model for the next assistant message.

        Args:
            messages: The conversation, system prompt first.
            tools: The tools the model may call.
            settings: Generation settings for this request.

        Returns:
            The assistant message with its usage and finish reason.
        """

    async def aclose(self) -> None:  # noqa: B027 - optional hook, not abstract
        """Release network resources (connections); a no-op by default."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
