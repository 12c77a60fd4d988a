"""A notebook's store stays where its first run went: a ``%cd`` afterwards does not hide the
notebook's runs from ``%flow runs`` nor send new runs to another file (a real kernel)."""

from __future__ import annotations

from kernel_session import KernelSession

SPEC = """version: 1
contracts:
  W: {result: string}
flows:
  entry: pub
  pub:
    input: {text: string}
    output: {from: "${work.output}", contract: W}
    steps:
      - {id: work, do: "Produce ${input.text}", agent: codex, out: W}
      - id: review
        after: [work]
        gate: {on_approve: null, on_revise: null, on_kill: null}
"""


def test_a_cd_after_a_run_started_keeps_the_notebooks_store(tmp_path):
    (tmp_path / "data").mkdir()
    kernel = KernelSession(tmp_path)
    try:
        kernel.bind(pub=SPEC)
        kernel.run('def codex(task):\n    return {"result": "done"}')
        kernel.run('run = pub.start({"text": "t"}, agents={"codex": codex})\n'
                   'await run.wait_until(lambda r: "review" in r.waiting_gates())')
        run_id = kernel.value("run.run_id")
        kernel.run("%cd data")
        listed = kernel.run("%flow runs")
        assert run_id in listed.stdout, listed.shown
        second = kernel.run('again = pub.start({"text": "u"}, agents={"codex": codex})\n'
                            'await again.wait_until(lambda r: "review" in r.waiting_gates())')
        assert second.error is None, second.shown
        assert kernel.value("again.run_id") in kernel.run("%flow runs").stdout
        kernel.run("%reload_ext lockgate")  # the same kernel session: the same store
        assert run_id in kernel.run("%flow runs").stdout
        assert not (tmp_path / "data" / ".lockgate").exists()
        assert (tmp_path / ".lockgate" / "lockgate.db").exists()
    finally:
        kernel.run("%cd ..")
        kernel.close()
