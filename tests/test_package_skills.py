"""shared/package_skills.py (`make dist`): reproducible zips, written atomically, one-line errors."""

import io
import os
import zipfile
from pathlib import Path

import pytest
from module_loader import load_by_path

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def package():
    return load_by_path("shared_package_skills", REPO / "shared" / "package_skills.py")


def _skill(tmp_path):
    skill = tmp_path / "demo-skill"
    (skill / "scripts" / "__pycache__").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo-skill\n---\n")
    (skill / "scripts" / "run.py").write_text("print(1)\n")
    (skill / "scripts" / "run.py").chmod(0o755)
    (skill / "scripts" / "__pycache__" / "run.cpython-312.pyc").write_bytes(b"\0")
    (skill / "link.md").symlink_to(skill / "SKILL.md")
    return skill


def test_zip_is_reproducible_and_holds_only_the_skill_sources(package, tmp_path):
    skill = _skill(tmp_path)
    first = package.build_zip(skill)
    os.utime(skill / "SKILL.md", (1, 1))
    assert package.build_zip(skill) == first
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        assert archive.namelist() == ["demo-skill/SKILL.md", "demo-skill/scripts/run.py"]
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
    assert modes == {"demo-skill/SKILL.md": 0o644, "demo-skill/scripts/run.py": 0o755}


def test_dist_writes_one_zip_per_skill_and_no_temp_files(package, tmp_path, capsys):
    assert package.main(["--output", str(tmp_path / "dist")]) == 0
    names = sorted(p.name for p in (tmp_path / "dist").iterdir())
    assert names == ["nvflare-autofl.zip", "nvflare-diagnose-job.zip"]
    with zipfile.ZipFile(tmp_path / "dist" / "nvflare-autofl.zip") as archive:
        assert "nvflare-autofl/scripts/autofl_core/common/atomic.py" in archive.namelist()
        assert not [n for n in archive.namelist() if "__pycache__" in n or n.endswith(".pyc")]
    assert capsys.readouterr().out.splitlines() == [str(tmp_path / "dist" / name) for name in names]


def test_a_failed_write_keeps_the_previous_zip(package, tmp_path, monkeypatch, capsys):
    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / "nvflare-autofl.zip").write_bytes(b"previous")

    def refuse(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    assert package.main(["--output", str(dist)]) == 2
    assert (dist / "nvflare-autofl.zip").read_bytes() == b"previous"
    assert sorted(p.name for p in dist.iterdir()) == ["nvflare-autofl.zip"]  # the temp file is gone
    err = capsys.readouterr().err
    assert "No space left on device" in err and err.count("\n") == 1


def test_an_output_that_is_a_file_is_one_line_exit_2(package, tmp_path, capsys):
    (tmp_path / "dist").write_text("not a folder")
    assert package.main(["--output", str(tmp_path / "dist")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("package failed: cannot write") and err.count("\n") == 1
    assert (tmp_path / "dist").read_text() == "not a folder"
