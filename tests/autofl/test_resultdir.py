"""Result-directory resolution: printed path inside the root only, fallbacks, ambiguity fails closed."""

import os

import pytest
from autofl_core.trial.resultdir import (
    ResultDirError,
    collect_result,
    copy_result,
    printed_paths,
    resolve_result_dir,
    snapshot_children,
)


def make(root, *names):
    for name in names:
        (root / name / "server").mkdir(parents=True)


def test_printed_path_forms():
    lines = [
        "Result can be found in : /r/job-a",
        "Note, get_status returns None in SimEnv. The simulation logs can be found at /r/job-b",
        "training done result_dir=/r/job-c, status ok",
        "unrelated line",
    ]
    assert printed_paths(lines) == ["/r/job-a", "/r/job-b", "/r/job-c"]


def test_printed_direct_child_wins(tmp_path):
    make(tmp_path, "printed", "autofl_x_baseline")
    name, rule = resolve_result_dir(
        tmp_path, [f"Result can be found in : {tmp_path / 'printed'}"], injected_name="autofl_x_baseline"
    )
    assert (name, rule) == ("printed", "printed_path")


def test_printed_path_outside_or_nested_is_ignored(tmp_path):
    root = tmp_path / "root"
    make(root, "autofl_x_baseline")
    (tmp_path / "outside").mkdir()
    (root / "autofl_x_baseline" / "deep").mkdir()
    lines = [
        f"Result can be found in : {tmp_path / 'outside'}",
        f"Result can be found in : {root / 'autofl_x_baseline' / 'deep'}",
        f"Result can be found in : {root / '..' / 'outside'}",
    ]
    name, rule = resolve_result_dir(root, lines, injected_name="autofl_x_baseline")
    assert (name, rule) == ("autofl_x_baseline", "injected_name")


def test_symlink_child_pointing_outside_is_not_accepted(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", root / "link")
    with pytest.raises(ResultDirError):
        resolve_result_dir(root, [f"Result can be found in : {root / 'link'}"], injected_name="link")


def test_single_expected_name_then_single_changed_child(tmp_path):
    make(tmp_path, "hello-numpy")
    assert resolve_result_dir(tmp_path, [], injected_name=None, expected_names=["hello-numpy", "other"]) == (
        "hello-numpy",
        "expected_name",
    )
    assert resolve_result_dir(tmp_path, [], injected_name=None) == ("hello-numpy", "changed_child")


def test_unchanged_children_do_not_count(tmp_path):
    make(tmp_path, "old")
    before = snapshot_children(tmp_path)
    make(tmp_path, "new")
    assert resolve_result_dir(tmp_path, [], injected_name=None, before=before) == ("new", "changed_child")


@pytest.mark.parametrize("expected", [[], ["a", "b"]])
def test_ambiguity_fails_closed(tmp_path, expected):
    make(tmp_path, "a", "b")
    with pytest.raises(ResultDirError, match="ambiguous"):
        resolve_result_dir(tmp_path, [], injected_name="missing", expected_names=expected)


def test_fedjob_layout_directly_in_the_root_is_the_root_itself(tmp_path):
    """FedJob.simulator_run(root) in NVFLARE 2.9 writes server/, site-N/, local/, startup/ straight into the root."""
    root = tmp_path / "root"
    for name in ("server", "site-1", "site-2", "local", "startup"):
        (root / name).mkdir(parents=True)
    assert resolve_result_dir(root, [], injected_name=None, before={}) == (".", "root_layout")
    collect_result(root / ".", tmp_path / "copy")
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == ["local", "server", "site-1", "site-2", "startup"]


def test_server_folder_without_sites_is_not_a_result_layout(tmp_path):
    for name in ("server", "other"):
        (tmp_path / name).mkdir()
    with pytest.raises(ResultDirError, match="ambiguous"):
        resolve_result_dir(tmp_path, [], injected_name=None, before={})


def test_nothing_found_fails(tmp_path):
    with pytest.raises(ResultDirError, match="no simulator result directory"):
        resolve_result_dir(tmp_path, [], injected_name="x")


def test_copy_result_replaces_destination_and_keeps_links(tmp_path):
    source = tmp_path / "src"
    (source / "server").mkdir(parents=True)
    (source / "server" / "log.txt").write_text("new")
    os.symlink("/etc/hostname", source / "link")
    destination = tmp_path / "run" / "simulation"
    (destination / "stale").mkdir(parents=True)
    copy_result(source, destination)
    assert (destination / "server" / "log.txt").read_text() == "new"
    assert not (destination / "stale").exists()
    assert os.readlink(destination / "link") == "/etc/hostname"
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["simulation"]


def test_collect_result_moves_out_of_the_trial_root_and_replaces_a_stale_copy(tmp_path):
    source = tmp_path / "root" / "job"
    (source / "server").mkdir(parents=True)
    (source / "server" / "log.txt").write_text("fresh")
    destination = tmp_path / "run" / "simulation"
    (destination / "stale").mkdir(parents=True)
    collect_result(source, destination)
    assert (destination / "server" / "log.txt").read_text() == "fresh"
    assert not (destination / "stale").exists() and not source.exists()
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["simulation"]


def test_copy_result_skips_fifos_the_job_left_behind(tmp_path):
    source = tmp_path / "src"
    (source / "server").mkdir(parents=True)
    (source / "server" / "log.txt").write_text("kept")
    os.mkfifo(source / "server" / "pipe")
    destination = tmp_path / "run" / "simulation"
    copy_result(source, destination)
    assert sorted(p.name for p in (destination / "server").iterdir()) == ["log.txt"]


def test_collect_result_across_filesystems_copies_and_skips_special_files(tmp_path, monkeypatch):
    import errno

    from autofl_core.trial import resultdir

    def cross_device(*_args):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    source = tmp_path / "root" / "job"
    (source / "server").mkdir(parents=True)
    (source / "server" / "metrics_summary.json").write_text("{}")
    os.mkfifo(source / "server" / "fifo")
    monkeypatch.setattr(resultdir.os, "rename", cross_device)
    destination = tmp_path / "run" / "simulation"
    collect_result(source, destination)
    assert sorted(p.name for p in (destination / "server").iterdir()) == ["metrics_summary.json"]
