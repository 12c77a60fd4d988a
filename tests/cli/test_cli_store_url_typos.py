"""A store URL with its ``//`` missing or cut (``postgresql:/alice:pw@host/team``) is refused,
saying how the URL is written, in every command: it used to name a SQLite file in a folder
called ``postgresql:``, so a team's run went to a private file and its hints showed the password."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from lockgate.cli import main
from lockgate.engine.store import open_store
from lockgate.errors import StoreError

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: Note}
    steps:
      - {id: a, do: "write", out: Note}
"""


@pytest.mark.parametrize("url, form", [
    ("postgresql:/alice:s3cret@127.0.0.1:5432/team", "postgresql://USER:PASSWORD@HOST[:PORT]/DATABASE"),
    ("postgres:alice:s3cret@db/team", "postgres://USER:PASSWORD@HOST[:PORT]/DATABASE"),
    ("SQLite:/runs.db", "sqlite:///ABSOLUTE/PATH.db"),
])
def test_a_mistyped_store_url_is_refused_and_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                url: str, form: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.yaml").write_text(SPEC)
    for args in (["run", "flow.yaml", "--store", url, "--no-prompt"], ["runs", "--store", url]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code != 0, result.output
        assert "is not a valid URL: its scheme needs two slashes" in result.output and form in result.output
        assert "s3cret" not in result.output
    assert list(tmp_path.iterdir()) == [tmp_path / "flow.yaml"]
    monkeypatch.setenv("LOCKGATE_STORE", url)
    assert "is not a valid URL" in CliRunner().invoke(main, ["runs"]).output


def test_paths_that_merely_hold_a_colon_are_still_sqlite_files(tmp_path: Path) -> None:
    for name in ("c:/runs.db", "postgresql-runs.db", "memory.db"):
        open_store(str(tmp_path / name)).close()
        assert (tmp_path / name).exists()
    with pytest.raises(StoreError, match="memory://"):
        open_store("memory:/x")


@pytest.mark.parametrize("url", ["Postgresql://alice:s3cret@dbhost/team", "postgresql+psycopg://alice:s3cret@db/t"])
def test_an_unknown_scheme_is_named_without_the_rest_of_the_url(url: str) -> None:
    with pytest.raises(StoreError) as refused:
        open_store(url)
    assert "unknown store URL scheme" in str(refused.value) and "s3cret" not in str(refused.value)
