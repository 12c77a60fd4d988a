"""Expression evaluation speed: Lockgate closures vs Python ``eval`` vs ``simpleeval``.

Typical ``ensure`` expressions are evaluated side by side in one process:

- ``lockgate``: ``Expression.evaluate`` with a reused :class:`Bindings` (each bound value is
  validated once, as the engine does when it checks several predicates of one step);
- ``lockgate fresh``: ``Expression.evaluate`` with a plain dict, so every call re-validates
  the whole bound values it reads (JSON types, depth <= 128, cycles);
- ``eval``: Python ``eval`` of an equivalent pre-compiled code object (no type checks at all);
- ``simpleeval``: ``SimpleEval.eval`` of the same Python text, pre-parsed.

Prints the median time per evaluation and the ratios. Targets: lockgate within 2.5x of eval and
at least 10x faster than simpleeval. Run: ``python benchmarks/expr.py``.
"""

from __future__ import annotations

import statistics
import timeit

from simpleeval import SimpleEval

from lockgate.dsl.expr import Bindings, compile

CASES = [
    ("result.score >= 0.8 && len(result.items) > 0",
     "result['score'] >= 0.8 and len(result['items']) > 0"),
    ('"approved" in result.labels', "'approved' in result['labels']"),
    ('matches(result.title, "^[A-Z]")', "matches(result['title'], '^[A-Z]')"),
    ("all(result.checks)", "all(result['checks'])"),
    ("result.a.b.c == input.x", "result['a']['b']['c'] == input['x']"),
    ("result.items == input.items", "result['items'] == input['items']"),
]
VALUES = {
    "result": {"score": 0.93, "items": [1, 2, 3], "labels": ["draft", "approved"],
               "title": "Release notes", "checks": [True, True, True], "a": {"b": {"c": 7}}},
    "input": {"x": 7, "items": [1, 2, 3]},
}
REPEAT, NUMBER = 15, 5000


def _matches(text, pattern):
    import re
    return re.search(pattern, text) is not None


def medians_ns(*functions) -> list[float]:
    """Median ns per call of each function, measured interleaved so machine noise hits all alike."""
    runs: list[list[float]] = [[] for _ in functions]
    for _ in range(REPEAT):
        for function, times in zip(functions, runs):
            times.append(timeit.timeit(function, number=NUMBER) / NUMBER * 1e9)
    return [statistics.median(times) for times in runs]


def main() -> None:
    namespace = {**VALUES, "matches": _matches, "__builtins__": {"len": len, "all": all}}
    simple = SimpleEval(names=dict(VALUES), functions={"len": len, "all": all, "matches": _matches})
    bindings = Bindings(VALUES)
    print(f"{'expression':48} {'lockgate':>9} {'fresh':>9} {'eval':>9} {'simpleev':>9}"
          f" {'lg/eval':>8} {'simple/lg':>9}")
    for source, python in CASES:
        expr, code, tree = (compile(source), __builtins__.compile(python, "<case>", "eval"),
                            simple.parse(python))
        assert expr.evaluate(bindings) == eval(code, namespace) == simple.eval(python, previously_parsed=tree)
        ours, fresh, native, peer = medians_ns(
            lambda e=expr: e.evaluate(bindings), lambda e=expr: e.evaluate(VALUES),
            lambda c=code: eval(c, namespace),
            lambda p=python, t=tree: simple.eval(p, previously_parsed=t))
        print(f"{source:48} {ours:8.0f}n {fresh:8.0f}n {native:8.0f}n {peer:8.0f}n"
              f" {ours / native:7.2f}x {peer / ours:8.1f}x")


if __name__ == "__main__":
    main()
