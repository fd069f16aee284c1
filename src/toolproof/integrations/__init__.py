"""Integrations with agent frameworks and observability tools, each an optional extra.

Every integration is a thin translation to and from toolproof's ``Trace``, ``Tool`` and
``Model``. Import the module you need; each imports its framework when it is imported, and
this package imports nothing:

- ``toolproof.integrations.langchain`` (``pip install "toolproof[langchain]"``): LangChain
  and LangGraph tools both ways, a scripted chat model, trace capture, suite agents.
- ``toolproof.integrations.openai_agents`` (``pip install "toolproof[openai-agents]"``): the
  OpenAI Agents SDK: a scripted model, tools both ways, trace capture.
- ``toolproof.integrations.otel`` (``pip install "toolproof[otel]"``): OpenTelemetry GenAI
  spans: export traces, import spans as traces.
- ``toolproof.integrations.mcp`` (``pip install "toolproof[mcp]"``): MCP: toolproof tools
  served over MCP (mocked, with faults, recorded), MCP servers' tools as toolproof tools.
"""

__all__: list[str] = []
