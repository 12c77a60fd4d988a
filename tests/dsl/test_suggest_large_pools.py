"""Did-you-mean over a generated spec's thousands of names: still the intended name, found from a
shortlist of candidates sharing the word's rarer trigrams rather than by comparing every one."""

from lockgate.dsl.checks.suggest import FULL_COMPARE, did_you_mean

STEPS = [f"step_{i:05d}" for i in range(3000)]


def test_a_transposition_in_a_large_pool_is_still_found():
    assert did_you_mean("stpe_00021", STEPS) == "step_00021"
    assert did_you_mean("Step_01234", STEPS) == "step_01234"


def test_names_of_several_shapes():
    pool = [f"{kind}_{i}" for i in range(300) for kind in ("draft", "review", "publish")]
    assert len(pool) > FULL_COMPARE
    assert did_you_mean("reveiw_17", pool) == "review_17"
    assert did_you_mean("pubilsh_299", pool) == "publish_299"


def test_nothing_close_is_nothing():
    assert did_you_mean("zzz", STEPS) is None
    assert did_you_mean("", STEPS) is None
