"""`runner/store/created.settle_keep` (pure file logic, no runner): what a keep installs and later removes.

Files an earlier keep installed leave the workspace when the new best lacks them, only while they hold the bytes
the runner wrote; folders the runner made for them go once empty; the allowed_edit_paths the runner added for
them are returned to drop; a replay gives the same result; a damaged record is refused and removes nothing.
"""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

import pytest
from autofl_core.runner.outcome import CampaignError
from autofl_core.runner.store import created


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def paths(tmp_path):
    workspace = tmp_path / "ws"
    (workspace / ".nvflare" / "autofl").mkdir(parents=True)
    (workspace / "job.py").write_text("job\n")
    return SimpleNamespace(workspace=workspace, meta=workspace / ".nvflare" / "autofl")


def keep(paths, files: dict[str, str], created_files=(), allowed=("job.py",)) -> set[str]:
    """What finalize does for a keep: settle, then write the best's files (restore_workspace's part)."""
    best = {rel: sha(text) for rel, text in files.items()}
    drop = created.settle_keep(paths, best, candidate="c", created=list(created_files), allowed=list(allowed))
    for rel, text in files.items():
        (paths.workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (paths.workspace / rel).write_text(text)
    return drop


def test_a_later_best_without_an_installed_file_removes_it_and_its_folder(paths):
    assert keep(paths, {"job.py": "job\n", "pkg/helper.py": "A\n"}, ["pkg/helper.py"]) == set()
    assert (paths.workspace / "pkg" / "helper.py").exists()
    record = json.loads(created.installed_path(paths).read_text())
    assert record["files"] == {"pkg/helper.py": sha("A\n")} and record["folders"] == ["pkg"]
    assert record["edit_paths"] == ["pkg/helper.py"]
    assert keep(paths, {"job.py": "job v2\n"}) == {"pkg/helper.py"}
    assert not (paths.workspace / "pkg").exists()
    assert json.loads(created.installed_path(paths).read_text())["files"] == {}


def test_a_changed_installed_file_is_left_in_place_with_a_note(paths, capsys):
    keep(paths, {"job.py": "job\n", "helper.py": "A\n"}, ["helper.py"])
    (paths.workspace / "helper.py").write_text("mine\n")
    assert keep(paths, {"job.py": "job v2\n"}) == {"helper.py"}
    assert (paths.workspace / "helper.py").read_text() == "mine\n"
    assert "left helper.py in place: it changed after the runner created it" in capsys.readouterr().err


def test_user_files_and_user_edit_paths_are_never_touched(paths):
    (paths.workspace / "data.csv").write_text("x\n")
    drop = keep(paths, {"job.py": "job\n", "extra.py": "E\n"}, ["extra.py", "data.csv"], allowed=["job.py", "extra.py"])
    assert drop == set() and json.loads(created.installed_path(paths).read_text())["edit_paths"] == []
    assert keep(paths, {"job.py": "job v2\n"}) == set()  # extra.py was the user's edit path: not dropped
    assert (paths.workspace / "data.csv").read_text() == "x\n"


def test_a_replay_ends_in_the_same_record_and_files(paths):
    keep(paths, {"job.py": "job\n", "helper.py": "A\n"}, ["helper.py"])
    best = {"job.py": sha("job v2\n"), "other.py": sha("B\n")}
    first = created.settle_keep(paths, best, candidate="d", created=["other.py"], allowed=["job.py", "helper.py"])
    record = created.installed_path(paths).read_text()
    again = created.settle_keep(paths, best, candidate="d", created=["other.py"], allowed=["job.py", "helper.py"])
    assert first == again == {"helper.py"} and created.installed_path(paths).read_text() == record
    assert not (paths.workspace / "helper.py").exists()


@pytest.mark.parametrize(
    "document",
    [
        "{not json",
        json.dumps({"schema_version": "nvflare.autofl.installed.v1", "files": [], "folders": [], "edit_paths": []}),
        json.dumps(
            {"schema_version": "nvflare.autofl.installed.v1", "files": {"../x": "0"}, "folders": [], "edit_paths": []}
        ),
    ],
    ids=["not json", "files not a mapping", "path outside"],
)
def test_a_damaged_record_is_refused_and_removes_nothing(paths, document):
    (paths.workspace / "helper.py").write_text("A\n")
    created.installed_path(paths).write_text(document)
    with pytest.raises(CampaignError, match=r"installed\.json .*check the workspace by hand"):
        created.settle_keep(paths, {"job.py": sha("job\n")}, candidate="c", created=[], allowed=["job.py"])
    assert (paths.workspace / "helper.py").exists()
