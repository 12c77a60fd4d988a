"""A SQLite store read through a path that may not be written, while another process writes it
through one that may (a live folder shared read-only, as a bind mount or a container volume
does): the reader sees what was written since it opened the store, and never takes the file
changing under it for damage. And a store path that is a symbolic link is judged by the folder
of the file it points to, where SQLite puts the ``-wal`` and ``-shm`` files.

The read-only view is a folder without write permission (permission bits count even for root,
as in CI); the other process's path is a hard link to the store file in a writable folder: its
``-shm`` file is not beside the reader's path, as none is in a shared folder when the writer
has closed the store."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from test_store_sqlite_readonly import HEADER, a_store, event, read_only

from lockgate.engine.store import SQLiteStore
from lockgate.engine.store import sqlite_open
from lockgate.errors import ReadOnlyStore, StoreError, StoreUnavailable


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(the store as readers see it, in a folder that may not be written; the same file as its
    writer sees it, in a writable folder). Run ``r`` is in it at version 2."""
    folder, live = tmp_path / "shared", tmp_path / "live"
    folder.mkdir()
    live.mkdir()
    path = folder / "s.db"
    a_store(path)
    os.link(path, live / "s.db")
    with read_only(folder):
        yield path, live / "s.db"


def write_runs(path: Path, names: range) -> None:
    """Another writer adds runs ``n<i>`` and closes the store: its last connection copies the log
    into the file and removes the log."""
    writer = SQLiteStore(path)
    for i in names:
        writer.create_run(f"n{i}", HEADER, {"x": {"n": i}}, [event(i)])
    writer.close()


def test_a_read_only_view_sees_runs_written_after_it_was_opened(shared: tuple[Path, Path]) -> None:
    path, live = shared
    reader = SQLiteStore(path)
    assert reader.read_only and [summary.run_id for summary in reader.list_runs()] == ["r"]
    assert reader.load_run("r").version == 2
    write_runs(live, range(300))
    writer = SQLiteStore(live)
    writer.save_run("r", expected_version=2, header=HEADER, steps={"x": {"n": 3}}, events=[event(4)])
    writer.close()
    assert len(reader.list_runs(limit=1000)) == 301
    assert all(reader.load_run(f"n{i}").steps == {"x": {"n": i}} for i in range(300))
    assert reader.load_run("r").steps == {"x": {"n": 3}} and reader.current_version("r") == 3
    assert [e.seq for e in reader.events("r")] == [1, 2, 3, 4] and reader.verify("r").ok
    reader.close()
    assert sorted(p.name for p in path.parent.iterdir()) == ["s.db"]


def test_a_read_only_view_reads_a_live_writer_through_its_shm_file(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    path = folder / "s.db"
    a_store(path)
    with read_only(folder):
        reader = SQLiteStore(path)
        assert reader.current_version("r") == 2
    writer = SQLiteStore(path)  # beside the reader's path, as in a live folder: its -wal and -shm too
    writer.save_run("r", expected_version=2, header=HEADER, steps={"x": {"n": 3}}, events=[event(4)])
    with read_only(folder):
        assert reader.current_version("r") == 3 and reader.load_run("r").steps == {"x": {"n": 3}}
        writer.save_run("r", expected_version=3, header=HEADER, steps={"x": {"n": 4}}, events=[event(5)])
        assert reader.current_version("r") == 4 and [e.seq for e in reader.events("r")] == [1, 2, 3, 4, 5]
    writer.close()
    reader.close()


def test_a_read_the_file_changed_under_is_made_again(
    shared: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, live = shared
    reader = SQLiteStore(path)
    assert reader.load_run("r").version == 2
    looked = sqlite_open.file_state
    looks: list[Path] = []

    def write_after_the_first_look(file: Path) -> object:
        """The writer adds runs n0..n99 once: after the reader looked at the file, before it reads."""
        state = looked(file)
        looks.append(file)
        if len(looks) == 1:
            write_runs(live, range(100))
        return state

    monkeypatch.setattr(sqlite_open, "file_state", write_after_the_first_look)
    assert reader.load_run("n50").steps == {"x": {"n": 50}}
    assert len(looks) > 2  # looked before and after the first read, then again for the second
    reader.close()


def test_a_view_the_file_changes_under_at_every_read_says_so_and_not_that_the_store_is_damaged(
    shared: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, live = shared
    reader = SQLiteStore(path, busy_timeout=0.05)
    assert reader.load_run("r").version == 2
    looked = sqlite_open.file_state
    written = iter(range(0, 10_000, 100))

    def write_after_looking(file: Path) -> object:
        """The writer adds runs each time the reader has looked at the file, before it reads."""
        state = looked(file)
        start = next(written)
        write_runs(live, range(start, start + 100))
        return state

    monkeypatch.setattr(sqlite_open, "file_state", write_after_looking)
    with pytest.raises(StoreUnavailable) as caught:
        reader.load_run("n50")
    assert str(caught.value) == (f"the store {path} changed while it was read through a read-only view (no -shm "
                                 "file beside it): run the command again")
    monkeypatch.undo()
    assert reader.load_run("n50").steps == {"x": {"n": 50}}
    reader.close()


def test_a_damaged_store_read_through_a_view_is_still_reported_as_damaged(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    path = folder / "s.db"
    a_store(path)
    with closing(sqlite3.connect(path)) as db:
        page = db.execute("PRAGMA page_size").fetchone()[0]
        (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'steps'").fetchone()
    with path.open("r+b") as file:  # the step records' table becomes noise
        file.seek((root - 1) * page)
        file.write(b"\xa5" * page)
    with read_only(folder):
        reader = SQLiteStore(path)
        with pytest.raises(StoreError, match="malformed") as caught:
            reader.load_run("r")
    assert not isinstance(caught.value, StoreUnavailable)


def test_a_link_in_a_read_only_folder_to_a_store_in_a_writable_one_is_written(tmp_path: Path) -> None:
    data, links = tmp_path / "data", tmp_path / "links"
    data.mkdir()
    links.mkdir()
    a_store(data / "s.db")
    (links / "s.db").symlink_to(data / "s.db")
    with read_only(links):
        store = SQLiteStore(links / "s.db")
        assert store.read_only is None
        assert store.save_run("r", expected_version=2, header=HEADER, steps={}, events=[event(4)]) == 3
        store.close()
        assert sorted(p.name for p in links.iterdir()) == ["s.db"]
    assert SQLiteStore(data / "s.db").current_version("r") == 3


def test_a_link_in_a_writable_folder_to_a_store_in_a_read_only_one_is_only_read(tmp_path: Path) -> None:
    data, links = tmp_path / "data", tmp_path / "links"
    data.mkdir()
    links.mkdir()
    a_store(data / "s.db")
    link = links / "s.db"
    link.symlink_to(data / "s.db")
    with read_only(data):
        store = SQLiteStore(link)
        assert store.read_only == f"its folder {data} is not writable"
        assert store.load_run("r").version == 2 and store.verify("r").ok
        with pytest.raises(ReadOnlyStore, match=rf"the store {link} is read-only \(its folder {data} is"):
            store.save_run("r", expected_version=2, header=HEADER, steps={}, events=[event(4)])
        store.close()
        assert sorted(p.name for p in data.iterdir()) == ["s.db"]
        assert sorted(p.name for p in links.iterdir()) == ["s.db"]
