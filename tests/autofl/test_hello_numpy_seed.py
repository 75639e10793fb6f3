"""examples/hello-numpy --seed: without it the job is unchanged (full-batch, deterministic); with it each site
shuffles its data per round and trains on mini-batches, so runs with different seeds differ and equal seeds
repeat exactly. Checked on the client's own functions (a NumPy replay of FedAvg, no NVFLARE run)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from autofl_core.importer import api

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "hello-numpy"


@pytest.fixture(scope="module")
def client():
    spec = importlib.util.spec_from_file_location("hello_numpy_client_seed", EXAMPLE / "client.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fedavg(client, lr, steps, seed, rounds=3):
    sites = ("site-1", "site-2")
    data = [client.site_data(site) for site in sites]
    weights = np.zeros(client.NUM_FEATURES + 1)
    for current in range(rounds):
        accuracies = [client.accuracy(weights, x, y) for x, y in data]
        weights = sum(
            client.train(weights, x, y, lr, steps, client.round_rng(seed, site, current))
            for site, (x, y) in zip(sites, data, strict=True)
        ) / len(data)
    return sum(accuracies) / len(accuracies)


def test_without_seed_training_is_the_full_batch_rule(client):
    x, y = client.site_data("site-1")
    w = np.zeros(client.NUM_FEATURES + 1)
    p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30.0, 30.0)))
    assert np.array_equal(client.train(w, x, y, 0.1, 1), w - 0.1 * x.T @ (p - y) / len(y))
    assert client.round_rng(None, "site-1", 0) is None
    assert fedavg(client, 0.05, 5, None) == pytest.approx(0.7525), "README's default score is unchanged"


def test_seeds_shuffle_per_round_and_repeat_exactly(client):
    scores = {seed: fedavg(client, 0.05, 5, seed) for seed in range(6)}
    assert len(set(scores.values())) > 2, scores
    assert fedavg(client, 0.05, 5, 3) == scores[3]
    assert all(abs(score - 0.7525) < 0.02 for score in scores.values()), "the same algorithm, other shuffles"
    first, second = client.round_rng(1, "site-1", 0), client.round_rng(1, "site-1", 1)
    assert not np.array_equal(first.permutation(400), second.permutation(400)), "a new shuffle every round"


def test_job_forwards_seed_only_when_given_and_the_importer_keeps_it_out_of_tuning():
    config = api.import_job(EXAMPLE / "job.py")
    assert config["admission_errors"] == [] and config["summary"]["allowed"] == ["--lr", "--local_steps"]
    seed = next(flag for flag in config["argparse"]["flags"] if flag["dest"] == "seed")
    assert seed["value"] is None and seed["type"] == "int"
    text = (EXAMPLE / "job.py").read_text()
    assert '(f" --seed {args.seed}" if args.seed is not None else "")' in text
