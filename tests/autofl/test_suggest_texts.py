"""`suggest` says honestly what each suggestion changes, specific to the option (issue 22, point 8)."""

from autofl_core.runner.actions import suggest

SPACE = [
    {"flag": "--lr", "dest": "lr", "type": "float", "default": 0.1},
    {"flag": "--local_steps", "dest": "local_steps", "type": "int", "default": 10},
    {"flag": "--batch_size", "dest": "batch_size", "type": "int", "default": 32},
    {"flag": "--momentum", "dest": "momentum", "type": "float", "default": 0.0},
    {"flag": "--weight_decay", "dest": "weight_decay", "type": "float", "default": 0.0},
    {"flag": "--mu", "dest": "mu", "type": "float", "default": 0.0},
    {"flag": "--num_workers", "dest": "num_workers", "type": "int", "default": 2},
    {"flag": "--aggregator", "dest": "aggregator", "type": "str", "default": "mean", "choices": ["mean", "median"]},
    {"flag": "--use_amp", "dest": "use_amp", "type": "bool", "default": False},
]


def _by_args():
    seeds = suggest.suggestions(SPACE, current={}, tried=[], used_names=set(), limit=50, metric="accuracy")
    return {" ".join(s["run_args"]): s for s in seeds}


def test_each_hypothesis_says_what_the_change_does():
    seeds = _by_args()
    assert seeds["--local_steps 20"]["hypothesis"].startswith(
        "`--local_steps 20`: twice the local compute per round (within the fixed budget, which counts rounds and "
        "clients)"
    )
    assert "half the local compute per round" in seeds["--local_steps 5"]["hypothesis"]
    assert "twice the step size" in seeds["--lr 0.2"]["hypothesis"]
    assert "a quarter of the step size" in seeds["--lr 0.025"]["hypothesis"]
    assert "twice the batch size" in seeds["--batch_size 64"]["hypothesis"]
    assert "SGD momentum" in seeds["--momentum 0.9"]["hypothesis"]
    assert "weight decay" in seeds["--weight_decay 0.0001"]["hypothesis"]
    assert "FedProx proximal term" in seeds["--mu 0.01"]["hypothesis"]
    assert "speed, not the score" in seeds["--num_workers 4"]["hypothesis"]
    assert "uses aggregator median instead of mean" in seeds["--aggregator median"]["hypothesis"]
    assert "turns --use_amp on" in seeds["--use_amp"]["hypothesis"]
    assert (
        "--lr 0.1 -> 0.2" in seeds["--lr 0.2"]["hypothesis"]
        and "accuracy, higher is better" in seeds["--lr 0.2"]["hypothesis"]
    )


def test_no_two_options_share_one_boilerplate_hypothesis():
    effects: dict[str, set] = {}
    for seed in _by_args().values():
        effects.setdefault(seed["run_args"][0], set()).add(seed["hypothesis"].split(" (")[0].split(": ", 1)[1])
    for flag, texts in effects.items():
        others = set().union(*(t for f, t in effects.items() if f != flag))
        assert not texts & others, flag


def test_every_suggestion_carries_a_conventional_family():
    seeds = _by_args()
    assert {s["family"] for s in seeds.values()} <= set(suggest.FAMILIES)
    assert (seeds["--lr 0.2"]["family"], seeds["--mu 0.01"]["family"], seeds["--aggregator median"]["family"]) == (
        "optimizer",
        "regularization",
        "aggregation",
    )


def test_momentum_and_dropout_stay_below_one():
    space = [{"flag": "--momentum", "dest": "momentum", "type": "float", "default": 0.9}]
    values = [s["run_args"][1] for s in suggest.suggestions(space, current={}, tried=[], used_names=set(), limit=5)]
    assert values == ["0.45"]
