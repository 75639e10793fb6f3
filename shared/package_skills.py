"""`make dist`: package each skill folder as a reproducible zip an agent can unpack into `.agents/skills/`.

Usage: python shared/package_skills.py [--output dist]

Refuses to package when a rendered copy is stale (run `make sync` first). Archives contain the skill folder
only (no caches), with fixed timestamps and sorted entries, so the same sources give the same bytes.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SKIP_PARTS = {"__pycache__", ".pytest_cache", ".ruff_cache"}
FIXED_TIME = (2026, 1, 1, 0, 0, 0)


def skill_files(skill_dir: Path) -> list[Path]:
    """Every regular file of the skill, sorted, without caches or symlinks."""
    files = []
    for path in sorted(skill_dir.rglob("*")):
        if path.is_symlink() or not path.is_file() or SKIP_PARTS & set(path.parts) or path.suffix == ".pyc":
            continue
        files.append(path)
    return files


def build_zip(skill_dir: Path) -> bytes:
    """The zip of `skill_dir` (entries under its folder name, fixed times, sorted): same sources, same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in skill_files(skill_dir):
            info = zipfile.ZipInfo(f"{skill_dir.name}/{path.relative_to(skill_dir).as_posix()}", FIXED_TIME)
            info.external_attr = (0o755 if os.access(path, os.X_OK) else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def _atomic_module():
    """The project's single atomic-write implementation (temp file + fsync + os.replace), loaded by file path."""
    path = REPO / "skills" / "nvflare-autofl" / "scripts" / "autofl_core" / "common" / "atomic.py"
    spec = importlib.util.spec_from_file_location("_package_atomic", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default="dist", help="folder for the zips (default: dist)")
    args = parser.parse_args(argv)
    check = subprocess.run([sys.executable, str(REPO / "shared" / "sync.py"), "--check"])
    if check.returncode != 0:
        print("package failed: rendered skill files are stale; run `make sync` first", file=sys.stderr)
        return 2
    output = Path(args.output)
    if not output.is_absolute():
        output = REPO / output
    atomic = _atomic_module()
    for skill_dir in sorted(p for p in (REPO / "skills").iterdir() if (p / "SKILL.md").is_file()):
        target = output / f"{skill_dir.name}.zip"
        try:
            atomic.write_bytes(target, build_zip(skill_dir))
        except OSError as exc:
            print(
                f"package failed: cannot write {target} ({exc.strerror or exc}); choose a writable --output",
                file=sys.stderr,
            )
            return 2
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
