"""What a trial ran (trial/what_ran.py): rounds and clients from NVFLARE's own artifacts, against the fixed budget."""

from __future__ import annotations

import json
from pathlib import Path

from autofl_core.trial import what_ran

# Lines as NVFLARE 2.9's FedAvg, ClientManager and model selector write them (see a real server/log.txt).
JOINED = "ClientManager - INFO - Client: New client site-{n}@127.0.0.1 joined. Sent token.  Total clients: {n}"
BANNER = "                                Round {r} started.                                "
SAMPLED = "FedAvg - INFO - [identity=simulator_server, run=simulate_job, wf=controller] - Sampled clients: {sites}"
AGGREGATED = (
    "FedAvg - INFO - [identity=simulator_server, run=simulate_job, wf=controller, peer={site}, peer_run=simulate_job, "
    "peer_rc=OK, task_name=train, task_id=0] - Aggregated {k}/{n} results"
)


def server_log(rounds: int, clients: int, *, joined: bool = True) -> bytes:
    sites = [f"site-{i + 1}" for i in range(clients)]
    lines = [JOINED.format(n=i + 1) for i in range(clients)] if joined else []
    for r in range(rounds):
        lines += [BANNER.format(r=r), SAMPLED.format(sites=sites)]
        lines += [AGGREGATED.format(site=site, k=k + 1, n=clients) for k, site in enumerate(sites)]
    return ("\n".join(lines) + "\n").encode()


def write_result(folder: Path, rounds: int, clients: int, *, summary: bool = True, log: bool = True) -> Path:
    server = folder / "server"
    (server / "simulate_job" / "metrics").mkdir(parents=True)
    if log:
        (server / "log.txt").write_bytes(server_log(rounds, clients))
    if summary:
        document = {"final_round": rounds - 1, "final_aggregated_metrics": [{"name": "accuracy", "value": 0.8}]}
        (server / "simulate_job" / "metrics" / "metrics_summary.json").write_text(json.dumps(document))
        records = [{"round": r, "sites": [{"name": f"site-{i + 1}"} for i in range(clients)]} for r in range(rounds)]
        text = "\n".join(json.dumps(record) for record in records)
        (server / "simulate_job" / "metrics" / "round_metrics.jsonl").write_text(text)
    return folder


def test_rounds_and_clients_come_from_every_source_and_the_largest_wins():
    ran = what_ran.from_artifacts(server_log(3, 2), {"final_round": 2}, [{"round": 4, "sites": [{"name": "x"}]}])
    assert ran.rounds == 5  # round_metrics shows round 4: five rounds ran, whatever the log's banners say
    assert ran.clients == 3  # site-1, site-2 and x took part
    assert ran.sources == [
        "rounds: server log",
        "rounds: metrics_summary.json",
        "rounds: round_metrics.jsonl",
        "clients: server log, round_metrics.jsonl",
    ]


def test_clients_are_read_from_sampled_and_aggregated_peers_without_the_client_manager():
    ran = what_ran.from_artifacts(server_log(2, 3, joined=False), None, [])
    assert (ran.rounds, ran.clients) == (2, 3)


def test_more_rounds_or_other_clients_violate_the_budget_and_fewer_rounds_do_not():
    def verdict(rounds, clients):
        ran = what_ran.WhatRan(rounds=rounds, clients=clients)
        return what_ran.check(ran, num_rounds=3, num_clients=2)

    assert verdict(3, 2).status == what_ran.VERIFIED and verdict(3, 2).reason == ""
    assert verdict(2, 2).status == what_ran.VERIFIED  # a job's own stop condition may end it early
    assert verdict(12, 2).reason == "budget violated: 12 rounds ran, the fixed budget is 3"
    assert verdict(3, 3).reason == "budget violated: 3 clients took part, the fixed budget is 2"
    assert verdict(3, 1).status == what_ran.VIOLATED
    both = verdict(5, 4)
    assert both.status == what_ran.VIOLATED and "5 rounds ran" in both.reason and "4 clients took part" in both.reason


def test_what_no_artifact_shows_is_unverified_never_assumed():
    nothing = what_ran.check(what_ran.WhatRan(), num_rounds=3, num_clients=2)
    assert nothing.status == what_ran.UNVERIFIED
    assert nothing.reason == "budget unverified: no artifact shows the rounds or the clients that ran"
    rounds_only = what_ran.check(what_ran.WhatRan(rounds=3), num_rounds=3, num_clients=2)
    assert rounds_only.status == what_ran.UNVERIFIED and rounds_only.reason.endswith("the clients that ran")
    assert what_ran.check(what_ran.WhatRan(), num_rounds=None, num_clients=None).status == what_ran.VERIFIED
    assert what_ran.check(what_ran.WhatRan(rounds=12, clients=None), num_rounds=3, num_clients=2).status == (
        what_ran.VIOLATED  # a violation shown by one figure is never softened by another that is unknown
    )


def test_read_what_ran_finds_the_server_artifacts_of_a_copied_result(tmp_path):
    folder = write_result(tmp_path / "simulation", rounds=12, clients=2)
    (folder / "site-1").mkdir()
    (folder / "site-1" / "log.txt").write_bytes(server_log(40, 9))  # a site's log is not the server's
    ran = what_ran.read_what_ran(folder)
    assert (ran.rounds, ran.clients) == (12, 2)
    assert what_ran.check(ran, num_rounds=3, num_clients=2).to_dict() == {
        "status": "violated",
        "reason": "budget violated: 12 rounds ran, the fixed budget is 3",
        "rounds": 12,
        "clients": 2,
    }


def test_read_what_ran_of_a_folder_without_artifacts_shows_nothing(tmp_path):
    assert what_ran.read_what_ran(tmp_path) == what_ran.WhatRan()
    assert what_ran.read_what_ran(tmp_path / "missing") == what_ran.WhatRan()


def test_symlinked_and_damaged_artifacts_are_not_read(tmp_path):
    folder = write_result(tmp_path / "simulation", rounds=3, clients=2, log=False, summary=False)
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_bytes(server_log(9, 2))
    (folder / "server" / "log.txt").symlink_to(elsewhere)
    metrics = folder / "server" / "simulate_job" / "metrics"
    (metrics / "metrics_summary.json").write_text("{not json")
    (metrics / "round_metrics.jsonl").write_text('{"round": 1}\nnot json\n{"round": "7"}\n')
    ran = what_ran.read_what_ran(folder)
    assert ran.rounds == 2 and ran.clients is None
