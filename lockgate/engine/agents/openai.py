"""OpenAI-compatible chat completions as an agent (OpenAI, vLLM, Ollama's ``/v1``, ...).

The step's output contract goes out as ``response_format: {type: json_schema, ...}`` (strict when
the schema allows it). A server that rejects ``json_schema`` gets ``json_object`` plus the schema
as an instruction from then on. The reply must be JSON; it is never cleaned up from prose.
Rate limits (429), server errors (5xx) and dropped connections are retried a bounded number of
times with exponential backoff; other HTTP errors are the task's failure with the server's message.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Mapping
from typing import Any

import httpx

from ...errors import AgentError, AgentUnavailable
from .base import AgentResult, Task, Telemetry, Usage, strict_compatible
from .command import preview

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_SYSTEM_PROMPT = (
    "You carry out one step of a Lockgate workflow. Do exactly what the task asks and answer "
    "with JSON only."
)
_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_FORMAT_REJECTED = re.compile(r"response_format|json_schema|structured", re.IGNORECASE)


class OpenAIAgent:
    """Chat completions against ``base_url`` with ``model``.

    ``api_key_env`` names the environment variable holding the key; it defaults to
    ``OPENAI_API_KEY`` for api.openai.com and to none (no Authorization header) elsewhere.
    ``structured`` is ``auto`` (json_schema, falling back to json_object), ``json_schema`` or
    ``json_object``.
    """

    def __init__(self, name: str, *, model: str, base_url: str = DEFAULT_BASE_URL,
                 api_key_env: str | None = None, timeout: float = 120.0, max_retries: int = 3,
                 backoff: float = 0.5, max_backoff: float = 8.0, temperature: float | None = None,
                 system_prompt: str | None = None, structured: str = "auto",
                 usd_per_1k_input: float = 0.0, usd_per_1k_output: float = 0.0,
                 headers: Mapping[str, str] | None = None,
                 extra_body: Mapping[str, Any] | None = None) -> None:
        if structured not in ("auto", "json_schema", "json_object"):
            raise ValueError(f"agent {name!r}: structured must be auto, json_schema or json_object")
        self.name = name
        self.model = model
        self.base_url = base_url.rstrip("/")
        if api_key_env is None and self.base_url == DEFAULT_BASE_URL:
            api_key_env = "OPENAI_API_KEY"
        self.api_key_env = api_key_env or None
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.temperature = temperature
        self.system_prompt = system_prompt or DEFAULT_SYSTEM_PROMPT
        self.structured = structured
        self.prices = (usd_per_1k_input, usd_per_1k_output)
        self.headers = dict(headers or {})
        self.extra_body = dict(extra_body or {})
        self._schema_supported = structured != "json_object"
        self._calls: set[asyncio.Task[AgentResult]] = set()

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def preflight(self) -> None:
        if self.api_key_env and not os.environ.get(self.api_key_env):
            raise AgentUnavailable(
                f"agent {self.name!r}: the environment variable {self.api_key_env} (the API key "
                f"for {self.base_url}) is not set")

    async def execute(self, task: Task) -> AgentResult:
        call = asyncio.ensure_future(self._execute(task))
        self._calls.add(call)
        try:
            return await call
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if call.cancelled() and not (current and current.cancelling()):
                return AgentResult.failed(f"agent {self.name!r} was cancelled")
            raise
        finally:
            self._calls.discard(call)

    async def cancel(self) -> None:
        for call in list(self._calls):
            call.cancel()

    async def _execute(self, task: Task) -> AgentResult:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(task.timeout):
                async with httpx.AsyncClient(timeout=self.timeout) as client:
                    data = await self._complete(client, task)
        except TimeoutError:
            return AgentResult.failed(
                f"agent {self.name!r}: no answer from {self.url} within {task.timeout:g}s")
        except AgentError as exc:
            return AgentResult.failed(f"agent {self.name!r}: {exc}")
        elapsed = (time.perf_counter() - started) * 1000
        return self._interpret(data, elapsed)

    async def _complete(self, client: httpx.AsyncClient, task: Task) -> dict[str, Any]:
        """POST with bounded retries; switch to json_object once if json_schema is rejected."""
        retries = 0
        while True:
            native = self._schema_supported and task.schema is not None
            try:
                response = await client.post(self.url, json=self._body(task, native),
                                             headers=self._auth_headers())
            except httpx.TimeoutException as exc:
                raise AgentError(f"request to {self.url} timed out after {self.timeout:g}s") from exc
            except httpx.TransportError as exc:
                if retries >= self.max_retries:
                    raise AgentError(f"cannot reach {self.url}: {exc}") from exc
                retries += 1
                await asyncio.sleep(self._delay(retries, None))
                continue
            status = response.status_code
            if status == 400 and native and self.structured == "auto" and _rejects_format(response):
                self._schema_supported = False
                continue
            if (status == 429 or status >= 500) and retries < self.max_retries:
                retries += 1
                await asyncio.sleep(self._delay(retries, response.headers.get("retry-after")))
                continue
            if status >= 400:
                raise AgentError(f"HTTP {status} from {self.url}"
                                 f"{' after ' + str(retries) + ' retries' if retries else ''}: "
                                 f"{_error_message(response)}")
            try:
                return response.json()
            except ValueError as exc:
                raise AgentError(f"{self.url} answered with a body that is not JSON: "
                                 f"{preview(response.text)}") from exc

    def _body(self, task: Task, native: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": self.system_prompt},
                {"role": "user", "content": task.instructed_prompt(native_schema=native)},
            ],
            "response_format": self._response_format(task, native),
            **self.extra_body,
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    def _response_format(self, task: Task, native: bool) -> dict[str, Any]:
        if not native or task.schema is None:
            return {"type": "json_object"}
        name = _SCHEMA_NAME.sub("_", task.contract or "output")[:64] or "output"
        return {"type": "json_schema", "json_schema": {
            "name": name, "schema": dict(task.schema), "strict": strict_compatible(task.schema)}}

    def _auth_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _delay(self, retry: int, retry_after: str | None) -> float:
        delay = self.backoff * 2 ** (retry - 1)
        if retry_after:
            try:
                delay = max(delay, float(retry_after))
            except ValueError:
                pass
        return min(delay, self.max_backoff)

    def _interpret(self, data: Any, elapsed: float) -> AgentResult:
        usage = self._usage(data)
        model = data.get("model", self.model) if isinstance(data, dict) else self.model
        telemetry = Telemetry(duration_ms=elapsed, model=model)
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            return AgentResult.failed(f"agent {self.name!r}: {self.url} answered without a "
                                      f"choice: {preview(json.dumps(data))}", usage=usage,
                                      telemetry=telemetry)
        if message.get("refusal"):
            return AgentResult.failed(f"agent {self.name!r}: the model refused: "
                                      f"{message['refusal']}", usage=usage, telemetry=telemetry)
        if choice.get("finish_reason") == "length":
            return AgentResult.failed(f"agent {self.name!r}: the answer was cut off at the token "
                                      "limit (finish_reason length)", usage=usage,
                                      telemetry=telemetry)
        content = message.get("content")
        try:
            output = json.loads(content or "")
        except (TypeError, json.JSONDecodeError):
            return AgentResult.failed(f"agent {self.name!r}: the model's answer is not JSON: "
                                      f"{preview(str(content or ''))}", usage=usage,
                                      telemetry=telemetry)
        return AgentResult.success(output, usage=usage, telemetry=telemetry)

    def _usage(self, data: Any) -> Usage:
        raw = data.get("usage") if isinstance(data, dict) else None
        if not isinstance(raw, dict):
            return Usage()
        prompt = int(raw.get("prompt_tokens") or 0)
        completion = int(raw.get("completion_tokens") or 0)
        total = int(raw.get("total_tokens") or prompt + completion)
        usd = (prompt * self.prices[0] + completion * self.prices[1]) / 1000
        return Usage(tokens=total, usd=usd)

    def __repr__(self) -> str:
        return f"OpenAIAgent({self.name!r}, model={self.model!r}, base_url={self.base_url!r})"


def _rejects_format(response: httpx.Response) -> bool:
    return bool(_FORMAT_REJECTED.search(response.text))


def _error_message(response: httpx.Response) -> str:
    """The server's own error message when it sent the usual ``{"error": {...}}`` body."""
    try:
        body = response.json()
    except ValueError:
        return preview(response.text)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return preview(response.text)
