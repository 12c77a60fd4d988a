"""The merge of an engine-dispatch ``isolation: worktree`` fanout is safe to replay and to resume
in a real git repository: a transition that dies between two patches (or between a ``git apply``
and its record) and is resumed applies each patch once and reports none as not merged; one
replayed because another writer saved first runs ``pre_merge`` once; one that finds the run
cancelled merges nothing more and what it merged is in the audit."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from engine_support import drive

from lockgate.engine import Engine, worktrees
from lockgate.engine.store import MemoryStore
from lockgate.errors import EngineError

SPEC = """
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {xs: "string[]"}
    output: {from: "${fan.output[0]}", contract: Note}
    steps:
      - id: fan
        fanout:
          over: "${input.xs}"
          concurrency: 3
          isolation: worktree
          require: all
          merge: sequential
          pre_merge: ["echo ran >> PRE_LOG"]
          steps:
            - do: "work ${item}"
              out: Note
"""


def git(cwd: Path | str, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    (root / "base.txt").write_text("one\ntwo\nthree\n")
    (root / "gone.txt").write_text("item a deletes this\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "base")
    return root


def spec(repo: Path) -> str:
    return SPEC.replace("PRE_LOG", str(repo.parent / "pre.log"))


def work(entry: Mapping[str, Any]) -> dict[str, str]:
    """Each item writes ITEM.txt in its worktree (item a also deletes gone.txt: a patch that does
    not apply twice); a result held by a dead process is reported again."""
    if "reported" in entry:
        return entry["reported"]["result"]
    cwd = Path(entry["cwd"])
    (cwd / f"{entry['item']}.txt").write_text(f"made by {entry['item']}\n")
    if entry["item"] == "a":
        (cwd / "gone.txt").unlink()
    return {"text": entry["item"]}


def staged(repo: Path) -> list[str]:
    return sorted(git(repo, "diff", "--cached", "--name-only").split())


def events(engine: Engine, run: str, kind: str) -> list[dict[str, Any]]:
    return [e["detail"] for e in engine.audit(run)["events"] if e["type"] == kind]


def killed_at_second_patch(monkeypatch: pytest.MonkeyPatch, *, after_apply: bool) -> None:
    """The process dies at the second ``git apply`` of a merge: before it, or right after it
    (before the merge records it)."""
    real, calls = worktrees.apply_patch, []

    def apply(workspace: Path, patch: str, paths: list[str]) -> str | None:
        calls.append(patch)
        if len(calls) == 2:
            if after_apply:
                real(workspace, patch, paths)
            raise KeyboardInterrupt
        return real(workspace, patch, paths)

    monkeypatch.setattr(worktrees, "apply_patch", apply)


@pytest.mark.parametrize("after_apply", [False, True])
def test_a_merge_killed_between_patches_is_resumed_without_applying_any_twice(
        repo: Path, monkeypatch: pytest.MonkeyPatch, after_apply: bool) -> None:
    store = MemoryStore()
    engine = Engine(store=store, workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a", "b", "c"]})["run_id"]
    killed_at_second_patch(monkeypatch, after_apply=after_apply)
    with pytest.raises(KeyboardInterrupt):
        drive(engine, run, work)
    monkeypatch.undo()
    assert staged(repo) == (["a.txt", "b.txt", "gone.txt"] if after_apply else ["a.txt", "gone.txt"])

    fresh = Engine(store=store, workspace=repo)
    fresh.resume(run)
    done = drive(fresh, run, work)

    assert done["status"] == "complete", done
    assert staged(repo) == ["a.txt", "b.txt", "c.txt", "gone.txt"] and not (repo / "gone.txt").exists()
    assert (repo / "b.txt").read_text() == "made by b\n"
    assert events(fresh, run, "fanout_merge") == [{"items": [0, 1, 2]}]
    assert (repo.parent / "pre.log").read_text() == "ran\n"  # it passed before the kill
    assert git(repo, "worktree", "list").count("\n") == 1


def test_what_the_user_stages_between_a_kill_and_the_resume_does_not_pass_for_an_item(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kill lands after the journal noted that item b's patch goes in, before it did; the
    user stages a file of their own; the resume applies b (an index that merely changed since
    was taken for b's patch, and b's work was dropped)."""
    store = MemoryStore()
    engine = Engine(store=store, workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a", "b", "c"]})["run_id"]
    killed_at_second_patch(monkeypatch, after_apply=False)
    with pytest.raises(KeyboardInterrupt):
        drive(engine, run, work)
    monkeypatch.undo()
    (repo / "notes.txt").write_text("the user's own\n")
    git(repo, "add", "notes.txt")

    fresh = Engine(store=store, workspace=repo)
    fresh.resume(run)
    assert drive(fresh, run, work)["status"] == "complete"
    assert staged(repo) == ["a.txt", "b.txt", "c.txt", "gone.txt", "notes.txt"]


def deletes_and_edits(entry: Mapping[str, Any]) -> dict[str, str]:
    """Item a edits base.txt's first line; item b its last, and deletes gone.txt: b's patch no
    longer applies as it is once a's went in (git's 3-way fallback), and a deletion cannot be
    applied twice."""
    if "reported" in entry:
        return entry["reported"]["result"]
    cwd = Path(entry["cwd"])
    text = (cwd / "base.txt").read_text()
    if entry["item"] == "a":
        (cwd / "base.txt").write_text(text.replace("one", "ONE"))
    else:
        (cwd / "base.txt").write_text(text.replace("three", "THREE"))
        (cwd / "gone.txt").unlink()
    return {"text": entry["item"]}


@pytest.mark.parametrize("user_stages", [False, True])
def test_a_deletion_killed_right_after_it_went_in_is_not_applied_again(
        repo: Path, monkeypatch: pytest.MonkeyPatch, user_stages: bool) -> None:
    store = MemoryStore()
    engine = Engine(store=store, workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a", "b"]})["run_id"]
    killed_at_second_patch(monkeypatch, after_apply=True)
    with pytest.raises(KeyboardInterrupt):
        drive(engine, run, deletes_and_edits)
    monkeypatch.undo()
    if user_stages:
        (repo / "notes.txt").write_text("the user's own\n")
        git(repo, "add", "notes.txt")
    fresh = Engine(store=store, workspace=repo)
    fresh.resume(run)
    assert drive(fresh, run, deletes_and_edits)["status"] == "complete"
    assert git(repo, "show", ":base.txt") == "ONE\ntwo\nTHREE\n" and "gone.txt" in staged(repo)


def edits_base(entry: Mapping[str, Any]) -> dict[str, str]:
    """Item a edits base.txt's first line, item b its last."""
    if "reported" in entry:
        return entry["reported"]["result"]
    cwd = Path(entry["cwd"])
    text = (cwd / "base.txt").read_text()
    (cwd / "base.txt").write_text(text.replace("one", "ONE") if entry["item"] == "a" else
                                  text.replace("three", "THREE"))
    return {"text": entry["item"]}


def test_a_users_change_to_an_interrupted_items_own_file_stops_the_merge_and_says_so(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed after the journal noted item b's apply, before it went in; the user then stages a
    change of their own to base.txt, which b's patch changes too. Whether b is in cannot be told
    from the index: the merge stops saying so (it took b for merged and dropped its change)."""
    store = MemoryStore()
    engine = Engine(store=store, workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a", "b"]})["run_id"]
    killed_at_second_patch(monkeypatch, after_apply=False)
    with pytest.raises(KeyboardInterrupt):
        drive(engine, run, edits_base)
    monkeypatch.undo()
    (repo / "base.txt").write_text(git(repo, "show", ":base.txt") + "the user's line\n")
    git(repo, "add", "base.txt")
    fresh = Engine(store=store, workspace=repo)
    fresh.resume(run)
    done = drive(fresh, run, edits_base)
    assert done["status"] == "error" and done["error_type"] == "merge_failed"
    assert done["message"].startswith("fanout merge failed at item 1 (whether its patch went in cannot be told): "
                                      "its merge was interrupted, and its files were changed in the index since "
                                      "(base.txt). Merged before it: items [0]. The patches of items [1] are saved in ")
    assert "+THREE" in (repo / ".lockgate" / "unmerged" / run / "item-1.patch").read_text()


def test_a_deletion_of_a_path_holding_a_tab_killed_after_it_went_in_is_not_applied_again(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "old\tnotes.txt").write_text("bye\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "a file whose name holds a tab")

    def deletes(entry: Mapping[str, Any]) -> dict[str, str]:
        if "reported" in entry:
            return entry["reported"]["result"]
        cwd = Path(entry["cwd"])
        if entry["item"] == "a":
            (cwd / "a.txt").write_text("x\n")
        else:
            (cwd / "old\tnotes.txt").unlink()
        return {"text": entry["item"]}

    store = MemoryStore()
    engine = Engine(store=store, workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a", "b"]})["run_id"]
    killed_at_second_patch(monkeypatch, after_apply=True)
    with pytest.raises(KeyboardInterrupt):
        drive(engine, run, deletes)
    monkeypatch.undo()
    fresh = Engine(store=store, workspace=repo)
    fresh.resume(run)
    assert drive(fresh, run, deletes)["status"] == "complete"
    assert "old\tnotes.txt" not in git(repo, "ls-files", "-z").split("\0")


def killed_after_the_second_apply_then_resumed(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                              agent: Any) -> dict[str, Any]:
    store = MemoryStore()
    engine = Engine(store=store, workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a", "b"]})["run_id"]
    killed_at_second_patch(monkeypatch, after_apply=True)
    with pytest.raises(KeyboardInterrupt):
        drive(engine, run, agent)
    monkeypatch.undo()
    fresh = Engine(store=store, workspace=repo)
    fresh.resume(run)
    return drive(fresh, run, agent)


def test_a_conflict_the_interrupted_apply_left_is_reported_as_a_conflict(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def rewrites(entry: Mapping[str, Any]) -> dict[str, str]:
        if "reported" in entry:
            return entry["reported"]["result"]
        (Path(entry["cwd"]) / "base.txt").write_text(f"changed by {entry['item']}\n")
        return {"text": entry["item"]}

    done = killed_after_the_second_apply_then_resumed(repo, monkeypatch, rewrites)
    assert done["error_type"] == "merge_failed"
    assert done["message"].startswith("fanout merge failed at item 1, applied in part: its changes conflict with "
                                      "those merged before it in 'base.txt'")


def test_a_file_name_that_is_not_utf8_is_merged_across_a_kill(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    def creates(entry: Mapping[str, Any]) -> dict[str, str]:
        if "reported" in entry:
            return entry["reported"]["result"]
        name = b"a.txt" if entry["item"] == "a" else b"caf\xe9.txt"  # Latin-1: not UTF-8
        with open(os.path.join(os.fsencode(entry["cwd"]), name), "w") as out:
            out.write(f"made by {entry['item']}\n")
        return {"text": entry["item"]}

    assert killed_after_the_second_apply_then_resumed(repo, monkeypatch, creates)["status"] == "complete"
    assert b"caf\xe9.txt" in subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True,
                                            check=True).stdout


def test_the_users_unresolved_conflict_elsewhere_does_not_stop_the_merge(repo: Path) -> None:
    """base.txt is in conflict from a merge of the user's own; the items touch other files."""
    git(repo, "checkout", "-qb", "other")
    (repo / "base.txt").write_text("theirs\n")
    git(repo, "commit", "-qam", "theirs")
    git(repo, "checkout", "-q", "-")
    (repo / "base.txt").write_text("ours\n")
    git(repo, "commit", "-qam", "ours")
    subprocess.run(["git", "-C", str(repo), "merge", "other"], capture_output=True, check=False)
    engine = Engine(store=MemoryStore(), workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a", "b"]})["run_id"]
    assert drive(engine, run, work)["status"] == "complete"
    assert {"a.txt", "b.txt", "gone.txt"} <= set(staged(repo))


def the_users_conflict_in_base_txt(repo: Path) -> None:
    git(repo, "checkout", "-qb", "other")
    (repo / "base.txt").write_text("theirs\n")
    git(repo, "commit", "-qam", "theirs")
    git(repo, "checkout", "-q", "-")
    (repo / "base.txt").write_text("ours\n")
    git(repo, "commit", "-qam", "ours")
    subprocess.run(["git", "-C", str(repo), "merge", "other"], capture_output=True, check=False)


def test_an_item_killed_after_it_went_in_beside_the_users_own_conflict_is_not_applied_again(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index has no tree then (the user's conflict in base.txt): what an interrupted item's
    paths hold tells whether it went in (item b deletes gone.txt: it cannot go in twice)."""
    the_users_conflict_in_base_txt(repo)

    def b_deletes(entry: Mapping[str, Any]) -> dict[str, str]:
        if "reported" in entry:
            return entry["reported"]["result"]
        cwd = Path(entry["cwd"])
        (cwd / f"{entry['item']}.txt").write_text(f"made by {entry['item']}\n")
        if entry["item"] == "b":
            (cwd / "gone.txt").unlink()
        return {"text": entry["item"]}

    assert killed_after_the_second_apply_then_resumed(repo, monkeypatch, b_deletes)["status"] == "complete"
    assert {"a.txt", "b.txt", "gone.txt"} <= set(staged(repo))


def test_a_conflict_names_the_items_files_only_not_the_users_own(repo: Path) -> None:
    the_users_conflict_in_base_txt(repo)
    (repo / "a.txt").write_text("the user's a\n")
    git(repo, "add", "a.txt")
    engine = Engine(store=MemoryStore(), workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a"]})["run_id"]
    done = drive(engine, run, work)
    assert done["error_type"] == "merge_failed" and "'a.txt'" in done["message"]
    assert "base.txt" not in done["message"]


def test_text_that_is_not_utf8_in_files_the_repository_marks_as_text_is_refused_by_name(repo: Path) -> None:
    (repo / ".gitattributes").write_text("*.txt diff\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")

    def latin1(entry: Mapping[str, Any]) -> dict[str, str]:
        (Path(entry["cwd"]) / f"{entry['item']}.txt").write_bytes("caf\xe9\n".encode("latin-1"))
        return {"text": entry["item"]}

    engine = Engine(store=MemoryStore(), workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a"]})["run_id"]
    assert drive(engine, run, latin1)["status"] == "error"
    item = {t["step_id"]: t for t in engine.audit(run)["trace"]}["fan/0"]
    assert "hold text that is not UTF-8 or holds U+0000, in files the repository's .gitattributes mark as text" in (
        item["failure"]["reason"])


def test_an_item_changing_more_files_than_a_command_line_holds_is_merged(repo: Path) -> None:
    """20,000 paths of ~110 bytes: more than git's argument list may hold (review s10 R17 #1)."""
    def vendors(entry: Mapping[str, Any]) -> dict[str, str]:
        folder = Path(entry["cwd"]) / ("vendored-" + "x" * 80)
        folder.mkdir()
        for n in range(20_000):
            (folder / f"module-{n:05d}.py").write_text("")
        return {"text": entry["item"]}

    engine = Engine(store=MemoryStore(), workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a"]})["run_id"]
    assert drive(engine, run, vendors)["status"] == "complete"
    assert len(staged(repo)) == 20_000


def test_the_users_own_conflict_at_an_items_file_is_not_blamed_on_the_item(repo: Path) -> None:
    the_users_conflict_in_base_txt(repo)

    def rewrites_base(entry: Mapping[str, Any]) -> dict[str, str]:
        (Path(entry["cwd"]) / "base.txt").write_text("the item's\n")
        (Path(entry["cwd"]) / "a.txt").write_text("made by a\n")
        return {"text": entry["item"]}

    engine = Engine(store=MemoryStore(), workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a"]})["run_id"]
    done = drive(engine, run, rewrites_base)
    assert done["message"].startswith("fanout merge failed at item 0 (nothing of it was applied): ")
    assert "base.txt was in conflict before the merge, from a merge of the workspace's own" in done["message"]


def test_an_item_writing_a_nul_past_what_git_looks_at_to_tell_binary_is_merged(repo: Path) -> None:
    """git reads 8,000 bytes to tell a binary file: a NUL after them made a text patch no store
    keeps, applied, then refused as the item's result and sent again (review s10 R18 #1)."""
    calls: list[str] = []

    def writes_log(entry: Mapping[str, Any]) -> dict[str, str]:
        calls.append(entry["item"])
        (Path(entry["cwd"]) / "data.log").write_bytes(b"x" * 9000 + b"\n\0tail\n")
        return {"text": entry["item"]}

    engine = Engine(store=MemoryStore(), workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a"]})["run_id"]
    assert drive(engine, run, writes_log)["status"] == "complete" and calls == ["a"]
    shown = subprocess.run(["git", "-C", str(repo), "show", ":data.log"], capture_output=True, check=True).stdout
    assert shown == b"x" * 9000 + b"\n\0tail\n"


def test_an_item_writing_text_that_is_not_utf8_is_merged(repo: Path) -> None:
    """A Latin-1 file cannot be kept as the run's text: its patch is taken as a binary one."""
    def latin1(entry: Mapping[str, Any]) -> dict[str, str]:
        (Path(entry["cwd"]) / f"{entry['item']}.txt").write_bytes(f"caf\xe9 {entry['item']}\n".encode("latin-1"))
        return {"text": entry["item"]}

    engine = Engine(store=MemoryStore(), workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a", "b"]})["run_id"]
    assert drive(engine, run, latin1)["status"] == "complete"
    shown = subprocess.run(["git", "-C", str(repo), "show", ":a.txt"], capture_output=True, check=True).stdout
    assert shown == "caf\xe9 a\n".encode("latin-1")


def test_an_item_begun_twice_is_judged_by_its_last_beginning(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed before item a's apply, the user stages a file, killed again right after it: the
    journal's second 'applying' line is the one that says what the index held."""
    store = MemoryStore()
    run = Engine(store=store, workspace=repo).plan(spec(repo), {"xs": ["a", "b"]})["run_id"]
    real = worktrees.apply_patch

    def dies(after: bool) -> Any:
        def apply(workspace: Path, patch: str, paths: list[str]) -> None:
            if after:
                real(workspace, patch, paths)
            raise KeyboardInterrupt
        return apply

    for after in (False, True):
        monkeypatch.setattr(worktrees, "apply_patch", dies(after))
        engine = Engine(store=store, workspace=repo)
        engine.resume(run)
        with pytest.raises(KeyboardInterrupt):
            drive(engine, run, work)
        monkeypatch.undo()
        if not after:
            (repo / "notes.txt").write_text("the user's own\n")
            git(repo, "add", "notes.txt")
    last = Engine(store=store, workspace=repo)
    last.resume(run)
    assert drive(last, run, work)["status"] == "complete"
    assert staged(repo) == ["a.txt", "b.txt", "gone.txt", "notes.txt"]


BLOCK = "def f():\n    x = 1\n    z = 0\n    y = 2\n    return x + y\n    # end\n    pass\n"


def test_items_making_the_same_change_in_two_copies_of_a_block_are_both_merged(repo: Path) -> None:
    """Each item changes ``y = 2`` in its own copy of a duplicated block. Item b's change, read in
    reverse, matches item a's at an offset: a merge asking git whether b "applies in reverse"
    took it for applied and dropped it, silently."""
    (repo / "dup.py").write_text(BLOCK + "mid\n" * 20 + BLOCK)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "two copies")

    def edit(entry: Mapping[str, Any]) -> dict[str, str]:
        path = Path(entry["cwd"]) / "dup.py"
        lines = path.read_text().splitlines(keepends=True)
        at = 3 if entry["item"] == "a" else 30  # the y = 2 line of the first and the second copy
        lines[at] = lines[at].replace("y = 2", "y = 3")
        path.write_text("".join(lines))
        return {"text": entry["item"]}

    engine = Engine(store=MemoryStore(), workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a", "b"]})["run_id"]
    assert drive(engine, run, edit)["status"] == "complete"
    staged_text = git(repo, "show", ":dup.py")
    assert staged_text.count("y = 3") == 2 and "y = 2" not in staged_text


def test_a_cancel_saved_while_pre_merge_runs_stops_the_merge(repo: Path) -> None:
    store = MemoryStore()
    engine = Engine(store=store, workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a", "b"]})["run_id"]
    real = worktrees.run_pre_merge

    def cancelled_meanwhile(workspace: Path, commands: tuple[str, ...]) -> str | None:
        Engine(store=store, workspace=repo).cancel(run, "stop")  # another process, as `lockgate cancel`
        return real(workspace, commands)

    worktrees.run_pre_merge = cancelled_meanwhile  # type: ignore[assignment]
    try:
        with pytest.raises(EngineError) as refused:
            drive(engine, run, work)
    finally:
        worktrees.run_pre_merge = real  # type: ignore[assignment]
    assert refused.value.error_type == "run_cancelled"
    assert staged(repo) == []
    assert events(engine, run, "fanout_merge") == []
    assert engine.status(run)["status"] == "cancelled"


def test_what_a_merge_applied_before_a_cancel_stopped_it_is_in_the_audit(repo: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore()
    engine = Engine(store=store, workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a", "b"]})["run_id"]
    real, calls = worktrees.apply_patch, []

    def cancelled_after_the_first(workspace: Path, patch: str, paths: list[str]) -> str | None:
        problem = real(workspace, patch, paths)
        calls.append(patch)
        if len(calls) == 1:
            Engine(store=store, workspace=repo).cancel(run, "stop")  # another process, between two patches
        return problem

    monkeypatch.setattr(worktrees, "apply_patch", cancelled_after_the_first)
    with pytest.raises(EngineError) as refused:
        drive(engine, run, work)
    assert refused.value.error_type == "run_cancelled"
    assert staged(repo) == ["a.txt", "gone.txt"]  # item 1's patch was not applied
    (merged,) = events(engine, run, "fanout_merge")
    assert merged["items"] == [0] and merged["run_status"] == "cancelled"


def test_a_failed_pre_merge_saves_the_items_patches_and_says_where(repo: Path) -> None:
    engine = Engine(workspace=repo)
    run = engine.plan(SPEC.replace("echo ran >> PRE_LOG", "echo broken >&2; exit 3"), {"xs": ["a", "b"]})["run_id"]

    done = drive(engine, run, work)

    assert done["status"] == "error"
    assert "pre_merge command 'echo broken >&2; exit 3' exited 3: broken" in done["message"]
    folder = repo / ".lockgate" / "unmerged" / run
    assert f"Nothing was merged: the patches of items [0, 1] are saved in {folder}" in done["message"]
    assert "+made by b" in (folder / "item-1.patch").read_text()
    assert staged(repo) == []
    git(repo, "apply", "--index", str(folder / "item-0.patch"))  # they apply by hand
    assert staged(repo) == ["a.txt", "gone.txt"]


NAME = "my docs/read me, é.txt"


def conflicting(entry: Mapping[str, Any]) -> dict[str, str]:
    """Items a and b change the same line of NAME; item c writes c.txt."""
    path = Path(entry["cwd"]) / (NAME if entry["item"] in "ab" else "c.txt")
    path.write_text(f"changed by {entry['item']}\n")
    return {"text": entry["item"]}


def test_a_conflict_names_its_files_and_leaves_only_the_later_patches_to_apply(repo: Path) -> None:
    (repo / "my docs").mkdir()
    (repo / NAME).write_text("original\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "a file with a hard name")
    engine = Engine(workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a", "b", "c"]})["run_id"]

    done = drive(engine, run, conflicting)

    message = done["message"]
    assert done["error_type"] == "merge_failed"
    assert message.startswith(f"fanout merge failed at item 1, applied in part: its changes conflict with those "
                              f"merged before it in '{NAME}'; its other changes are staged.")
    assert f"Resolve the conflicts in '{NAME}'" in message and "then `git add` them" in message
    assert "then git apply --3way the patches of items [2] by hand (item 1's is saved for reference" in message
    assert "<<<<<<<" in (repo / NAME).read_text()


def test_a_patch_that_does_not_apply_at_all_is_not_said_applied_in_part(repo: Path) -> None:
    engine = Engine(workspace=repo)
    run = engine.plan(spec(repo), {"xs": ["a"]})["run_id"]
    (repo / "gone.txt").write_text("edited meanwhile, not staged\n")  # the index no longer matches it

    done = drive(engine, run, work)

    assert done["error_type"] == "merge_failed"
    assert done["message"].startswith("fanout merge failed at item 0 (nothing of it was applied): ")
    assert "applied in part" not in done["message"] and "(git apply --3way them by hand)" in done["message"]
    assert staged(repo) == []
