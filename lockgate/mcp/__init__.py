"""The MCP server for coding agents (``lockgate mcp``) and its host configuration.

- :mod:`lockgate.mcp.tools`: the tools' names, descriptions and input schemas;
- :mod:`lockgate.mcp.handlers`: what each tool does over an :class:`~lockgate.engine.Engine`;
- :mod:`lockgate.mcp.server`: the MCP wiring (argument validation, tool errors, stdio);
- :mod:`lockgate.mcp.config`: ``.mcp.json`` / Codex ``config.toml`` snippets and merging;
- :mod:`lockgate.mcp.instructions`: the CLAUDE.md / AGENTS.md block.

Importing this package stays cheap; the ``mcp`` SDK is imported by :mod:`lockgate.mcp.server` only.
"""

from __future__ import annotations

from .tools import TOOL_NAMES, TOOLS, ToolSpec

__all__ = ["TOOLS", "TOOL_NAMES", "ToolSpec"]
