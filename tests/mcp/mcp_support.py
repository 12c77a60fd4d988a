"""Helpers for the MCP tests: a real MCP client talking to `python -m lockgate mcp` over stdio."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

SESSION_TIMEOUT = 60

CHECKED = """
version: 1
contracts:
  Note:
    text: string
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "${b.output}"
      contract: Note
    steps:
      - id: a
        do: "Write a note about ${input.topic}"
        out: Note
        ensure:
          - expr: "len(result.text) > 3"
        attempts: 2
      - id: b
        do: "Polish ${a.output.text}"
        out: Note
"""

# the source document's full example: a human gate that can send the work back
REVIEWED = (Path(__file__).resolve().parents[2] / "examples" / "reviewed-work.stratum.yaml").read_text()


class Session:
    """A connected MCP client with helpers that check the kind of answer expected."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def ok(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool that must succeed; its structured content (the engine's dict)."""
        result = await self.client.call_tool(tool, arguments)
        text = result.content[0].text if result.content else ""
        assert not result.is_error, f"{tool} failed: {text}"
        assert result.structured_content is not None
        return result.structured_content

    async def refused(self, tool: str, arguments: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Call a tool that must be refused; (message, structured error data)."""
        result = await self.client.call_tool(tool, arguments)
        assert result.is_error, f"{tool} unexpectedly succeeded: {result.structured_content}"
        return result.content[0].text, result.structured_content or {}

    async def raw(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        return await self.client.call_tool(tool, arguments)


def server_params(store: Path, workspace: Path) -> StdioServerParameters:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "lockgate", "mcp", "--store", str(store), "--workspace", str(workspace)],
                                 env=env, cwd=str(workspace))


@asynccontextmanager
async def connect(store: Path, workspace: Path, mode: str = "auto") -> AsyncIterator[Session]:
    """A fresh server process and client session (``mode="legacy"``: the initialize handshake
    today's hosts use); fails instead of hanging."""
    try:
        with anyio.fail_after(SESSION_TIMEOUT):
            async with Client(server_params(store, workspace), mode=mode) as client:
                yield Session(client)
    except BaseExceptionGroup as group:
        raise _sole(group) from None


def _sole(group: BaseExceptionGroup) -> BaseException:
    """The single failure inside the client's nested task groups (a test's own assertion), so the
    report shows it rather than the groups around it."""
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def lockgate_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the `lockgate` command as another process (a person at a terminal)."""
    return subprocess.run([sys.executable, "-m", "lockgate", *args], capture_output=True, text=True,
                          timeout=SESSION_TIMEOUT, check=False)
