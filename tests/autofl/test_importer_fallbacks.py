"""A dry run that stood in for a module job.py imports where a handler would catch its ImportError is refused.

`python job.py` on this host takes the handler; the dry run's stand-in (dryrun_boot/stand_ins._InertFinder) ran the try's
body. `refusal_at` says which lines a catching `try` (or `suppress`) covers (a stand-in imported there is refused);
the dry-run tests show the refusal naming the line, and that a module absent outside such a try still records and is admitted.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from autofl_core.importer import api, dryrun, fallbacks, recorded

sealed = pytest.mark.skipif(not dryrun.available(), reason="this host cannot seal a dry run (no namespaces)")


def refusal_at(source: str, line: int) -> str | None:
    """The refusal of a run that stood in for `x` imported at `line` of job.py (`source`)."""
    record = recorded.DryRunRecord("recorded", stood_in_at=(recorded.StoodIn("x", "job.py", line),))
    return fallbacks.refusal(record, lambda rel: source if rel == "job.py" else None)


@pytest.mark.parametrize(
    "handler, caught",
    [
        ("except ImportError:", True),
        ("except ModuleNotFoundError as error:", True),
        ("except Exception:", True),
        ("except BaseException:", True),
        ("except:", True),
        ("except (KeyError, builtins.ImportError):", True),
        ("except KeyError:", False),
        ("except (KeyError, ValueError):", False),
        ("finally:", False),
    ],
)
def test_a_try_guards_its_body_when_a_handler_catches_an_import_error(handler, caught):
    source = f"try:\n    import x\n    y = 1\n{handler}\n    pass\n"
    assert [refusal_at(source, line) is not None for line in (2, 3, 5)] == [caught, caught, False]


def test_only_the_body_of_a_catching_try_or_suppress_is_guarded():
    """Not a handler's own lines, nor `else`/`finally`, nor the body of a try whose only handler re-raises (job.py
    stops on this host either way)."""
    source = textwrap.dedent(
        """
        import a
        try:
            pass
        except ImportError:
            import b
        else:
            import c
        finally:
            import d
        with contextlib.suppress(ModuleNotFoundError):
            import e
        with suppress(OSError):
            import f
        def g():
            try:
                import h
            except Exception:
                pass
        try:
            import i
        except ImportError:
            print("job.py needs i")
            raise
        """
    )
    lines = {line.strip(): n for n, line in enumerate(source.splitlines(), 1) if line.strip().startswith("import")}
    guarded = {name for name, line in lines.items() if refusal_at(source, line) is not None}
    assert guarded == {"import e", "import h"}


JOB = """import argparse

from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

rounds = 2
BODY
recipe = NumpyFedAvgRecipe(name="t", model=[0.0], min_clients=2, num_rounds=rounds, train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""
CLIENT = "print('trains')\n"


def _job(tmp_path: Path, body: str, beside: dict[str, str] | None = None) -> Path:
    (tmp_path / "client.py").write_text(CLIENT, encoding="utf-8")
    for name, text in (beside or {}).items():
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    job = tmp_path / "job.py"
    job.write_text(JOB.replace("BODY", textwrap.dedent(body)), encoding="utf-8")
    return job


@sealed
def test_a_module_absent_outside_any_try_is_stood_in_and_admitted(tmp_path):
    """No handler would run instead: the stand-in changes nothing job.py decides, so the run settles the import."""
    job = _job(tmp_path, "import no_such_module_xyz\n")
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded"
    assert config["import"]["dry_run"]["stubbed"] == ["no_such_module_xyz"]
    assert config["admission_errors"] == [], config["admission_errors"]
    assert config["fixed_budget"]["num_rounds"]["value"] == 2


FROM_A_CALL = """
def load():
    import no_such_module_xyz
    return 9

try:
    rounds = load()
except Exception:
    pass
"""
HELPER = """
try:
    from no_such_module_xyz import speedup
    ROUNDS = 9
except ModuleNotFoundError:
    ROUNDS = 2
"""
SUPPRESSED = """
import contextlib
with contextlib.suppress(ImportError):
    import no_such_module_xyz
    rounds = 9
"""


@sealed
@pytest.mark.parametrize(
    "body, beside, where",
    [
        (FROM_A_CALL, {}, "job.py line 13"),
        ("import helper\nrounds = helper.ROUNDS\n", {"helper.py": HELPER}, "helper.py line 3"),
        (SUPPRESSED, {}, "job.py line 10"),
    ],
    ids=["called-from-a-try", "module-beside-job", "suppress"],
)
def test_a_stand_in_a_handler_would_have_replaced_is_refused_naming_the_line(tmp_path, body, beside, where):
    """On this host the handler runs (2 rounds); the dry run's stand-in ran the body (9): refused, one line naming
    the file and line on the stack inside the try, and the fix."""
    job = _job(tmp_path, body, beside)
    config = api.import_job(job, dry_run=True)
    assert config["import"]["dry_run"]["status"] == "recorded", config["import"]["dry_run"]
    messages = [e["message"] for e in config["admission_errors"]]
    assert messages and f": {where} imports no_such_module_xyz inside a try" in messages[0], messages
    assert "install no_such_module_xyz" in messages[0] and "\n" not in messages[0]
