"""A real IPython kernel for tests: start it, run cells, collect what a notebook would show."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from jupyter_client.manager import start_new_kernel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: The example most kernel tests run: agent codex does the work, then gate review decides on it.
REVIEWED_WORK = (EXAMPLES / "reviewed-work.stratum.yaml").read_text()
#: A cell defining ``agents``: a codex whose work passes its checks at once.
DONE_AGENTS = 'agents = {"codex": lambda task: {"result": "done", "quality_score": 0.9}}'


@dataclass
class CellOutput:
    """What one executed cell showed: streams, rich outputs, and its error (if any)."""

    stdout: str = ""
    stderr: str = ""
    data: list[dict] = field(default_factory=list)
    error: dict | None = None

    @property
    def traceback(self) -> str:
        return "\n".join(self.error["traceback"]) if self.error else ""

    @property
    def shown(self) -> str:
        """Everything the cell showed as text (streams, text/plain of outputs, the error)."""
        texts = [d.get("text/plain", "") for d in self.data]
        return "\n".join([self.stdout, self.stderr, *texts, self.traceback])


class KernelSession:
    """One kernel with the extension loaded, in ``cwd``."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(cwd))
        self.run("%load_ext lockgate")

    def bind(self, **specs: str) -> None:
        """Write each spec text to NAME.yaml in the kernel's folder and bind it to variable NAME
        with ``%%flow NAME``, all in one cell whose output is suppressed."""
        for name, text in specs.items():
            (self.cwd / f"{name}.yaml").write_text(text)
        self.run("import pathlib\n" + "".join(
            f'get_ipython().run_cell_magic("flow", "{name}", pathlib.Path("{name}.yaml").read_text());'
            for name in specs))

    def run(self, code: str, *, timeout: float = 120, interrupt_on: str | None = None) -> CellOutput:
        """Execute ``code`` and wait for the kernel to be idle again.

        ``interrupt_on``: interrupt the kernel (as the stop button does) as soon as the cell
        prints a line containing this text.
        """
        msg_id = self.client.execute(code)
        out = CellOutput()
        while True:
            msg = self.client.get_iopub_msg(timeout=timeout)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content["execution_state"] == "idle":
                return out
            if kind == "stream":
                setattr(out, content["name"], getattr(out, content["name"]) + content["text"])
                if interrupt_on and interrupt_on in content["text"]:
                    interrupt_on = None
                    self.manager.interrupt_kernel()
            elif kind in ("execute_result", "display_data", "update_display_data"):
                out.data.append(content["data"])
            elif kind == "error":
                out.error = content

    def value(self, expression: str):
        """The repr of ``expression`` evaluated in the kernel, parsed back with ``eval``."""
        out = self.run(f"print(repr(({expression})))")
        assert out.error is None, out.traceback
        return eval(out.stdout)  # noqa: S307 - a repr this test suite produced

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
