"""The ``lockgate`` command under hostile input: every failure is a short message on stderr with
a non-zero exit status, never a Python traceback; Ctrl-C ends ``run`` promptly and the run is
left resumable; progress piped to a file is plain whole lines."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from lockgate.cli import main
from lockgate.cli.runs import RUN_STATUSES
from lockgate.engine.model import RUN_STATUSES as ENGINE_RUN_STATUSES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
HEALTH = EXAMPLES / "health.stratum.yaml"


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    monkeypatch.delenv("LOCKGATE_DEBUG", raising=False)
    return tmp_path


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def lockgate(*args: str, cwd: Path, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LOCKGATE_STORE", None)
    env.pop("LOCKGATE_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "lockgate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False, **kwargs)


def assert_short_error(proc, code: int = 1) -> None:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert 1 <= len(proc.stderr.strip().splitlines()) <= 2, proc.stderr


def test_a_binary_spec_is_a_usage_error(scratch):
    (scratch / "bin.stratum.yaml").write_bytes(b"\xb3\x00\xff" * 100)
    result = invoke("run", "bin.stratum.yaml")
    assert result.exit_code == 2
    assert result.stderr.strip() == ("error: the spec is invalid: the document is not UTF-8 text "
                                     "(invalid byte 0xB3 at byte 0)")


def test_an_unexpected_error_is_one_line_without_traceback(scratch):
    proc = lockgate("schema", "--output", str(scratch / "no" / "such" / "dir" / "s.json"), cwd=scratch)
    assert_short_error(proc, 74)  # a file it cannot write: sysexits' EX_IOERR, not 1 (review s12 late #3)
    assert "No such file or directory" in proc.stderr


def test_lockgate_debug_lets_the_traceback_through(scratch):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LOCKGATE_DEBUG": "1"}
    proc = subprocess.run([sys.executable, "-m", "lockgate", "schema", "--output",
                           str(scratch / "missing" / "s.json")], cwd=scratch, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1 and "Traceback" in proc.stderr


@pytest.mark.parametrize("args, message, code", [
    (("graph", "."), ".: is a directory; give a spec file or a run id", 1),
    (("graph", "nope", "--store", "garbage://x"), "unknown store URL scheme", 1),
    (("graph", "nope", "--store", "notdb.db"), "file is not a database", 1),
    (("graph", str(HEALTH), "-o", "missing/g.svg"), "cannot write missing/g.svg", 74),
])
def test_graph_failures_are_short(scratch, args, message, code):
    (scratch / "notdb.db").write_text("not SQLite at all\n" * 100)
    proc = lockgate(*args, cwd=scratch)
    assert_short_error(proc, code)
    assert message in proc.stderr


@pytest.mark.parametrize("store", ["notdb.db", ".", "garbage://x"])
def test_bad_stores_are_short_errors(scratch, store):
    (scratch / "notdb.db").write_text("not SQLite at all\n" * 100)
    for args in (("runs", "--store", store), ("show", "r1", "--store", store),
                 ("run", str(HEALTH), "--input", "root=.", "--store", store)):
        assert_short_error(lockgate(*args, cwd=scratch))


def test_runs_status_is_checked(scratch):
    assert set(RUN_STATUSES) == set(ENGINE_RUN_STATUSES)
    result = invoke("runs", "--status", "bogus", "--store", "memory")
    assert result.exit_code == 2 and "'bogus' is not one of" in result.stderr


def _commands(command: click.Command, path: str):
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _commands(sub, f"{path} {name}")


def test_every_command_and_option_has_help():
    for path, command in _commands(main, "lockgate"):
        assert (command.help or "").strip(), f"{path} has no help text"
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.help, f"{path} {param.opts} has no help text"


def test_input_errors_read_plainly(scratch):
    result = invoke("run", str(HEALTH), "--input", "root")
    assert result.stderr.strip() == "error: --input expects KEY=VALUE, got 'root'"
    (scratch / "in.json").write_text('{"root": 5}')
    result = invoke("run", str(HEALTH), "--inputs", "in.json", "--store", "memory")
    assert result.exit_code == 2
    assert result.stderr.count("input.root: expected string") == 1, result.stderr


# nine lists of nine, each of the one before: 9**9 strings once expanded, in 339 bytes
ALIAS_BOMB = ("root:\n  - &a [" + ", ".join(['"x"'] * 9) + "]\n" + "".join(
    f"  - &{name} [" + ", ".join([f"*{prev}"] * 9) + "]\n"
    for prev, name in zip("abcdefgh", "bcdefghi"))).encode()


@pytest.mark.parametrize("name, content, message", [
    ("in.json", b"\xb3\xff\x00", "error: --inputs: in.json is not UTF-8 text (byte 0)"),
    ("in.yaml", b"root: [1\n", ("error: --inputs: in.yaml is not valid JSON/YAML: expected ',' or ']', "
                                "but got '<stream end>' (line 2, column 1)")),
    ("in.json", b"{oops", ("error: --inputs: in.json is not valid JSON/YAML: Expecting property name "
                           "enclosed in double quotes (line 1, column 2)")),
    ("in.json", b"[1, 2]", "error: --inputs: in.json must hold an object of inputs"),
    ("in.yaml", ALIAS_BOMB, ("error: --inputs: in.yaml: aliases expand to more than 100,000 nodes "
                             "(line 7, column 9)")),
    ("in.yaml", b"root: " + b"[" * 10_000 + b"]" * 10_000,
     "error: --inputs: in.yaml: the document nests deeper than 64 levels (line 1, column 70)"),
    ("in.json", b'{"root": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
     "error: --inputs: in.json: the document nests too deeply to read"),
    ("in.json", b'{"root": ' + b"9" * 5000 + b"}",
     "error: --inputs: in.json: a number in it has more than 4,300 digits, too many to read"),
    ("in.yaml", b"root: " + b"9" * 5000,
     "error: --inputs: in.yaml: a number in it has more than 4,300 digits, too many to read"),
])
def test_bad_inputs_files_are_one_line(scratch, name, content, message):
    (scratch / name).write_bytes(content)
    result = invoke("run", str(HEALTH), "--inputs", name, "--store", "memory")
    assert result.exit_code == 2
    assert result.stderr.strip() == message


def test_inputs_within_the_limits_read_as_before(scratch):
    (scratch / "in.yaml").write_text("size: &n 5\nroot: *n\n")  # an alias, resolved as always
    result = invoke("run", str(HEALTH), "--inputs", "in.yaml", "--store", "memory")
    assert result.exit_code == 2
    assert "input.root: expected string" in result.stderr, result.stderr


@pytest.mark.parametrize("target", ["bin.yaml", "./bin.yaml"])
def test_an_agents_file_that_is_not_python_is_named(scratch, target):
    (scratch / "bin.yaml").write_bytes(b"\xb3\x00\xff" * 100)
    result = invoke("run", str(HEALTH), "--agents", target, "--input", "root=x", "--store", "memory")
    assert result.exit_code == 2
    assert result.stderr.strip() == (f"error: --agents: {target} is not a Python file; give a .py file "
                                     "or a dotted module name")


def test_a_config_file_that_is_not_text_is_named(scratch):
    (scratch / "bin.toml").write_bytes(b"u\xab\x02\x89")
    result = invoke("run", str(HEALTH), "--config", "bin.toml", "--input", "root=x", "--store", "memory")
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: bin.toml: invalid TOML: not UTF-8 text (byte 1)"


@pytest.mark.parametrize(("command", "code"), [("graph", 1), ("validate", 1), ("run", 2)])
def test_a_huge_spec_file_is_refused_without_reading_it(scratch, command, code):
    with open(scratch / "sparse.stratum.yaml", "wb") as handle:  # 1.5 GB on disk in no blocks
        os.truncate(handle.fileno(), 1_500 * 1024 * 1024)
    # in 800 MB of address space: reading the file whole would fail with MemoryError
    limit = 800 * 1024 * 1024
    proc = lockgate(command, "sparse.stratum.yaml", cwd=scratch,
                    preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
    assert proc.returncode == code, proc.stderr
    output = proc.stdout + proc.stderr
    assert "LG101" in output and "1,572,864,000 bytes" in output and "MemoryError" not in output, output


def test_the_spec_folders_configuration_supplies_the_agents(scratch):
    (scratch / "pkg").mkdir()
    (scratch / "pkg" / "a.py").write_text('def f():\n    """Doc."""\n')
    proc = lockgate("run", str(HEALTH), "--input", "root=pkg", cwd=scratch)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files"] == 1


FAILING_AGENT = textwrap.dedent('''
    def scanner(task):
        raise RuntimeError("the scanner could not reach the directory it was asked to list " * 3)
    ''')


def test_piped_progress_is_whole_plain_lines(scratch):
    (scratch / "agents.py").write_text(FAILING_AGENT)
    proc = lockgate("run", str(HEALTH), "--agents", "agents.py", "--input", "root=x", cwd=scratch)
    assert proc.returncode == 1
    assert "\x1b" not in proc.stderr and "\x1b" not in proc.stdout
    failed = [line for line in proc.stderr.splitlines() if line.startswith("failed ")]
    assert failed and all(line.endswith("asked to list") for line in failed), proc.stderr


SLOW_AGENT = textwrap.dedent('''
    import threading

    def scanner(task):
        threading.Event().wait(600)
    ''')


def test_ctrl_c_detaches_the_run_and_exits_promptly(scratch):
    (scratch / "agents.py").write_text(SLOW_AGENT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LOCKGATE_STORE", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "lockgate", "run", str(HEALTH), "--agents", "agents.py",
         "--input", "root=x"], cwd=scratch, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        # a shell's background job inherits an ignored SIGINT; give the CLI the default back
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    seen = []
    for line in proc.stderr:  # the agent is running once its step is reported started
        seen.append(line)
        if line.startswith("running"):
            break
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=30)
    stderr = "".join(seen) + rest
    assert proc.returncode == 130, stderr
    assert "is left as it was" in stderr and "Traceback" not in stderr
    listed = lockgate("runs", "--format", "json", cwd=scratch)
    assert [r["status"] for r in json.loads(listed.stdout)] == ["running"], listed.stdout


def test_an_odd_run_id_is_just_not_found(scratch):
    result = CliRunner().invoke(main, ["show", "a/../b;$(x)'\"", "--store", "memory"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no run with id")



FANOUT_SPEC = textwrap.dedent("""
    version: 1
    contracts:
      Echo:
        text: string
    flows:
      entry: main
      main:
        input:
          items: string[]
        output:
          from: "${each.output[0]}"
          contract: Echo
        steps:
          - id: each
            fanout:
              over: "${input.items}"
              concurrency: 8
              isolation: none
              require: all
              merge: sequential
              steps:
                - do: "Echo ${item}"
                  agent: echo
                  out: Echo
    """).lstrip()


def test_a_reader_that_goes_away_ends_the_command_quietly(scratch):
    (scratch / "fan.stratum.yaml").write_text(FANOUT_SPEC)
    (scratch / "agents.py").write_text('def echo(task):\n    return {"text": task.prompt}\n')
    items = json.dumps([f"item {i}" for i in range(300)])
    ran = invoke("run", "fan.stratum.yaml", "--agents", "agents.py", "--input", f"items={items}")
    assert ran.exit_code == 0, ran.stderr
    run_id = json.loads(invoke("runs", "--format", "json").stdout)[0]["run_id"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LOCKGATE_STORE", None)
    proc = subprocess.Popen([sys.executable, "-m", "lockgate", "audit", run_id], cwd=scratch,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().startswith(b"    1  ")
    proc.stdout.close()  # like `lockgate audit RUN | head -1`; the trail is far beyond a pipe's buffer
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert stderr == "", stderr


GATE_SPEC = textwrap.dedent("""
    version: 1
    contracts:
      Echo:
        text: string
    flows:
      entry: main
      main:
        input: {}
        output:
          from: "${work.output}"
          contract: Echo
        max_rounds: 2
        steps:
          - id: work
            do: "Work"
            agent: echo
            out: Echo
          - id: review
            after: [work]
            gate:
              on_approve: null
              on_revise: work
              on_kill: null
    """).lstrip()


def test_gate_prompts_end_in_a_single_colon(scratch):
    (scratch / "gate.stratum.yaml").write_text(GATE_SPEC)
    (scratch / "agents.py").write_text('def echo(task):\n    return {"text": task.prompt}\n')
    result = CliRunner().invoke(main, ["run", "gate.stratum.yaml", "--agents", "agents.py",
                                       "--store", "memory"], input="a\nfine\n")
    assert result.exit_code == 0, result.stderr
    assert "Decision [a]pprove / [r]evise / [k]ill: a" in result.stderr
    assert "Rationale (optional): fine" in result.stderr
    assert ": :" not in result.stderr


def test_reading_commands_never_create_a_store(scratch, monkeypatch):
    assert invoke("runs").stdout.startswith("no runs (no run store here: ")
    shown = invoke("show", "r1")
    assert shown.exit_code == 1 and "no run with id 'r1'" in shown.stderr
    assert not (scratch / ".lockgate").exists()
    typo = invoke("runs", "--store", "typo/runs.db")
    assert typo.exit_code == 1
    assert typo.stderr.strip() == ("error: no run store at typo/runs.db "
                                   "(`lockgate run` creates it; check --store or $LOCKGATE_STORE)")
    monkeypatch.setenv("LOCKGATE_STORE", "sqlite://elsewhere.db")
    assert "no run store at elsewhere.db" in invoke("gate", "approve", "r1", "review").stderr
    graphed = invoke("graph", "r1")
    assert graphed.exit_code == 1 and "there is no store at elsewhere.db" in graphed.stderr
    assert sorted(p.name for p in scratch.iterdir()) == []


def test_what_agents_print_stays_off_stdout(scratch):
    (scratch / "gate.stratum.yaml").write_text(GATE_SPEC)
    (scratch / "agents.py").write_text(
        'def echo(task):\n    print("debug: echoing")\n    return {"text": "done"}\n')
    proc = lockgate("run", "gate.stratum.yaml", "--agents", "agents.py", "--no-prompt",
                    "--store", "memory", cwd=scratch)
    assert proc.returncode == 3, proc.stderr
    assert json.loads(proc.stdout)["status"] == "await_gate"
    assert "debug: echoing" in proc.stderr


def test_a_multi_line_failure_keeps_lines_and_rows_whole(scratch):
    (scratch / "agents.py").write_text(
        'def scanner(task):\n    raise RuntimeError("line one\\nline two")\n')
    ran = invoke("run", str(HEALTH), "--agents", "agents.py", "--input", "root=x")
    assert ran.exit_code == 1
    run_id = json.loads(ran.stdout)["run_id"]
    assert "\\n" in ran.stdout  # the JSON summary keeps the message whole
    for output in (ran.stderr, invoke("show", run_id).stdout, invoke("why", run_id).stdout):
        assert "line one line two" in output
        assert not any(line.startswith("line two") for line in output.splitlines()), output


def test_an_oversized_spec_is_reported_without_its_text(scratch):
    (scratch / "huge.stratum.yaml").write_text("x: " + "a" * 11_000_000 + "\n")
    result = invoke("run", "huge.stratum.yaml")
    assert result.exit_code == 2
    assert "error LG101" in result.stderr and len(result.stderr) < 1000
