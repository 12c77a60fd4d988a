"""``lockgate run --inputs FILE`` reads no more of FILE than a spec may hold (review s13b F2):
a larger regular file is refused by its size before it is read, and a pipe or a device that
never ends (``/dev/zero``) after one byte past the limit, in bounded memory. The ``lockgate``
command runs in a subprocess, its address space capped well below what reading such a file
whole takes."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest
from cli_support import lockgate_argv, lockgate_env

from lockgate.dsl.yamlsrc import MAX_DOCUMENT_CHARS

ROOT = Path(__file__).resolve().parents[2]
HEALTH = ROOT / "examples" / "health.stratum.yaml"
LIMIT = (f"an inputs file may have at most {MAX_DOCUMENT_CHARS:,} bytes "
         f"({MAX_DOCUMENT_CHARS // (1024 * 1024)} MiB), as a spec may")
#: the address space the command may use: enough to start and run, far too little for 2 GB
MEMORY_CAP = 1 << 30


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run_with_inputs(cwd: Path, inputs: str, *, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run(lockgate_argv("run", str(HEALTH), "--store", "memory", "--no-prompt",
                                        "--inputs", inputs),
                          cwd=cwd, env=lockgate_env(), stdin=stdin, capture_output=True, text=True,
                          timeout=120, check=False, preexec_fn=_capped)


def test_a_file_larger_than_a_spec_is_refused_by_its_size(tmp_path):
    big = tmp_path / "in.json"
    with big.open("wb") as handle:  # sparse: 2 GB long, no disk used
        handle.truncate(2 * 1024 ** 3)
    proc = run_with_inputs(tmp_path, "in.json")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == f"error: --inputs: in.json is 2,147,483,648 bytes; {LIMIT}"


def test_a_device_that_never_ends_is_refused_after_the_limit(tmp_path):
    proc = run_with_inputs(tmp_path, "/dev/zero")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"error: --inputs: /dev/zero is more than {MAX_DOCUMENT_CHARS:,} bytes; "
                                   f"{LIMIT}")


def test_an_endless_pipe_is_refused_after_the_limit(tmp_path):
    writer = subprocess.Popen(["yes", '{"root": "x"}'], stdout=subprocess.PIPE)
    try:
        proc = run_with_inputs(tmp_path, "/dev/stdin", stdin=writer.stdout)
    finally:
        writer.stdout.close()
        writer.kill()
        writer.wait()
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"error: --inputs: /dev/stdin is more than {MAX_DOCUMENT_CHARS:,} bytes; "
                                   f"{LIMIT}")


def test_a_fifo_within_the_limit_is_read_as_a_file_is(tmp_path):
    fifo = tmp_path / "in.yaml"
    os.mkfifo(fifo)
    proc = subprocess.Popen(lockgate_argv("run", str(HEALTH), "--store", "memory", "--no-prompt",
                                          "--inputs", "in.yaml"),
                            cwd=tmp_path, env=lockgate_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_capped)
    try:
        with fifo.open("w") as handle:  # opens once the command opens it to read
            handle.write("root: 5\n")
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 2, stderr
    assert "input.root: expected string" in stderr, stderr


@pytest.mark.parametrize("extra", [0, 1])
def test_the_limit_is_exact(tmp_path, extra):
    pad = MAX_DOCUMENT_CHARS + extra - len('{"root": 5, "pad": ""}')
    (tmp_path / "in.json").write_text('{"root": 5, "pad": "' + "x" * pad + '"}')
    proc = run_with_inputs(tmp_path, "in.json")
    assert proc.returncode == 2, proc.stderr
    if extra:
        assert proc.stderr.strip() == f"error: --inputs: in.json is {MAX_DOCUMENT_CHARS + 1:,} bytes; {LIMIT}"
    else:
        assert "input.root: expected string" in proc.stderr, proc.stderr
