"""R5: the diagnosis is read-only and secret-free, proven with a `sys.addaudithook` recorder.

Every `open` and every write-ish audit event is recorded while `collect_evidence` (and the CLI's `main`) run
over trees full of credential material; no credential file may be opened, nothing may be written, and the
credentials must be listed as `skipped_credential`. `--collect` may only ever run the read-only command list.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from evidence_trees import JOB_UUID, build_poc, build_simenv, write
from nvfdiag.read import collect
from nvfdiag.read.credentials import is_credential
from nvfdiag.read.evidence import collect_evidence
from report_schema import validated

LIMITS = {"max_bytes": 262144, "max_total_bytes": 4194304, "max_files": 200}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
WRITE_EVENTS = {
    "os.remove",
    "os.rename",
    "os.rmdir",
    "os.mkdir",
    "os.truncate",
    "os.chmod",
    "os.chown",
    "os.utime",
    "os.symlink",
    "os.link",
    "shutil.copyfile",
    "shutil.copymode",
    "shutil.copystat",
    "shutil.copytree",
    "shutil.move",
    "shutil.rmtree",
    "shutil.make_archive",
    "shutil.unpack_archive",
    "tempfile.mkstemp",
    "tempfile.mkdtemp",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "subprocess.Popen",
}


class _Recorder:
    """One process-wide audit hook (hooks cannot be removed); it records only while `active`."""

    active = False
    opened: list[tuple[str, object, int]] = []
    writes: list[tuple[str, tuple]] = []

    @classmethod
    def hook(cls, event, args):
        if not cls.active:
            return
        if event == "open":
            path, mode, flags = (list(args) + [None, None, 0])[:3]
            cls.opened.append(
                (os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else str(path), mode, flags or 0)
            )
        elif event in WRITE_EVENTS:
            cls.writes.append((event, args))


if not getattr(sys, "_nvfdiag_audit_installed", False):
    sys.addaudithook(_Recorder.hook)
    sys._nvfdiag_audit_installed = True


class _Audit:
    """`with audit:` records only the code inside the block (tree building stays outside)."""

    def __enter__(self):
        _Recorder.opened, _Recorder.writes = [], []
        _Recorder.active = True
        return _Recorder

    def __exit__(self, *exc):
        _Recorder.active = False
        return False


@pytest.fixture
def audit():
    try:
        yield _Audit()
    finally:
        _Recorder.active = False


def _write_opens(opened):
    return [
        (path, mode, flags)
        for path, mode, flags in opened
        if (isinstance(mode, str) and any(ch in mode for ch in "wax+")) or (flags & WRITE_FLAGS)
    ]


def _credential_files(root: Path) -> set[str]:
    found = set()
    for folder, _dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root).parts
        found.update(os.path.realpath(os.path.join(folder, name)) for name in files if is_credential((*rel, name)))
    return found


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "evidence"
    build_poc(root / "poc", past_jobs=3, kit_files=2, transfer_files=2)
    build_simenv(root / "sim")
    write(root / "sim" / "hello-numpy" / "server" / "startup" / "server.crt", "CERT\n")
    write(root / "sim" / "hello-numpy" / "server" / "startup" / "fed_server.json", "{}\n")
    write(root / "keys" / "store.p12", b"\x00binary")
    write(root / "keys" / "admin.pfx", "x")
    write(root / "keys" / "trust.jks", "x")
    write(root / "keys" / "id_rsa.pub", "x")
    write(root / "db_password.txt", "hunter2\n")
    write(root / "client_secret.json", "{}")
    os.symlink(root / "keys" / "admin.pfx", root / "innocent.log")  # a link whose target is a credential
    export = root / "export" / "myjob"  # an exported job folder: meta.json is read, its structure only stat-ed
    write(export / "meta.json", '{"name": "myjob", "deploy_map": {"app": ["@ALL"]}}')
    write(export / "app" / "config" / "config_fed_server.json", "{}")
    write(export / "app" / "custom" / "api_token.txt", "SHOULD-NEVER-BE-READ\n")
    write(export / "app" / "custom" / "client.key", "SHOULD-NEVER-BE-READ\n")
    return root


def test_collect_evidence_never_opens_credentials_and_never_writes(tmp_path, audit):
    root = _tree(tmp_path)
    credentials = _credential_files(root)
    assert len(credentials) >= 15
    with audit as seen:
        ev = collect_evidence([str(root)], job_id=JOB_UUID, **LIMITS)
    opened = {os.path.realpath(path) for path, _mode, _flags in seen.opened}
    assert not (opened & credentials)
    assert not any("/startup/" in path for path in opened)
    assert seen.writes == [] and _write_opens(seen.opened) == []
    assert any(path.endswith("/log.txt") for path in opened)  # the hook did see our reads
    skipped = {s.path for s in ev.sources if s.status == "skipped_credential"}
    assert str(root / "db_password.txt") in skipped and str(root / "innocent.log") in skipped
    assert str(root / "keys" / "store.p12") in skipped
    assert any("credential file(s) skipped" in note for note in ev.not_read)
    assert os.path.realpath(root / "export" / "myjob" / "meta.json") in opened
    assert any(s.kind == "job_download" and s.path == str(root / "export" / "myjob") for s in ev.sources)
    assert any("is missing config/config_fed_client.json" in line.text for line in ev.lines)


def test_explicit_credential_paths_are_skipped_unopened(tmp_path, audit):
    key = write(tmp_path / "server.key", "-----BEGIN PRIVATE KEY-----\n")
    kit_config = write(tmp_path / "startup" / "fed_client.json", "{}")
    log = write(tmp_path / "log.txt", "2026-06-02 11:03:10 - X - ERROR - boom\n")
    alias = tmp_path / "harmless.log"
    os.symlink(key, alias)
    with audit as seen:
        ev = collect_evidence([str(key), str(kit_config), str(log), str(alias)], job_id=None, **LIMITS)
    opened = {os.path.realpath(path) for path, _m, _f in seen.opened}
    assert str(key) not in opened and str(kit_config) not in opened and str(log) in opened
    assert {s.path: s.status for s in ev.sources}[str(key)] == "skipped_credential"
    assert {s.path: s.status for s in ev.sources}[str(kit_config)] == "skipped_credential"
    assert {s.path: s.status for s in ev.sources}[str(alias)] == "skipped_credential"


def test_a_log_named_symlink_into_a_startup_kit_is_skipped_and_reported(tmp_path, audit):
    """`local/log.txt` named like a log but linking into the kit's `startup/` folder: the credential filter
    applies to the resolved target as well as the name, and the report says the link was skipped."""
    site = tmp_path / "prod_00" / "site-1"
    kit_file = write(site / "startup" / "fed_client.json", '{"token": "SHOULD-NEVER-BE-READ"}\n')
    nested = write(site / "startup" / "keys" / "notes.txt", "SHOULD-NEVER-BE-READ\n")
    real_log = write(site / "log.txt", "2026-06-02 11:03:10 - X - ERROR - boom\n")
    (site / "local").mkdir()
    os.symlink(kit_file, site / "local" / "log.txt")
    os.symlink(nested, site / "local" / "log_fl.txt")
    alias = tmp_path / "given.log"
    os.symlink(nested, alias)  # given explicitly: the target's folders count, not only its parent
    with audit as seen:
        ev = collect_evidence([str(tmp_path / "prod_00"), str(alias)], job_id=None, **LIMITS)
    opened = {os.path.realpath(path) for path, _m, _f in seen.opened}
    assert str(kit_file) not in opened and str(nested) not in opened
    assert str(real_log) in opened
    statuses = {s.path: s.status for s in ev.sources}
    for link in (site / "local" / "log.txt", site / "local" / "log_fl.txt", alias):
        assert statuses.get(str(link)) == "skipped_credential", (link, statuses)
    notes = " ".join(ev.not_read)
    assert f"{site / 'local' / 'log.txt'}: symlink to credential material" in notes, notes
    assert "SHOULD-NEVER-BE-READ" not in " ".join(line.text for line in ev.lines)


def _load_cli():
    path = Path(__file__).resolve().parents[2] / "skills" / "nvflare-diagnose-job" / "scripts" / "diagnose_job.py"
    spec = importlib.util.spec_from_file_location("diagnose_job_cli_under_audit", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_main_in_process_is_read_only(tmp_path, audit):
    cli = _load_cli()  # loading the script and its package happens before auditing starts
    root = _tree(tmp_path)
    credentials = _credential_files(root)
    out = io.StringIO()
    with audit as seen:
        code = cli.main([str(root), "--job-id", JOB_UUID, "--format", "json"], stdin=io.StringIO(""), stdout=out)
    assert code == 0 and validated(out.getvalue())["evidence_sources"]
    opened = {os.path.realpath(path) for path, _m, _f in seen.opened}
    assert not (opened & credentials)
    assert seen.writes == [] and _write_opens(seen.opened) == []
    assert any(path.endswith("/log.txt") for path in opened)


class FakeRunner:
    """Records every argv; answers like the nvflare CLI would (job meta says the job failed)."""

    def __init__(self, status="FINISHED:EXECUTION_EXCEPTION"):
        self.calls: list[list[str]] = []
        self.status = status

    def __call__(self, argv, **kwargs):
        self.calls.append(list(argv))
        self.kwargs = kwargs
        job = argv[5] if len(argv) > 5 else None
        if argv[3:5] == ["job", "meta"]:
            data = {"job_id": job, "status": self.status}
        elif argv[3:5] == ["job", "download"]:
            out = argv[argv.index("-o") + 1]
            write(Path(out) / job / "workspace" / "site-1" / "log.txt", "site-1 CUDA out of memory\n")
            data = {
                "job_id": job,
                "artifacts": {
                    "client_logs": {"site-1": f"{out}/{job}/workspace/site-1/log.txt"},
                    "global_model": "/etc/passwd",
                },
                "missing_artifacts": ["metrics_summary"],
            }
        else:
            data = {"ok": True}
        envelope = {"schema_version": "1", "status": "ok", "exit_code": 0, "data": data}
        return subprocess.CompletedProcess(argv, 0, json.dumps(envelope).encode(), b"")


def test_collect_runs_only_the_read_only_command_list(tmp_path):
    runner = FakeRunner()
    items = collect.collect_from_cli("abc123", kit_id="prod_admin", runner=runner)
    assert len(runner.calls) == 6
    for argv in runner.calls:
        display = ["nvflare", *argv[1:]]
        assert collect.is_allowed(display), display
        assert display[1:3] == ["--format", "json"] and display[-1] == "--kit-id=prod_admin"
    subcommands = [tuple(w for w in argv[3:5]) for argv in (["nvflare", *a[1:]] for a in runner.calls)]
    assert subcommands == [
        ("job", "meta"),
        ("job", "logs"),
        ("job", "stats"),
        ("system", "status"),
        ("system", "resources"),
        ("job", "download"),
    ]
    assert set(runner.kwargs["env"]) <= set(collect.ENV_KEEP) | {
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONIOENCODING",
        "NO_COLOR",
    }
    assert runner.kwargs["timeout"] == 60 and runner.kwargs["stdin"] is not None
    download_dir = Path(runner.calls[-1][runner.calls[-1].index("-o") + 1])
    assert not download_dir.parent.exists()  # the temp folder is gone
    read = items[-1]["artifacts_read"]
    assert [(a["name"], a["site"]) for a in read] == [("client_log", "site-1")]  # /etc/passwd is never read
    assert "CUDA out of memory" in read[0]["text"]


def test_allowed_list_is_exactly_the_spec_commands():
    assert collect.READ_ONLY_COMMANDS == {
        "job_meta": ("job", "meta", "{job_id}"),
        "job_logs": ("job", "logs", "{job_id}", "--site", "all", "--tail", "200"),
        "job_stats": ("job", "stats", "{job_id}", "--site", "all"),
        "system_status": ("system", "status"),
        "system_resources": ("system", "resources"),
        "job_download": ("job", "download", "{job_id}", "-o", "{output_dir}"),
    }
    bad = [
        ["nvflare", "--format", "json", "job", "abort", "abc123"],
        ["nvflare", "--format", "json", "job", "delete", "abc123"],
        ["nvflare", "--format", "json", "system", "shutdown", "all"],
        ["nvflare", "--format", "json", "job", "meta", "--force"],
        ["nvflare", "--format", "json", "job", "download", "abc123", "-o", "/home/user/results"],
        ["nvflare", "job", "meta", "abc123"],
        ["nvflare", "--format", "json", "job", "meta", "abc123", "--startup-kit=/k", "--kit-id=x"],
    ]
    assert not any(collect.is_allowed(argv) for argv in bad)


@pytest.mark.parametrize(
    "status, downloads",
    [
        ("FINISHED:COMPLETED", False),
        ("RUNNING", False),
        ("FINISHED:ABORTED", True),
        ("FINISHED:EXECUTION_EXCEPTION", True),
    ],
)
def test_download_only_for_failed_terminal_jobs(status, downloads):
    runner = FakeRunner(status)
    collect.collect_from_cli("abc123", runner=runner)
    assert any(argv[3:5] == ["job", "download"] for argv in runner.calls) is downloads


@pytest.mark.parametrize(
    "job_id, kwargs, message",
    [
        ("--force", {}, "job id"),
        ("a b", {}, "job id"),
        ("abc", {"kit_id": "a", "startup_kit": "/tmp"}, "not both"),
        ("abc", {"kit_id": "-x"}, "--kit-id"),
        ("abc", {"startup_kit": "/definitely/not/here"}, "not a folder"),
    ],
)
def test_collect_rejects_bad_arguments_before_running_anything(job_id, kwargs, message):
    runner = FakeRunner()
    with pytest.raises(collect.CollectError, match=message):
        collect.collect_from_cli(job_id, runner=runner, **kwargs)
    assert runner.calls == []


def test_cli_collect_flag_runs_only_allowed_commands(monkeypatch, tmp_path):
    cli = _load_cli()
    runner = FakeRunner()
    monkeypatch.setattr(collect, "run_in_process_group", runner)
    out = io.StringIO()
    code = cli.main(["--collect", "--job-id", "abc123", "--kit-id", "prod_admin"], stdin=io.StringIO(""), stdout=out)
    assert code == 0, out.getvalue()
    assert len(runner.calls) == 6 and all(collect.is_allowed(["nvflare", *argv[1:]]) for argv in runner.calls)
    report = validated(out.getvalue())
    assert report["job_status"] == "FINISHED:EXECUTION_EXCEPTION" and report["runtime_mode"] == "production"


@pytest.mark.parametrize(
    "parts, expected",
    [
        (("server.key",), True),
        (("rootCA.pem",), True),
        (("client.crt",), True),
        (("kit.p12",), True),
        (("kit.pfx",), True),
        (("trust.jks",), True),
        ((".netrc",), True),
        (("id_rsa",), True),
        (("id_rsa.pub",), True),
        (("signature.json",), True),
        (("credentials",), True),
        (("credentials.json",), True),
        (("MY_SECRET.txt",), True),
        (("api_token.log",), True),
        (("db_password",), True),
        (("site-1", "startup", "fed_client.json"), True),
        (("server", "startup", "readme.txt"), True),
        (("vault-secrets", "log.txt"), True),
        (("log.txt",), False),
        (("site-1", "log.txt"), False),
        (("metrics_summary.json",), False),
        (("server", "local", "log_config.json"), False),
        (("startup.log",), False),
    ],
)
def test_credential_rule_by_name(parts, expected):
    assert is_credential(parts) is expected
