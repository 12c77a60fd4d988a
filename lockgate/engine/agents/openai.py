"""OpenAI-compatible chat completions as an agent (OpenAI, vLLM, Ollama's ``/v1``, ...).

The step's output contract goes out as ``response_format: {type: json_schema, ...}`` (strict when
the schema allows it). A server that rejects ``json_schema`` gets ``json_object`` plus the schema
as an instruction from then on. The reply must be JSON; it is never cleaned up from prose.
Rate limits (429), server errors (5xx) and dropped connections are retried a bounded number of
times with exponential backoff (at most ``max_backoff``), or after the wait the server asks for
in ``Retry-After`` (seconds or an HTTP date); other HTTP errors are the task's failure with the
server's message (a 401 or 403 also says which key variable was sent, if any).

The server is not trusted: ``timeout`` bounds the whole call, every request and every wait
between retries included (a deadline: each request gets what is left of it, so a body trickled
byte by byte or a server that keeps answering 503 slowly cannot hold a call longer); a retry that
would start past it is not waited for. At most :data:`MAX_BODY_BYTES` of a reply are read,
redirects are not followed, and a reply that is not the expected shape is the task's failure,
never an exception.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import json
import math
import os
import re
import time
from collections.abc import Mapping
from typing import Any

import httpx

from ...errors import AgentError, AgentUnavailable
from .base import AgentResult, Task, Telemetry, Usage, strict_compatible
from .command import clip, preview
from .jsontext import NotJSON, count, loads

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_SYSTEM_PROMPT = (
    "You carry out one step of a Lockgate workflow. Do exactly what the task asks and answer "
    "with JSON only."
)
_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_FORMAT_REJECTED = re.compile(r"response_format|json_schema|structured", re.IGNORECASE)
MAX_BODY_BYTES = 16 * 1024 * 1024
_MAX_BODY = f"{MAX_BODY_BYTES // (1024 * 1024)} MiB"
_DELTA_SECONDS = re.compile(r"\d+(?:\.\d+)?")
#: The longest Retry-After taken at its word (a longer one is past any timeout anyway).
_MAX_RETRY_AFTER_S = 1e9


class _Reply:
    """A response read within the size bound: status, headers and (at most the bound of) body."""

    def __init__(self, status: int, headers: httpx.Headers, body: bytes, cut: bool) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.cut = cut

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class _Deadline:
    """When one call must be over: ``timeout`` seconds after it starts, or the task's own
    timeout when that comes first. The task's is enforced around the call; this one bounds
    each request by what is left of ``timeout`` and decides whether a retry still fits."""

    def __init__(self, timeout: float, task_timeout: float | None) -> None:
        self.started = time.monotonic()
        self.timeout = timeout
        self.task_first = task_timeout is not None and task_timeout < timeout
        self.limit = task_timeout if self.task_first else timeout

    def spent(self) -> float:
        return time.monotonic() - self.started

    def left(self) -> float:
        """Seconds left before the nearer of the two timeouts."""
        return max(0.0, self.limit - self.spent())

    def request_left(self) -> float:
        """Seconds left of the agent's own timeout (the task's is enforced around the call)."""
        return max(0.0, self.timeout - self.spent())

    def name(self) -> str:
        return f"the task's {self.limit:g} s timeout" if self.task_first \
            else f"the {self.limit:g} s timeout"

    def gave_up(self, why: str) -> str:
        return f"gave up after {self.spent():.1f} s ({self.name()}): {why}"


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
        self._calls: dict[asyncio.Future[AgentResult], str] = {}  # call in flight -> its run

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
        self._calls[call] = task.run_id
        try:
            return await call
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if call.cancelled() and not (current and current.cancelling()):
                return AgentResult.failed(f"agent {self.name!r} was cancelled")
            raise
        finally:
            self._calls.pop(call, None)

    async def cancel(self, run_id: str | None = None) -> None:
        """Cancel every call in flight, or only the calls of run ``run_id``."""
        for call, owner in list(self._calls.items()):
            if run_id is None or owner == run_id:
                call.cancel()

    async def _execute(self, task: Task) -> AgentResult:
        started = time.perf_counter()
        deadline = _Deadline(self.timeout, task.timeout)
        try:
            async with asyncio.timeout(task.timeout):
                async with httpx.AsyncClient(timeout=self.timeout) as client:
                    data = await self._complete(client, task, deadline)
        except TimeoutError:
            return AgentResult.failed(
                f"agent {self.name!r}: no answer from {self.url} within {task.timeout:g}s")
        except AgentError as exc:
            return AgentResult.failed(f"agent {self.name!r}: {exc}")
        elapsed = (time.perf_counter() - started) * 1000
        return self._interpret(data, elapsed)

    async def _complete(self, client: httpx.AsyncClient, task: Task, deadline: _Deadline) -> Any:
        """POST with bounded retries within ``deadline``; switch to json_object once if
        json_schema is rejected."""
        retries, last = 0, ""
        while True:
            native = self._schema_supported and task.schema is not None
            try:
                reply = await self._post(client, self._encoded_body(task, native), deadline)
            except _TimedOut as exc:
                raise AgentError(deadline.gave_up(f"{exc}{_retry_note(retries, last)}")) from exc
            except _Retryable as exc:
                if retries >= self.max_retries:
                    raise AgentError(str(exc)) from exc
                retries, last = retries + 1, str(exc)
                await self._pause(deadline, self._backoff(retries), None, last)
                continue
            status = reply.status
            if status == 400 and native and self.structured == "auto" and _rejects_format(reply):
                self._schema_supported = False
                continue
            if (status == 429 or status >= 500) and retries < self.max_retries:
                retries, last = retries + 1, f"HTTP {status} from {self.url}: {_error_message(reply)}"
                await self._pause(deadline, self._backoff(retries),
                                  _retry_after(reply.headers.get("retry-after")), last)
                continue
            if status >= 400:
                raise AgentError(f"HTTP {status} from {self.url}"
                                 f"{' after ' + str(retries) + ' retries' if retries else ''}: "
                                 f"{_error_message(reply)}{self._key_note(status)}")
            return self._decoded(reply)

    async def _pause(self, deadline: _Deadline, backoff: float, asked: float | None,
                     failure: str) -> None:
        """Wait before a retry of ``failure``: the backoff, or as long as the server asked
        (``asked``, from Retry-After). A wait that would end past the deadline fails at once:
        the retry could not be made in time."""
        if asked is not None and asked >= deadline.left():
            raise AgentError(f"{failure}; the server asked to retry after {_seconds(asked)} s, "
                             f"past {deadline.name()}{_spent_note(deadline, asked)}")
        wait = max(backoff, asked or 0.0)
        if wait >= deadline.left():
            raise AgentError(deadline.gave_up(f"{failure}; no time is left for a retry "
                                              f"(the next would be in {_seconds(wait)} s)"))
        await asyncio.sleep(wait)

    async def _post(self, client: httpx.AsyncClient, body: bytes, deadline: _Deadline) -> _Reply:
        """One request, bounded in time (the whole of it: what is left of the deadline) and in
        the bytes read."""
        # identity: a compressed reply would expand past what its bytes on the wire suggest
        headers = httpx.Headers({"content-type": "application/json",
                                 "accept-encoding": "identity"})
        headers.update(self._auth_headers())
        try:
            async with asyncio.timeout(deadline.request_left()):
                async with client.stream("POST", self.url, content=body,
                                         headers=headers) as response:
                    data, cut = await _read_bounded(response)
                    return _Reply(response.status_code, response.headers, data, cut)
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise _TimedOut(f"no complete answer from {self.url}") from exc
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise AgentError(f"invalid base_url {self.base_url!r}: {_reason(exc)}") from exc
        except httpx.LocalProtocolError as exc:  # e.g. a header value with a line break
            raise AgentError(f"cannot send the request to {self.url}: {_reason(exc)}") from exc
        except httpx.TransportError as exc:  # refused, reset, dropped mid-body
            raise _Retryable(f"cannot reach {self.url}: {_reason(exc)}") from exc
        except httpx.HTTPError as exc:  # a body that cannot be decoded (Content-Encoding)
            raise AgentError(f"unreadable reply from {self.url}: {_reason(exc)}") from exc

    def _encoded_body(self, task: Task, native: bool) -> bytes:
        try:
            return json.dumps(self._body(task, native), allow_nan=False).encode()
        except (TypeError, ValueError) as exc:
            raise AgentError(f"the request body is not JSON (check extra_body): {exc}") from exc

    def _decoded(self, reply: _Reply) -> Any:
        """A success reply's body as JSON; 3xx, oversize and non-JSON bodies are failures."""
        if 300 <= reply.status < 400:
            where = reply.headers.get("location")
            raise AgentError(f"HTTP {reply.status} from {self.url} redirects"
                             f"{' to ' + clip(where) if where else ''}; redirects are not "
                             "followed (set base_url to the final address)")
        if reply.cut:
            raise AgentError(f"{self.url} answered with a body larger than {_MAX_BODY} "
                             "(the most that is read)")
        try:
            return loads(reply.body)
        except NotJSON as exc:
            raise AgentError(f"{self.url} answered with a body that is not JSON ({exc}): "
                             f"{preview(reply.text)}") from exc

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

    def _backoff(self, retry: int) -> float:
        """The wait before retry number ``retry``: doubling from ``backoff``, at most ``max_backoff``."""
        return min(self.backoff * 2.0 ** min(retry - 1, 64), self.max_backoff)

    def _key_note(self, status: int) -> str:
        """For a 401 or 403: which environment variable the key came from, or why none was sent."""
        if status not in (401, 403):
            return ""
        if self.api_key_env and os.environ.get(self.api_key_env):
            return (f" (the API key sent came from ${self.api_key_env}; api_key_env names the "
                    "variable to send)")
        if self.api_key_env:
            return f" (no API key was sent: ${self.api_key_env}, which api_key_env names, is not set)"
        other = ("; OPENAI_API_KEY is set, but it is sent only to api.openai.com unless "
                 "api_key_env names it") if os.environ.get("OPENAI_API_KEY") else ""
        return (" (no API key was sent: set api_key_env to the environment variable that holds "
                f"this server's key{other})")

    def _interpret(self, data: Any, elapsed: float) -> AgentResult:
        usage = self._usage(data)
        model = data.get("model") if isinstance(data, dict) else None
        telemetry = Telemetry(duration_ms=elapsed,
                              model=clip(model) if isinstance(model, str) else self.model)
        message = _first_message(data)
        if message is None:
            return AgentResult.failed(f"agent {self.name!r}: {self.url} answered without a "
                                      f"choice: {preview(json.dumps(data))}", usage=usage,
                                      telemetry=telemetry)
        choice = data["choices"][0]
        if message.get("refusal"):
            return AgentResult.failed(f"agent {self.name!r}: the model refused: "
                                      f"{clip(message['refusal'])}", usage=usage,
                                      telemetry=telemetry)
        if choice.get("finish_reason") == "length":
            return AgentResult.failed(f"agent {self.name!r}: the answer was cut off at the token "
                                      "limit (finish_reason length)", usage=usage,
                                      telemetry=telemetry)
        if choice.get("finish_reason") == "content_filter":
            return AgentResult.failed(f"agent {self.name!r}: the provider's content filter stopped "
                                      "the answer (finish_reason content_filter)", usage=usage,
                                      telemetry=telemetry)
        content = message.get("content")
        if not content and message.get("tool_calls"):
            return AgentResult.failed(f"agent {self.name!r}: the model answered with tool calls "
                                      f"({_tool_names(message['tool_calls'])}) instead of JSON "
                                      "content; no tools are offered", usage=usage,
                                      telemetry=telemetry)
        if content is not None and not isinstance(content, str):
            return AgentResult.failed(f"agent {self.name!r}: the model's answer is not text but "
                                      f"{type(content).__name__}: {preview(json.dumps(content))}",
                                      usage=usage, telemetry=telemetry)
        try:
            output = loads(content or "")
        except NotJSON as exc:  # why, as for a body or a command's stdout (JSON too deep to read, say)
            return AgentResult.failed(f"agent {self.name!r}: the model's answer is not JSON ({exc}): "
                                      f"{preview(str(content or ''))}", usage=usage,
                                      telemetry=telemetry)
        return AgentResult.success(output, usage=usage, telemetry=telemetry)

    def _usage(self, data: Any) -> Usage:
        raw = data.get("usage") if isinstance(data, dict) else None
        if not isinstance(raw, dict):
            return Usage()
        prompt = count(raw.get("prompt_tokens"))
        completion = count(raw.get("completion_tokens"))
        total = count(raw.get("total_tokens")) or prompt + completion
        usd = (prompt * self.prices[0] + completion * self.prices[1]) / 1000
        return Usage(tokens=total, usd=usd)

    def __repr__(self) -> str:
        return f"OpenAIAgent({self.name!r}, model={self.model!r}, base_url={self.base_url!r})"


class _Retryable(AgentError):
    """The connection failed (refused, reset, dropped mid-body): worth another attempt."""


class _TimedOut(AgentError):
    """A request ran into the deadline: no retry can follow."""


def _retry_after(value: str | None) -> float | None:
    """The seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP date, a past
    date being 0); None when there is none or it cannot be read (the backoff applies)."""
    text = (value or "").strip()
    if not text:
        return None
    if _DELTA_SECONDS.fullmatch(text):
        seconds = float(text)
        return min(seconds, _MAX_RETRY_AFTER_S) if math.isfinite(seconds) else _MAX_RETRY_AFTER_S
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # an HTTP date is in GMT
        when = when.replace(tzinfo=datetime.UTC)
    now = datetime.datetime.now(datetime.UTC)
    return min(max(0.0, (when - now).total_seconds()), _MAX_RETRY_AFTER_S)


def _seconds(value: float) -> str:
    return f"{round(value, 1):g}"


def _spent_note(deadline: _Deadline, asked: float) -> str:
    """How much of the timeout is spent, when that is why a wait shorter than it does not fit."""
    return f" ({deadline.spent():.1f} s of it spent)" if asked < deadline.limit else ""


def _retry_note(retries: int, last: str) -> str:
    """What came before a request that ran into the deadline: the retries and the last failure."""
    if not retries:
        return ""
    return f" to retry {retries} (the failure before: {last})"


async def _read_bounded(response: httpx.Response) -> tuple[bytes, bool]:
    """At most MAX_BODY_BYTES of the body, and whether there was more (left unread)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return b"".join(chunks)[:MAX_BODY_BYTES], True
    return b"".join(chunks), False


def _first_message(data: Any) -> dict[str, Any] | None:
    """``choices[0].message`` when the reply has that shape, else None."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    return message if isinstance(message, dict) else None


def _tool_names(calls: Any) -> str:
    names = [str((c.get("function") or {}).get("name") or "?")
             if isinstance(c, dict) and isinstance(c.get("function") or {}, dict) else "?"
             for c in (calls if isinstance(calls, list) else [calls])]
    return clip(", ".join(names))


def _reason(exc: BaseException) -> str:
    """An exception as one line; some transport errors carry no message at all."""
    text = " ".join(str(exc).split())
    return clip(text) if text else type(exc).__name__


def _rejects_format(reply: _Reply) -> bool:
    return bool(_FORMAT_REJECTED.search(reply.text))


def _error_message(reply: _Reply) -> str:
    """The server's own error message when it sent the usual ``{"error": {...}}`` body."""
    try:
        body = loads(reply.body)
    except NotJSON:
        return preview(reply.text)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return clip(error["message"])
    if isinstance(error, str):
        return clip(error)
    return preview(reply.text)
