"""The flows and agents module the tests of a run's recorded judge share (review s10): a flow
whose steps have judged ensures, and agents whose judges log every verdict they give."""

#: An answer (an agent's step, judged), a gate, then a judged ``set`` step: an approve reaches
#: a judged ensure in the process deciding it.
GATED_SPEC = """version: 1
contracts:
  Answer: {answer: string}
flows:
  entry: research
  research:
    input: {question: string}
    max_rounds: 2
    output: {from: "${final.output}", contract: Answer}
    steps:
      - id: answer
        do: "Answer ${input.question}"
        agent: writer
        out: Answer
        ensure:
          - judged: {statement: "The answer is supported", stakes: default}
      - id: review
        after: [answer]
        gate: {on_approve: final, on_revise: answer, on_kill: null}
      - id: final
        after: [review]
        set: {answer: "result.answer.answer"}
        out: Answer
        ensure:
          - judged: {statement: "The final answer is supported", stakes: default}
"""

#: ``writer`` answers; ``judge`` and ``other`` hold, each logging to its own file beside the module.
JUDGE_AGENTS = """from pathlib import Path

def writer(task):
    return {"answer": "a"}

def judge(task):
    with open(Path(__file__).with_name("judged.log"), "a") as log:
        log.write("judged\\n")
    return {"holds": True, "reason": "ok"}

def other(task):
    with open(Path(__file__).with_name("other.log"), "a") as log:
        log.write("judged\\n")
    return {"holds": True, "reason": "ok"}
"""
