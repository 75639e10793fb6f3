"""Session 16 (issue 33, h16st): the dry-run boot's shared state is a typed record, one rule decides what a run's
file reads pin, and a container changed by code not followed is unresolved for one plain reason."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from autofl_core.importer import api, dryrun_config, moves, recorded
from autofl_core.importer.dryrun_boot import state
from autofl_core.importer.inputs import Input
from autofl_core.importer.recorded import DryRunRecord
from test_importer_recorded import ACTIONS
from test_importer_recorded import record as run_record

BOOT = Path(state.__file__).parent


def _attributes_used() -> dict[str, str]:
    """Every `STATE.<name>` the boot's modules read or write, with the first module using it."""
    used: dict[str, str] = {}
    for path in sorted(BOOT.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "STATE":
                used.setdefault(node.attr, path.name)
    return used


def test_every_state_attribute_the_boot_uses_is_a_declared_field():
    fields = {f.name for f in dataclasses.fields(state.BootState)}
    used = _attributes_used()
    assert len(used) >= 20, used  # the scan found the boot's uses
    assert {name: where for name, where in used.items() if name not in fields} == {}
    assert {"installed_dirs", "nvflare_install"} <= fields  # the two "installed" meanings, apart


def test_a_misspelt_state_field_raises_at_once():
    run = state.BootState()
    with pytest.raises(AttributeError):
        run.recrod = {"status": "recorded"}
    with pytest.raises(AttributeError):
        state.STATE.in_jbo = True
    assert not hasattr(state.STATE, "__dict__")  # slots: no field can be added by any spelling


def test_each_state_starts_with_its_own_empty_containers():
    first, second = state.BootState(), state.BootState()
    first.parsers.append(("parser", {}))
    first.files_read.add("data.csv")
    assert (second.parsers, second.files_read, second.record, second.in_job) == ([], set(), None, False)


def _record(status: str, files_read: tuple[str, ...] = ()) -> DryRunRecord:
    return DryRunRecord(status=status, files_read=files_read)


FILES, CLOCK = frozenset({Input.FILES}), frozenset({Input.TIME})
OUTSIDE = ("/etc/sites.json",)
PINNING = {  # case: (inputs, left to the run, record, the inputs one run cannot pin)
    "files, read inside the job's folder": (FILES, False, _record("recorded", ("sites.json",)), set()),
    "files, read outside it": (FILES, False, _record("recorded", OUTSIDE), FILES),
    "files, read where the cache key skips": (FILES, True, _record("recorded", ("venv/x.json",)), FILES),
    "files, read unseen": (FILES, True, _record("recorded", ("...",)), FILES),
    "left to a run that read outside": (frozenset(), True, _record("recorded", OUTSIDE), FILES),
    "left to a run that read inside": (frozenset(), True, _record("recorded", ("sites.json",)), set()),
    "not left, no inputs, read outside": (frozenset(), False, _record("recorded", OUTSIDE), set()),
    "the clock, read inside": (CLOCK, True, _record("recorded"), CLOCK),
    "the clock and files, read outside": (CLOCK | FILES, False, _record("recorded", OUTSIDE), CLOCK | FILES),
    **{f"files, {s}": (FILES, False, _record(s), FILES) for s in ("raised", "exited", "no_run", "sandbox_failed")},
    **{f"left, {s}": (frozenset(), True, _record(s, OUTSIDE), set()) for s in ("raised", "exited", "no_run")},
}


@pytest.mark.parametrize("case", list(PINNING), ids=lambda c: c.replace(" ", "-"))
def test_one_rule_decides_what_a_runs_file_reads_pin(case):
    """Files are pinned only by a recorded run that read none outside the job's folder; such a run that read
    elsewhere holds a field the reading left to it too; a run that recorded nothing pins no file and holds no field
    by what it read (its raise or exit is named instead)."""
    inputs, left, record, unpinned = PINNING[case]
    assert dryrun_config._unpinned(inputs, left, record) == unpinned


TRACKED = """import argparse

import tracker
from nvflare.app_common.np.recipes import NumpyFedAvgRecipe
from nvflare.recipe import SimEnv

parser = argparse.ArgumentParser()
parser.add_argument("--num_rounds", type=int, default=2)
args = parser.parse_args()
plan = [args.num_rounds]
tracker.log(plan)
recipe = NumpyFedAvgRecipe(name="t", model=[0.0], min_clients=2, num_rounds=plan[0], train_script="client.py")
recipe.execute(SimEnv(num_clients=2))
"""


def test_a_container_given_to_code_not_followed_is_unresolved_for_one_plain_reason(tmp_path):
    (tmp_path / "job.py").write_text(TRACKED, encoding="utf-8")
    (tmp_path / "client.py").write_text("print('train')\n", encoding="utf-8")
    rounds = api.import_job(tmp_path / "job.py")["fixed_budget"]["num_rounds"]
    assert rounds["value"] is None, rounds
    assert rounds["reason"] == "given to tracker.log() at line 11, which is not followed statically and may change it"


def _run(clients: int, rounds: int = 5) -> DryRunRecord:
    """A recorded run asking for `clients` sites and `rounds` rounds, parsed with `ACTIONS`."""
    server = {"workflows": [{"path": "nvflare.app_common.workflows.fedavg.FedAvg", "args": {"num_rounds": rounds}}]}
    sites = [f"site-{i}" for i in range(clients)]
    return run_record(parsers=[{"actions": ACTIONS}], clients=sites, configs={"j/config_fed_server.json": server})


def test_a_budget_field_a_run_with_the_same_arguments_moves_is_drawn_and_moved_by_no_option():
    """The clients are drawn at random (every run asks for another count) and the rounds are 2 * --n_clients + 1:
    the run made again with the baseline's arguments shows the draw, so no option is named for the clients, and
    the single runs still name --n_clients for the rounds."""
    baseline, draws = _run(4), iter(range(20, 200))

    def run_many(batch):
        counts = [int(args[args.index("--n_clients") + 1]) if "--n_clients" in args else 2 for args in batch]
        return [_run(next(draws), 2 * n + 1) for n in counts]

    moved = moves.moving_options(baseline, [], run_many, again=lambda: _run(next(draws)))
    assert moved == moves.Moved({"num_rounds": ["--n_clients"]}, drawn=("num_clients",))
    moved = moves.moving_options(baseline, [], run_many)  # no run made again: every option moves the draw
    assert set(moved.by["num_clients"]) > {"--n_clients"}


def test_a_drawn_budget_field_is_unresolved_saying_why():
    run = _run(4)
    budget = dryrun_config._recorded_budget({}, run, recorded.ran(run), moves.Moved(drawn=("num_clients",)), {})
    assert budget["num_clients"]["value"] is None and budget["num_clients"]["confidence"] == "unresolved"
    assert "twice with the same arguments asks NVFLARE for another num_clients" in budget["num_clients"]["reason"]
    assert budget["num_rounds"]["value"] == 5
    both = dryrun_config._recorded_budget(
        {}, run, recorded.ran(run), moves.Moved(drawn=("num_clients",)), {"num_clients": ["SEED"]}
    )
    assert both["num_clients"]["reason"] == budget["num_clients"]["reason"]  # the draw, whatever the environment
