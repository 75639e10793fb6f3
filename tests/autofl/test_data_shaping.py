"""Options that shape the data, the validation split or the metric are fixed: the importer classifies them (in
job.py and through train_args in the client script), `suggest` never proposes them, run args and source edits
that change them are refused (exit 2, nothing changed), and `--fixed-args` pins more."""

import ast

import pytest
import yaml
from autofl_core.importer.data_shaping import classify
from runner_support import ledger_rows, run_inproc, source_dir, standin_workspace

CLIENT_PARTITION = """
def dirichlet_partition(n, alpha):
    return [n * alpha]


def evaluate(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--local_steps", type=int, default=5)
    parser.add_argument("--use_bonus", action="store_true")
    parser.add_argument("--alpha", type=float, default=0.5)
    args = parser.parse_args(argv)
    dirichlet_partition(100, alpha=args.alpha)
"""


def shaping_workspace(tmp_path):
    """The stand-in with `--alpha` (forwarded to client.py, which partitions with it) and `--val_ratio`."""
    workspace = standin_workspace(tmp_path)
    job = workspace / "job.py"
    text = job.read_text()
    text = text.replace(
        '    parser.add_argument("--use_bonus", action="store_true")\n',
        '    parser.add_argument("--use_bonus", action="store_true")\n'
        '    parser.add_argument("--alpha", type=float, default=0.5)\n'
        '    parser.add_argument("--val_ratio", type=float, default=0.2)\n',
    )
    text = text.replace(
        'train_args=f"--lr {args.lr} --local_steps {args.local_steps}"',
        'train_args=f"--lr {args.lr} --local_steps {args.local_steps} --alpha {args.alpha}"',
    )
    text = text.replace("    env = SimEnv(", "    print('validation share', args.val_ratio)\n    env = SimEnv(")
    job.write_text(text)
    client = workspace / "client.py"
    body = client.read_text()
    start = body.index("def evaluate(argv):")
    end = body.index("    args = parser.parse_args(argv)\n") + len("    args = parser.parse_args(argv)\n")
    client.write_text(body[:start] + CLIENT_PARTITION.strip() + "\n" + body[end:])
    return workspace


@pytest.mark.slow
def test_a_data_shaping_option_is_fixed_never_suggested_and_refused_in_run_args_and_source(tmp_path):
    workspace = shaping_workspace(tmp_path)
    done = run_inproc(workspace, "initialize", "--max-candidates", "3")
    assert done.code == 0, done.stderr
    config = yaml.safe_load((workspace / "autofl.yaml").read_text())
    fixed = config["data_shaping"]["fixed"]
    assert fixed == {
        "--alpha": "its name (alpha) says it decides the data, the validation split or the metric",
        "--val_ratio": "its name (val_ratio) says it decides the data, the validation split or the metric",
    }
    assert "--alpha" not in config["summary"]["allowed"] and "--val_ratio" not in config["summary"]["allowed"]
    suggestions = run_inproc(workspace, "suggest", "--limit", "20").envelope["suggestions"]
    proposed = " ".join(" ".join(s["run_args"]) for s in suggestions)
    assert "--lr" in proposed and "--alpha" not in proposed and "--val_ratio" not in proposed
    before = (workspace / "results.tsv").read_bytes()
    refused = run_inproc(workspace, "prepare", "--name", "a", "--hypothesis", "h", "--run-args", "--alpha 0.6")
    assert refused.code == 2 and "--alpha" in refused.stderr and "shapes the data" in refused.stderr
    assert run_inproc(workspace, "prepare", "--name", "src", "--hypothesis", "h").code == 0
    job = source_dir(workspace, "src") / "job.py"
    job.write_text(job.read_text().replace('"--alpha", type=float, default=0.5', '"--alpha", type=float, default=5.0'))
    refused = run_inproc(workspace, "evaluate")
    assert refused.code == 2 and "data-shaping option --alpha" in refused.stderr
    assert (workspace / "results.tsv").read_bytes() == before and len(ledger_rows(workspace)) == 1


@pytest.mark.slow
def test_fixed_args_pins_more_options(tmp_path):
    workspace = standin_workspace(tmp_path)
    done = run_inproc(workspace, "initialize", "--max-candidates", "3", "--fixed-args", "local_steps")
    assert done.code == 0, done.stderr
    config = yaml.safe_load((workspace / "autofl.yaml").read_text())
    assert config["data_shaping"]["fixed"] == {"--local_steps": "pinned with --fixed-args"}
    proposed = " ".join(" ".join(s["run_args"]) for s in run_inproc(workspace, "suggest").envelope["suggestions"])
    assert "--local_steps" not in proposed and "--lr" in proposed
    refused = run_inproc(workspace, "prepare", "--name", "a", "--hypothesis", "h", "--run-args", "--local_steps 9")
    assert refused.code == 2 and "pinned with --fixed-args" in refused.stderr
    unknown = run_inproc(standin_workspace(tmp_path, "other"), "initialize", "--fixed-args", "nope")
    assert unknown.code == 2 and "--fixed-args nope: job.py defines no such option" in unknown.stderr


def flags(*names):
    return [{"option_strings": [f"--{name}"], "dest": name} for name in names]


def test_classify_reads_job_py_and_the_client_script():
    job = ast.parse(
        "import argparse\nargs = argparse.ArgumentParser().parse_args()\n"
        "train, val = random_split(data, [1 - args.keep_share, args.keep_share])\n"
        "Recipe(train_args=f'--lr {args.lr} --beta {args.beta} --gamma {args.gamma}')\n"
    )
    script = ast.parse(
        "args = parser.parse_args()\nsite_data(name, beta=args.beta)\nopt = SGD(lr=args.lr)\nuse(args.gamma)\n"
    )
    found = classify(flags("keep_share", "lr", "beta", "gamma"), job, script, {"--lr", "--beta", "--gamma"})
    assert found["fixed"] == {
        "--keep_share": "job.py passes it to random_split(...)",
        "--beta": "the client script passes it to site_data(...)",
    }
    assert found["unclassified"] == {}


def test_unreadable_flow_is_unclassified():
    job = ast.parse("Recipe(train_args=f'--lr {args.lr} --beta {args.beta}')\n")
    dynamic = ast.parse("args = parser.parse_args()\nconfig = vars(args)\nrun(**config)\n")
    found = classify(flags("lr", "beta"), job, dynamic, {"--lr", "--beta"})
    assert found["fixed"] == {} and set(found["unclassified"]) == {"--lr", "--beta"}
    unread = classify(flags("lr", "beta"), job, None, {"--lr", "--beta"})
    assert set(unread["unclassified"]) == {"--lr", "--beta"}
    names = classify(
        flags("dirichlet_alpha", "val_ratio", "num_samples", "iid", "lr", "eval_batch_size"), job, None, set()
    )
    assert set(names["fixed"]) == {"--dirichlet_alpha", "--val_ratio", "--num_samples", "--iid"}
