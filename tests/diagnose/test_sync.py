"""shared/sync.py: rendered catalog copies are fresh, staleness is detected, --check writes nothing."""

import subprocess
from pathlib import Path

import pytest
from module_loader import load_by_path

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sync():
    return load_by_path("shared_sync", REPO / "shared" / "sync.py")


def test_committed_copies_equal_a_fresh_render(sync):
    for target in sync.targets():
        assert target.path.read_bytes() == target.render(), f"{target.path} is stale; run make sync"


def test_check_passes_on_the_repository(python_exe, repo_root):
    result = subprocess.run([python_exe, "shared/sync.py", "--check"], cwd=repo_root, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


def _tmp_targets(sync, tmp_path):
    return [
        sync.Target(
            tmp_path / "refs" / "failure_patterns.json", lambda: sync.render_catalog_json(sync.load_catalog_source())
        ),
        sync.Target(
            tmp_path / "refs" / "failure-patterns.md", lambda: sync.render_catalog_markdown(sync.load_catalog_source())
        ),
    ]


def test_stale_copy_is_detected_and_check_writes_nothing(sync, tmp_path, capsys):
    targets = _tmp_targets(sync, tmp_path)
    assert sync.main([], targets) == 0  # render into tmp
    assert sync.main(["--check"], targets) == 0
    targets[0].path.write_text("{}\n")
    before = {t.path: (t.path.read_bytes(), t.path.stat().st_mtime_ns) for t in targets}
    capsys.readouterr()
    assert sync.main(["--check"], targets) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "failure_patterns.json" in err[0] and "make sync" in err[0]
    assert {t.path: (t.path.read_bytes(), t.path.stat().st_mtime_ns) for t in targets} == before


def test_missing_copy_is_stale_and_sync_recreates_it(sync, tmp_path):
    targets = _tmp_targets(sync, tmp_path)
    assert sync.main(["--check"], targets) == 1
    assert not targets[1].path.exists()
    assert sync.main([], targets) == 0
    assert targets[1].path.read_bytes() == targets[1].render()
    assert not [p for p in (tmp_path / "refs").iterdir() if p.name.endswith(".tmp")]


def test_markdown_has_every_row_and_the_mapping_rules(sync):
    catalog = sync.load_catalog_source()
    text = sync.render_catalog_markdown(catalog).decode()
    assert "do not edit" in text and "## Mapping rules" in text
    for row in catalog["patterns"]:
        assert f"| `{row['id']}` |" in text
    for rule in catalog["mapping_rules"]:
        assert f"**{rule['id']}**" in text
