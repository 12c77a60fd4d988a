"""Unknown contract references cost work in proportion to their number, not to their number
times the contracts declared (review s11, finding 1: 4,000 contracts each naming a missing one
took 42 s to validate, 8,000 took 323 s, since every unknown name was compared with every
contract). The work is counted (names compared by difflib, names case-folded), not timed."""

from __future__ import annotations

import difflib

import pytest

from lockgate.dsl import contractdecls
from lockgate.dsl.checks.suggest import did_you_mean
from lockgate.dsl.contracts import ContractSet
from lockgate.dsl.loader import load

N = 3000


class Compared(Exception):
    """More names compared than the bound allows: the work is not linear."""


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many candidates each difflib.get_close_matches call got; raises once they add up to
    more than 25 per unknown reference of an :data:`N`-reference spec, so that a quadratic
    check fails at once instead of running for minutes."""
    sizes: list[int] = []
    real = difflib.get_close_matches

    def counting(word, possibilities, *args, **kwargs):
        possibilities = list(possibilities)
        sizes.append(len(possibilities))
        if sum(sizes) > 25 * N:
            raise Compared(f"{sum(sizes):,} names compared in {len(sizes):,} calls")
        return real(word, possibilities, *args, **kwargs)

    monkeypatch.setattr(difflib, "get_close_matches", counting)
    return sizes


def refs_spec(n: int, field_type: str = "Missing{i}") -> str:
    body = "".join(f"  Contract{i}:\n    a: {field_type.format(i=i)}\n" for i in range(n))
    return f"version: 1\ncontracts:\n{body}"


def test_thousands_of_unknown_references_are_checked_in_linear_work(compared: list[int]) -> None:
    result = load(refs_spec(N))
    unknown = [d for d in result.diagnostics if d.code == "LG302"]
    assert len(unknown) == N
    assert unknown[0].message == 'unknown contract "Missing0"'
    assert len(compared) <= contractdecls.MAX_SUGGESTED + 10


def test_misspelt_lowercase_types_are_checked_in_linear_work(compared: list[int]) -> None:
    result = load(refs_spec(N, "contrct{i}"))
    assert sum(d.code == "LG301" for d in result.diagnostics) == N


def test_unknown_outs_are_checked_in_linear_work(compared: list[int]) -> None:
    """Steps naming missing contracts go through did_you_mean (checks and lint), whose pool is
    prepared once; their hint names a few declared contracts, not all of them."""
    steps = "".join(f"      - id: s{i}\n        do: x\n        agent: claude\n        out: Missing{i}\n"
                    for i in range(N))
    text = refs_spec(N, "string") + f"flows:\n  entry: f\n  f:\n    steps:\n{steps}"
    found = [d for d in load(text).diagnostics if d.code == "LG302"]
    assert len(found) == N
    assert found[0].hint.startswith("declared contracts: Contract0, Contract1, ")
    assert found[0].hint.endswith(f" and {N - 20:,} more")


def test_did_you_mean_prepares_a_pool_once() -> None:
    """Asked about many words among the same names, the names are case-folded a bounded
    number of times (each word used to fold every name again)."""
    folded = [0]

    class Name(str):
        def lower(self) -> str:
            folded[0] += 1
            if folded[0] > 10 * N:
                raise Compared(f"{folded[0]:,} names folded")
            return str.lower(self)

    names = [Name(f"Contract{i}") for i in range(N)]
    assert [did_you_mean(f"Contarct{i}", names) for i in range(0, N, 3)] == [f"Contract{i}" for i in range(0, N, 3)]


def test_suggestions_among_many_contracts_are_still_the_intended_name() -> None:
    contracts = {f"Review{i}": {"a": "string"} for i in range(N)} | {"Draft": {"a": "string"}}
    contracts["User"] = {"a": "Reveiw1234", "b": "reveiw77", "c": "Drfat[]", "d": "Review5?"}
    issues = {f.path[-1]: f for f in ContractSet.from_decls(contracts).issues}
    assert sorted(issues) == ["a", "b", "c"]
    assert (issues["a"].code, issues["a"].replacement) == ("LG302", "Review1234")
    assert (issues["b"].code, issues["b"].replacement) == ("LG301", "Review77")
    assert (issues["c"].code, issues["c"].replacement) == ("LG302", "Draft")


def test_past_the_bound_unknown_names_are_still_reported_without_a_guess() -> None:
    n = contractdecls.MAX_SUGGESTED + 50
    contracts = {f"Contract{i}": {"a": f"Contract{i}x"} for i in range(n)}
    issues = ContractSet.from_decls(contracts).issues
    assert len(issues) == n
    assert issues[0].message == 'unknown contract "Contract0x"; did you mean Contract0?'
    assert issues[-1].message == f'unknown contract "Contract{n - 1}x"'
