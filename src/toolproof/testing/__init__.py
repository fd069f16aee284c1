"""Test doubles for agents: scripted and function models, and (soon) mocked tools.

Example:
    ```python
    from toolproof.testing import ScriptedModel, call

    model = ScriptedModel([call("multiply_numbers", a=12, b=8), "12 x 8 = 96"])
    ```
"""

from toolproof.models.fake import FunctionModel, ModelRequest, RequestInfo, ScriptedModel, call

__all__ = ["FunctionModel", "ModelRequest", "RequestInfo", "ScriptedModel", "call"]
