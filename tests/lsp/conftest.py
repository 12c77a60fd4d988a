"""pytest-lsp harness: the real server over stdio, driven with the capabilities of VS Code and
of Neovim (0.11: pull diagnostics, UTF-8 positions; 0.6: push, no snippets)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lockgate.lsp.positions import encoding_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "lockgate", "lsp"])
EDITORS = ["visual-studio-code", "neovim@v0.11.0"]


@pytest_lsp.fixture(config=SERVER, params=EDITORS)
async def client(lsp_client: LanguageClient, request):
    result = await lsp_client.initialize_session(
        lsp.InitializeParams(capabilities=client_capabilities(request.param), root_uri=EXAMPLES.as_uri())
    )
    lsp_client.editor = request.param
    lsp_client.encoding = encoding_of(result.capabilities.position_encoding)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)
async def vscode(lsp_client: LanguageClient):
    result = await lsp_client.initialize_session(
        lsp.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    )
    lsp_client.editor = "visual-studio-code"
    lsp_client.encoding = encoding_of(result.capabilities.position_encoding)
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def review_spec() -> str:
    return (EXAMPLES / "code-review.stratum.yaml").read_text(encoding="utf-8")
