"""Whole entries of the fixed budget, the objective and the expression values, including their reasons.

A refused budget field or an unresolved value is reported with a `reason` that tells the user what to change;
these tests compare each entry whole, so a changed source, flag, confidence or wording fails. Mutation testing
(`make mutate`, docs/mutation.md) found these branches checked only for the presence of a reason.
"""

from __future__ import annotations

import pytest
from autofl_core.importer import api
from autofl_core.importer.values import Val, describe, source_text, to_jsonable

HEAD = (
    "import argparse, os, random\nfrom nvflare.recipe import SimEnv, ProdEnv\nfrom nvflare.job_config.api import FedJob\n"
    "from nvflare.app_common.workflows.fedavg import FedAvg\nfrom nvflare.app_opt.pt.recipes.fedavg import FedAvgRecipe\n"
    "parser = argparse.ArgumentParser()\nparser.add_argument('--n', type=int, default=2)\n"
    "parser.add_argument('--lr', type=float, default=0.5)\nparser.add_argument('--name', default='run')\n"
    "parser.add_argument('--fast', action='store_true')\nargs = parser.parse_args()\n"
)
LINE = HEAD.count("\n") + 1


def imported(body: str, **kwargs) -> dict:
    return api.import_source(HEAD + body, **kwargs)


def recipe(kwargs: str = "min_clients=2, num_rounds=3", env: str = "SimEnv(num_clients=2)", **options) -> dict:
    return imported(f"r = FedAvgRecipe({kwargs})\nr.execute({env})\n", **options)


def v_of(expression: str, prelude: str = "", base_args=()) -> dict:
    source = (
        prelude + f"r = FedAvgRecipe(min_clients=2, num_rounds=3, v={expression})\nr.execute(SimEnv(num_clients=2))\n"
    )
    return imported(source, base_args=base_args)["recipe_args"]["v"]


def unresolved(expr: str, reason: str, *flags: str) -> dict:
    return {
        "value": None,
        "confidence": "unresolved",
        "expr": expr,
        **({"flags": list(flags)} if flags else {}),
        "reason": reason,
    }


def missing(source: str, reason: str) -> dict:
    return {
        "value": None,
        "confidence": "unresolved",
        "flag": None,
        "source": source,
        "reason": reason,
        "depends_on": [],
    }


# ---- fixed budget ---------------------------------------------------------------------------------------------
def test_a_budget_value_that_is_an_object_names_where_it_comes_from():
    budget = recipe("min_clients=2, num_rounds=random.Random()")["fixed_budget"]
    assert budget["num_rounds"] == missing(
        "FedAvgRecipe(num_rounds=...)", f"it comes from random.Random(...) at line {LINE}, which draws random numbers"
    )


def test_budget_values_built_under_an_option_depend_on_it():
    body = "if args.fast:\n    r = FedAvgRecipe(min_clients=2, num_rounds=1)\nelse:\n    r = FedAvgRecipe(min_clients=2, num_rounds=args.n)\nr.execute(SimEnv(num_clients=2))\n"
    budget = imported(body)["fixed_budget"]
    assert budget["num_rounds"] == {
        "value": 2,
        "confidence": "pinned",
        "flag": "--n",
        "source": "FedAvgRecipe(num_rounds=...)",
        "depends_on": ["--n", "--fast"],
    }
    assert budget["min_clients"] == {
        "value": 2,
        "confidence": "pinned",
        "flag": None,
        "source": "FedAvgRecipe(min_clients=...)",
        "depends_on": ["--fast"],
    }
    assert api.fixed_budget_options(imported(body)) == ["--fast", "--n"]


def test_budget_from_two_options_lists_both():
    budget = recipe("min_clients=2, num_rounds=args.n * (args.lr > 0) * 2")["fixed_budget"]
    assert budget["num_rounds"] == {
        "value": 4,
        "confidence": "pinned",
        "flag": None,
        "flags": ["--n", "--lr"],
        "source": "FedAvgRecipe(num_rounds=...)",
        "depends_on": ["--n", "--lr"],
    }


def test_a_budget_value_that_is_not_a_positive_integer():
    budget = recipe("min_clients=0, num_rounds=args.lr")["fixed_budget"]
    assert budget["min_clients"] == {
        "value": None,
        "confidence": "unresolved",
        "flag": None,
        "source": "FedAvgRecipe(min_clients=...)",
        "depends_on": [],
        "reason": "value 0 is not a positive integer",
    }
    assert budget["num_rounds"]["reason"] == "value 0.5 is not a positive integer"
    assert budget["num_rounds"]["depends_on"] == ["--lr"]


def test_env_clients():
    assert recipe(env="ProdEnv(startup_kit_location='k')")["fixed_budget"]["num_clients"] == {
        "value": None,
        "confidence": "not_applicable",
        "flag": None,
        "source": None,
        "reason": "ProdEnv: clients are the provisioned production sites",
        "depends_on": [],
    }
    listed = recipe(env="SimEnv(num_clients=0, clients=['a', 'b', 'c'])")["fixed_budget"]["num_clients"]
    assert listed == {
        "value": 3,
        "confidence": "medium",
        "flag": None,
        "source": "SimEnv(clients=[...])",
        "depends_on": [],
    }
    zero = recipe(env="SimEnv(num_clients=0)")["fixed_budget"]["num_clients"]
    assert zero["reason"] == "value 0 is not a positive integer"
    from_env = recipe(env="SimEnv(clients=os.environ['SITES'].split(','))")["fixed_budget"]["num_clients"]
    assert from_env == missing(
        "SimEnv(clients=[...])",
        f"client list is not resolved: it reads the environment variable SITES at run time (line {LINE + 1})",
    )
    obj = recipe(env="SimEnv(clients=random.sample(['a'], 1))")["fixed_budget"]["num_clients"]
    assert obj["reason"].startswith("client list is not resolved: ")
    assert recipe(env="SimEnv()")["fixed_budget"]["num_clients"]["reason"] == (
        "SimEnv gets neither num_clients= nor clients="
    )


def fedjob(components: str, run: str) -> dict:
    return imported("job = FedJob(name='j', min_clients=2)\n" + components + f"job.{run}\n")["fixed_budget"]


def test_fedjob_budget_sources():
    budget = fedjob(
        "job.to_server(FedAvg(num_clients=2, num_rounds=args.n))\njob.to_clients(object())\n",
        "simulator_run('/tmp/w', n_clients=3)",
    )
    assert budget["num_rounds"] == {
        "value": 2,
        "confidence": "high",
        "flag": "--n",
        "source": "FedAvg(num_rounds=...)",
        "depends_on": ["--n"],
    }
    assert budget["min_clients"] == {
        "value": 2,
        "confidence": "high",
        "flag": None,
        "source": "FedAvg(num_clients=...)",
        "depends_on": [],
    }
    assert budget["num_clients"] == {
        "value": 3,
        "confidence": "high",
        "flag": None,
        "source": "simulator_run(n_clients=...)",
        "depends_on": [],
    }
    rounds = imported(
        "job = FedJob(name='j', min_clients=2, num_rounds=4)\njob.to(object(), 'site-1')\njob.simulator_run('/tmp/w')\n"
    )["fixed_budget"]
    assert rounds["num_rounds"]["source"] == "FedJob(num_rounds=...)"
    assert rounds["num_clients"] == {
        "value": 1,
        "confidence": "high",
        "flag": None,
        "source": "FedJob.to(..., site) targets",
        "depends_on": [],
    }


@pytest.mark.parametrize(
    ("components", "run", "entry"),
    [
        (
            "",
            "simulator_run('/tmp/w', n_clients=2, clients=['a'])",
            missing("simulator_run(...)", "NVFLARE rejects n_clients= together with clients=; pass only one"),
        ),
        (
            "job.to_clients(object())\n",
            "simulator_run('/tmp/w')",
            missing(
                "simulator_run(n_clients=...)",
                "components go to every client (to_clients) but simulator_run gets no n_clients=",
            ),
        ),
        (
            "job.to(object(), 'site-1')\n",
            "simulator_run('/tmp/w', n_clients=2)",
            missing(
                "simulator_run(n_clients=...)",
                "NVFLARE rejects simulator_run(n_clients=...) when job.to() already named the sites; drop n_clients=",
            ),
        ),
        (
            "job.to(object(), os.environ['SITE'])\n",
            "simulator_run('/tmp/w')",
            missing(
                "FedJob.to(..., site)",
                "a site name given to job.to(...) is not resolved statically: it reads the "
                f"environment variable SITE at run time (line {LINE + 2})",
            ),
        ),
        (
            "",
            "simulator_run('/tmp/w')",
            missing(
                "FedJob.to(..., site)",
                "no component is sent to the clients; use job.to(obj, 'site-1') or job.to_clients(obj)",
            ),
        ),
    ],
)
def test_fedjob_clients(components, run, entry):
    assert fedjob("job.to_server(FedAvg(num_rounds=2))\n" + components, run)["num_clients"] == entry


def test_fedjob_without_a_controller_has_no_rounds():
    budget = fedjob("job.to(object(), 'site-1')\n", "simulator_run('/tmp/w')")
    assert budget["num_rounds"] == missing("FedJob", "no controller with num_rounds= is attached to the FedJob")


# ---- objective ------------------------------------------------------------------------------------------------
def objective(kwargs: str, **options) -> tuple[dict, list[dict]]:
    config = recipe("min_clients=2, num_rounds=3, " + kwargs, **options)
    return config["objective"], [u for u in config["unresolved"] if u["field"].startswith("objective.")]


def test_key_metric_mode_that_is_not_min_or_max():
    obj, notes = objective("key_metric='loss', key_metric_mode=args.name")
    assert (obj["mode"], obj["mode_contract_source"], obj["job_key_metric_mode"]) == (None, "unresolved", None)
    assert notes == [{"field": "objective.mode", "reason": "key_metric_mode is not a literal 'min' or 'max'"}]
    assert obj["metric_invariants"]["scale_units_direction"] == (
        "loss: None (direction unresolved; from unresolved); same scale and units every trial"
    )


def test_key_metric_mode_against_the_stop_condition():
    obj, notes = objective("key_metric='loss', key_metric_mode='max', stop_cond='loss <= 0.1'")
    assert (obj["mode"], obj["mode_contract_source"]) == (None, "unresolved")
    assert notes == [
        {
            "field": "objective.mode",
            "reason": "key_metric_mode='max' conflicts with stop_cond 'loss <= 0.1' (NVFLARE rejects it)",
        }
    ]
    agreed, _ = objective("key_metric='loss', key_metric_mode='min', stop_cond='loss <= 0.1'")
    assert (agreed["mode"], agreed["mode_contract_source"]) == ("min", "key_metric_mode")
    stop, _ = objective("key_metric='loss', stop_cond='loss < 0.1'")
    assert (stop["mode"], stop["mode_contract_source"]) == ("min", "stop_cond")
    other, _ = objective("key_metric='loss', stop_cond='acc < 0.1'")  # a stop condition on another metric
    assert (other["mode"], other["mode_contract_source"]) == ("max", "core_default")


@pytest.mark.parametrize(("negate", "mode"), [("True", "min"), ("False", "max")])
def test_model_selector_negation_sets_the_direction(negate, mode):
    prelude = "from nvflare.app_common.widgets.intime_model_selector import IntimeModelSelector\n"
    config = imported(
        prelude + "job = FedJob(name='j', min_clients=2)\njob.to_server(FedAvg(num_clients=2, num_rounds=2))\n"
        f"job.to_server(IntimeModelSelector(key_metric='val_loss', negate_key_metric={negate}))\n"
        "job.to(object(), 'site-1')\njob.simulator_run(os.environ.get('NVFLARE_SIMULATOR_WORKSPACE_ROOT', '/w'))\n"
    )
    obj = config["objective"]
    assert (obj["job_key_metric"], obj["mode"], obj["mode_contract_source"]) == (
        "val_loss",
        mode,
        "IntimeModelSelector(negate_key_metric=...)",
    )


def test_invariants_name_the_metric_and_the_train_script():
    body = (
        "r = FedAvgRecipe(min_clients=2, num_rounds=3, key_metric='val_acc', train_script='src/train.py')\n"
        "r.execute(SimEnv(num_clients=2))\n"
    )
    config = api.import_source(HEAD + body, read_file=lambda rel: "x = 1\n" if rel == "src/train.py" else None)
    invariants = config["objective"]["metric_invariants"]
    assert invariants["definition"] == "'val_acc' as reported by src/train.py to NVFLARE"
    assert invariants["scale_units_direction"] == (
        "val_acc: max (higher is better; from core_default); same scale and units every trial"
    )
    assert invariants["evaluation_data"] == (
        "the validation data and split src/train.py evaluates on; must not change between candidates"
    )


def test_unsupported_job_objective_is_empty_but_names_the_metric():
    config = api.import_source("print('hello')\n", metric="auc")
    assert config["objective"] == {
        "bridged": False,
        "job_key_metric": None,
        "job_key_metric_mode": None,
        "job_key_metric_source": None,
        "metric": "auc",
        "metric_extraction_order": ["auc"],
        "metric_invariants": {},
        "metric_source": "auto",
        "mode": None,
        "mode_contract_source": "unresolved",
        "requested_metric": "auc",
        "schema_mode": None,
    }


# ---- expressions and builtins -----------------------------------------------------------------------------------
ENV = "os.environ['X']"
ENV2 = 'os.environ["X"]'
READS = f"it reads the environment variable X at run time (line {LINE})"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (f"args.lr + {ENV}", unresolved(f"args.lr + {ENV}", READS, "--lr")),
        ("args.lr ** 300", unresolved("args.lr ** 300", "expression cannot be evaluated safely", "--lr")),
        ("args.name * -2", {"value": "", "confidence": "medium", "expr": "args.name * -2", "flags": ["--name"]}),
        ("args.n * 3 - 1", {"value": 5, "confidence": "medium", "expr": "args.n * 3 - 1", "flags": ["--n"]}),
        (f"{ENV} or args.n", unresolved(f"{ENV} or args.n", READS, "--n")),
        (
            "args.fast or args.n",
            {"value": 2, "confidence": "medium", "expr": "args.fast or args.n", "flags": ["--fast", "--n"]},
        ),
        ("args.n and 0 and 5", {"value": 0, "confidence": "medium", "expr": "args.n and 0 and 5", "flags": ["--n"]}),
        (f"args.n < {ENV}", unresolved(f"args.n < {ENV}", READS, "--n")),
        ("args.n < 'a'", unresolved("args.n < 'a'", "comparison cannot be evaluated", "--n")),
        ("1 < args.n <= 2", {"value": True, "confidence": "medium", "expr": "1 < args.n <= 2", "flags": ["--n"]}),
        ("{[1]: 2}", unresolved("{[1]: 2}", "unhashable key")),
        ("{1, [2]}", unresolved("{1, [2]}", "unhashable item")),
        (f"[1, {ENV}]", unresolved(f"[1, {ENV}]", READS)),
        (
            f"f'{{args.lr:.{{{ENV2}}}}}'",
            unresolved(f'f"{{args.lr:.{{{ENV}}}}}"', "format spec is not resolved", "--lr"),
        ),
        (
            "f'{args.lr:.2f}-{args.name!r}'",
            {
                "value": "0.50-'run'",
                "confidence": "medium",
                "expr": "f'{args.lr:.2f}-{args.name!r}'",
                "flags": ["--lr", "--name"],
            },
        ),
        ("f'{args.name:d}'", unresolved("f'{args.name:d}'", "invalid format", "--name")),
        (f"f'{{args.n}}{{{ENV2}}}'", unresolved(f'f"{{args.n}}{{{ENV}}}"', READS, "--n")),
        (f"[1, 2][{ENV}]", unresolved(f"[1, 2][{ENV}]", READS)),
        (f"[args.n][{ENV}]", unresolved(f"[args.n][{ENV}]", READS, "--n")),
        ("[1, 2][args.n]", unresolved("[1, 2][args.n]", "subscript cannot be evaluated", "--n")),
        (f"{ENV} + 1", unresolved(f"{ENV} + 1", READS)),
        ("'a' * 60000 + 'b' * 60000", unresolved("'a' * 60000 + 'b' * 60000", "expression cannot be evaluated safely")),
        ("['a' * 60000, 'b' * 60000]", unresolved("['a' * 60000, 'b' * 60000]", "container too large")),
        (f"[object()][{ENV}]", unresolved(f"[object()][{ENV}]", "subscript is not resolved")),
        ("args.n or 5", {"value": 2, "confidence": "medium", "expr": "args.n or 5", "flags": ["--n"]}),
        ("-args.n", {"value": -2, "confidence": "medium", "expr": "-args.n", "flags": ["--n"]}),
        ("-args.name", unresolved("-args.name", "invalid operand")),
        ("not args.fast", {"value": True, "confidence": "medium", "expr": "not args.fast", "flags": ["--fast"]}),
        (
            "1 if args.fast else args.n",
            {"value": 2, "confidence": "medium", "expr": "1 if args.fast else args.n", "flags": ["--fast", "--n"]},
        ),
    ],
)
def test_expressions(expression, expected):
    assert v_of(expression) == expected


@pytest.mark.parametrize(
    ("call", "flags"),
    [
        ("min(args.n, 5)", ("--n",)),
        ("len([1, 2])", ()),
        ("int('7')", ()),
        ("max(2, args.n)", ("--n",)),
        ("sorted([2, args.n, 1])", ("--n",)),
        ("str(args.lr)", ("--lr",)),
        ("min(args.n, key=args.lr)", ("--n", "--lr")),
    ],
)
def test_a_builtin_is_not_evaluated_and_names_the_line(call, flags):
    """`len()`, `range()`, `int()`, ... are not evaluated statically: the value is unresolved naming the call and
    its line and keeps the options it came from (a dry run reads the real value)."""
    reason = f"{call.split('(')[0]}() at line {LINE} is not evaluated statically"
    assert v_of(call) == unresolved(call, reason, *flags)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("open('a.txt').read()", unresolved("open('a.txt').read()", f"open() at line {LINE} reads files at run time")),
        (f"int({ENV})", unresolved(f"int({ENV})", READS)),
        ("dict(a=args.n, b='x')", {"value": {"a": 2, "b": "x"}, "confidence": "medium", "flags": ["--n"]}),
    ],
)
def test_a_builtin_of_a_run_time_input_names_the_input_and_dict_keywords_are_a_literal(expression, expected):
    assert v_of(expression) == expected


@pytest.mark.parametrize(
    ("call", "flags"), [("os.path.join('data', args.name)", ("--name",)), ("os.path.basename('a/b.py')", ())]
)
def test_a_path_function_is_not_evaluated_and_names_the_line(call, flags):
    """`os.path.*` is not evaluated statically: the value is unresolved naming the call and its line and keeps the
    options it came from (a dry run records the real path)."""
    reason = f"{call.split('(')[0]}() at line {LINE} is not evaluated statically"
    assert v_of(call) == unresolved(call, reason, *flags)


def test_a_path_under_an_environment_read_names_the_variable():
    entry = v_of(f"os.path.join({ENV}, 'sim')")
    assert (entry["confidence"], entry["reason"]) == ("unresolved", READS)


def test_a_loop_of_unknown_length_multiplies_nothing():
    assert v_of("'ab' * args.n", base_args=["--n", "0"])["value"] == ""


def test_source_text_is_cut_at_its_limit():
    import ast

    node = ast.parse("x" * 200).body[0].value
    assert source_text(node) == "x" * 200
    longer = ast.parse("x" * 201).body[0].value
    assert source_text(longer) == "x" * 197 + "..."


def test_jsonable_and_describe():
    assert to_jsonable({3, 1}) == [1, 3]
    assert to_jsonable({(1, 2)}) == [[1, 2]]
    assert describe(Val(5, "high", "", ("--n", "env:X"))) == {"value": 5, "confidence": "high", "flags": ["--n"]}

    class Labelled:
        label = "FedAvg(...)"

    assert describe(Labelled()) == {
        "value": None,
        "confidence": "unresolved",
        "expr": "FedAvg(...)",
        "reason": "an object, not a data value",
    }
    assert describe(object())["expr"] == "object"


# ---- support and admission messages -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            "r = FedAvgRecipe(min_clients=2, num_rounds=2)\n",
            f"FedAvgRecipe is built at line {LINE} but never run; call recipe.execute(env) (or job.simulator_run(...)) "
            "in job.py",
        ),
        (
            "from nvflare.app_common.np.recipes import NumpyCrossSiteEvalRecipe\nr = NumpyCrossSiteEvalRecipe()\n"
            "r.execute(SimEnv(num_clients=2))\n",
            "NumpyCrossSiteEvalRecipe is evaluation-only: it runs cross-site evaluation of existing models and trains "
            "nothing; Auto-FL needs a training job",
        ),
        (
            "from nvflare.app_common.np.recipes import NumpyCrossSiteEvalRecipe\nr = NumpyCrossSiteEvalRecipe()\n",
            "NumpyCrossSiteEvalRecipe is evaluation-only: it runs cross-site evaluation of existing models and trains "
            "nothing; Auto-FL needs a training job",
        ),
        (
            "inner = FedAvgRecipe(min_clients=2, num_rounds=2)\nr = FedAvgRecipe(min_clients=2, num_rounds=2, "
            "inner=inner)\nr.execute(SimEnv(num_clients=2))\n",
            "FedAvgRecipe nests another application (FedAvgRecipe); Auto-FL cannot budget it",
        ),
    ],
)
def test_unsupported_reasons(body, reason):
    assert imported(body)["import"]["support"] == {"status": "unsupported", "reason": reason}


def test_run_and_execute_pick_the_executed_call():
    config = imported(
        "r = FedAvgRecipe(min_clients=2, num_rounds=2)\nr.execute(SimEnv(num_clients=3))\nr.export('/tmp/x')\n"
    )
    assert config["job"]["run_call"] == "execute"
    assert config["fixed_budget"]["num_clients"]["value"] == 3


def test_fedjob_subclasses_from_nvflare_are_fedjobs():
    body = (
        "from nvflare.app_opt.pt.job_config.base_fed_job import BaseFedJob\njob = BaseFedJob(name='j', min_clients=2)\n"
        "job.to_server(FedAvg(num_rounds=2))\njob.to(object(), 'site-1')\n"
        "job.simulator_run(os.environ.get('NVFLARE_SIMULATOR_WORKSPACE_ROOT', '/w'))\n"
    )
    config = imported(body)
    assert config["import"]["support"] == {"status": "supported", "reason": "recognized fedjob pattern"}
    assert config["admission_errors"] == []


def test_a_budget_schema_is_not_checked_against_an_unsupported_job():
    config = api.import_source(
        "print('hi')\n", schema_text="comparison_budget_args:\n  default_candidate_budget:\n    num_rounds: 5\n"
    )
    assert config["schema"]["budget_mismatches"] == []
    assert [e["code"] for e in config["admission_errors"]] == ["AUTOFL_UNSUPPORTED_JOB"]


def test_empty_budget_names_the_first_reason():
    config = recipe("min_clients=random.Random(), num_rounds=random.Random()", env="SimEnv(clients=random.Random())")
    assert [e["code"] for e in config["admission_errors"]] == ["AUTOFL_EMPTY_FIXED_BUDGET"]
    assert config["admission_errors"][0]["message"] == (
        "no fixed training budget (num_clients, min_clients, num_rounds) could be read from job.py (num_clients: "
        f"client list is not resolved: it comes from random.Random(...) at line {LINE + 1}, which draws random "
        "numbers); pass them as "
        "literals or argparse values to the recipe and SimEnv"
    )


def test_class_parser_hint_is_the_empty_budget_message():
    body = (
        "class Job:\n    def __init__(self):\n        self.args = argparse.ArgumentParser().parse_args()\n"
        "j = Job()\nr = FedAvgRecipe(min_clients=j.args.n, num_rounds=j.args.r)\nr.execute(SimEnv(num_clients=j.args.n))\n"
    )
    source = (
        "import argparse\nfrom nvflare.recipe import SimEnv\nfrom nvflare.app_opt.pt.recipes.fedavg import "
        "FedAvgRecipe\n" + body
    )
    errors = api.import_source(source)["admission_errors"]
    assert errors == [
        {
            "code": "AUTOFL_EMPTY_FIXED_BUDGET",
            "message": "no fixed training budget could be read: job.py parses its options inside class Job "
            "(line 4), and the importer does not follow classes, so those values are unknown: "
            "build the parser in a function (e.g. args = define_parser()) and pass "
            "args.<option> to the recipe and env",
        }
    ]


def test_syntax_and_parse_errors_are_the_support_reason():
    assert api.import_source("x = (\n")["import"]["support"]["reason"].startswith(
        "job.py has a syntax error at line 1: "
    )
    deep = api.import_source("x = " + "-" * 100_000 + "1\n", job_name="train_job.py")["import"]["support"]
    assert deep == {
        "status": "unsupported",
        "reason": "train_job.py cannot be parsed (expressions nested too deeply); simplify the file",
    }


def test_train_script_notes():
    body = "r = FedAvgRecipe(min_clients=2, num_rounds=2, train_script='{}')\nr.execute(SimEnv(num_clients=2))\n"
    outside = imported(body.format("../x.py"))["unresolved"]
    assert {"field": "trust.train_script", "reason": "'../x.py' is outside the workspace"} in outside
    broken = api.import_source(HEAD + body.format("t.py"), read_file=lambda rel: "def (\n" if rel == "t.py" else None)[
        "unresolved"
    ]
    assert {"field": "trust.train_script", "reason": "t.py does not parse; its imports are unknown"} in broken
    gone = imported(body.format("t.py"))["unresolved"]
    assert {"field": "trust.train_script", "reason": "t.py is missing or unreadable"} in gone


# ---- budget from the recipe table, reasons of run-time inputs ------------------------------------------------------
def test_a_required_budget_argument_left_out_names_the_fix():
    from autofl_core.importer import recipes

    budget = recipe("num_rounds=3")["fixed_budget"]
    assert budget["min_clients"] == missing(
        "FedAvgRecipe(min_clients=...)",
        f"FedAvgRecipe requires min_clients= (nvflare {recipes.nvflare_version()}) and job.py does not pass it; pass "
        "it explicitly",
    )


SWARM = (
    "from nvflare.app_common.ccwf.ccwf_job import SwarmServerConfig, SwarmClientConfig\n"
    "from nvflare.app_opt.pt.recipes.swarm import BaseSwarmLearningRecipe\n"
)


def test_a_budget_read_from_an_argument_object():
    body = (
        SWARM + "if args.fast:\n    server = SwarmServerConfig(num_rounds=args.n)\nelse:\n"
        "    server = SwarmServerConfig(num_rounds=1)\nr = BaseSwarmLearningRecipe(name='s', min_clients=2, "
        "server_config=server, client_config=SwarmClientConfig())\nr.execute(SimEnv(num_clients=2))\n"
    )
    assert imported(body, base_args=["--fast"])["fixed_budget"]["num_rounds"] == {
        "value": 2,
        "confidence": "pinned",
        "flag": "--n",
        "depends_on": ["--n", "--fast"],
        "source": "BaseSwarmLearningRecipe(server_config=SwarmServerConfig(num_rounds=...))",
    }
    absent = SWARM + (
        "r = BaseSwarmLearningRecipe(name='s', min_clients=2, client_config=SwarmClientConfig())\n"
        "r.execute(SimEnv(num_clients=2))\n"
    )
    assert imported(absent)["fixed_budget"]["num_rounds"] == missing(
        "BaseSwarmLearningRecipe(server_config=...)",
        "BaseSwarmLearningRecipe reads num_rounds from its server_config= object; build it in job.py with the "
        "budget: server_config=<class>(num_rounds=N)",
    )
    data = absent.replace("min_clients=2,", "min_clients=2, server_config={'num_rounds': 3},")
    assert imported(data)["fixed_budget"]["num_rounds"]["source"] == "BaseSwarmLearningRecipe(server_config=...)"


def test_a_fixed_recipe_value_and_its_default_key_metric():
    from autofl_core.importer import recipes

    body = (
        "from nvflare.app_opt.sklearn.recipes.svm import SVMFedAvgRecipe\nr = SVMFedAvgRecipe(min_clients=2, "
        "train_script='t.py')\nr.execute(SimEnv(num_clients=2))\n"
    )
    config = imported(body)
    assert config["fixed_budget"]["num_rounds"] == {
        "value": 2,
        "confidence": "medium",
        "flag": None,
        "source": "SVMFedAvgRecipe fixed value",
        "depends_on": [],
        "note": f"recipe fixed value, nvflare {recipes.nvflare_version()}",
    }
    assert (config["objective"]["job_key_metric"], config["objective"]["job_key_metric_source"]) == (
        "AUC",
        "core_default",
    )  # SVMFedAvgRecipe's own default key metric in nvflare 2.9


def test_recipe_receiving_hidden_keyword_arguments():
    body = "opts = dict(os.environ)\nr = FedAvgRecipe(min_clients=2, **opts)\nr.execute(SimEnv(num_clients=2))\n"
    budget = imported(body)["fixed_budget"]
    assert budget["num_rounds"] == missing(
        "FedAvgRecipe(**...)", "FedAvgRecipe receives **kwargs the importer cannot see"
    )
    assert budget["min_clients"]["value"] == 2  # passed by name: known even with **kwargs


def test_site_names_computed_from_options():
    body = (
        "job = FedJob(name='j', min_clients=2)\njob.to_server(FedAvg(num_rounds=2))\n"
        "for i in [1, 2, 3, 4][: args.n]:\n    job.to(object(), f'site-{i}')\n"
        "job.simulator_run(os.environ.get('NVFLARE_SIMULATOR_WORKSPACE_ROOT', '/w'))\n"
    )
    assert imported(body, base_args=["--n", "3"])["fixed_budget"]["num_clients"] == {
        "value": 3,
        "confidence": "pinned",
        "flag": "--n",
        "source": "FedJob.to(..., site) targets",
        "depends_on": ["--n"],
    }
    listed = (
        "job = FedJob(name='j', min_clients=2)\njob.to_server(FedAvg(num_rounds=2))\nif args.fast:\n"
        "    job.simulator_run('/w', clients=['a', 'b'])\nelse:\n    job.simulator_run('/w', clients=['a'])\n"
    )
    assert imported(listed)["fixed_budget"]["num_clients"]["depends_on"] == ["--fast"]
    obj_site = (
        "job = FedJob(name='j', min_clients=2)\njob.to_server(FedAvg(num_rounds=2))\n"
        "job.to(object(), random.choice(['a']))\njob.simulator_run('/w')\n"
    )
    assert imported(obj_site)["fixed_budget"]["num_clients"]["reason"] == (
        f"a site name given to job.to(...) is not resolved statically: it comes from random.choice(...) at line "
        f"{LINE + 2}, which draws random numbers"
    )


def test_isolation_error_names_the_path_and_the_line():
    from autofl_core.importer import admission

    body = (
        "job = FedJob(name='j', min_clients=2)\njob.to_server(FedAvg(num_rounds=2))\njob.to(object(), 'site-1')\n"
        "job.simulator_run('/tmp/ws')\n"
    )
    config = imported(body)
    assert not [e for e in config["admission_errors"] if e["code"] == "AUTOFL_SIMULATOR_WORKSPACE_NOT_ISOLATED"]
    assert admission.unisolated_message(config).startswith(  # said by the runner where trials cannot be sealed
        f"FedJob.simulator_run() at line {LINE + 3} writes to '/tmp/ws' and ignores NVFLARE_SIMULATOR_WORKSPACE_ROOT"
    )
    dynamic = imported(body.replace("'/tmp/ws'", "input()"))["admission_errors"]
    assert [e["code"] for e in dynamic][:1] == ["AUTOFL_SIMULATOR_WORKSPACE_NOT_ISOLATED"]
    assert dynamic[0]["message"].startswith(f"FedJob.simulator_run() at line {LINE + 3} writes to a path and ignores")


def test_a_saved_config_is_readmitted_with_its_own_requested_metric():
    config = recipe(metric="val_f1")
    assert [e["code"] for e in api.admission_errors(config)] == ["AUTOFL_METRIC_NOT_DECLARED"]


@pytest.mark.parametrize(
    ("qualname", "kind"),
    [
        ("os.cpu_count", "ENVIRONMENT"),
        ("mylib.read_config", "FILES"),
        ("mylib.loader.load_all", "FILES"),
        ("numpy.random.normal", "RANDOMNESS"),
        ("torch.randn", "RANDOMNESS"),
        ("time.time", "TIME"),
        ("mylib.build", None),
    ],
)
def test_call_kinds(qualname, kind):
    from autofl_core.importer.inputs import Input, call_kind

    assert call_kind(qualname) == (Input[kind] if kind else None)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (
            "{'a': args.n}[args.name[:0] + 'a']",
            {
                "value": 2,
                "confidence": "medium",
                "expr": "{'a': args.n}[args.name[:0] + 'a']",
                "flags": ["--n", "--name"],
            },
        ),
        ("{'a': args.n}['b']", unresolved("{'a': args.n}['b']", "subscript cannot be evaluated", "--n")),
        (
            "[args.n][args.fast]",
            {"value": 2, "confidence": "medium", "expr": "[args.n][args.fast]", "flags": ["--n", "--fast"]},
        ),
        (
            "{args.name: 1}",
            {"value": {"run": 1}, "confidence": "medium", "expr": "{args.name: 1}", "flags": ["--name"]},
        ),
    ],
)
def test_methods_and_subscripts(expression, expected):
    assert v_of(expression) == expected


@pytest.mark.parametrize(
    ("expression", "method", "flags"),
    [
        ("'-'.join([args.name, 'x'])", "join", ("--name",)),
        ("{'n': args.n}.get('n', 2)", "get", ("--n",)),
        ("args.name.upper() + '!'", "upper", ("--name",)),
        ("['a', 'b'].index('b')", "index", ()),
        ("args.name.encode()", "encode", ("--name",)),
        ("('x' * 50000).replace('x', 'yyy')", "replace", ()),
    ],
)
def test_a_data_method_is_unresolved_naming_the_line(expression, method, flags):
    """Methods of str, list, tuple and dict values are not evaluated statically: the value is unresolved with the
    line of the call and keeps the options it came from (a dry run reads the real value)."""
    reason = f".{method}() at line {LINE} is not evaluated statically"
    assert v_of(expression) == unresolved(expression, reason, *flags)


def test_a_data_method_of_a_run_time_input_names_the_input():
    entry = v_of(f"args.name.split({ENV})")
    assert (entry["confidence"], entry["reason"], entry["flags"]) == ("unresolved", READS, ["--name"])


def test_ledger_metric_is_the_first_scored_row_with_a_name():
    from autofl_core.campaign.ledger import LedgerRow
    from autofl_core.importer.objective import ledger_metric

    rows = [
        LedgerRow(status="keep", score=None, metric_name="skipped"),
        LedgerRow(status="keep", score=0.5, metric_name=""),
        LedgerRow(status="keep", score=0.0, metric_name="val_acc"),
        LedgerRow(status="keep", score=0.9, metric_name="other"),
    ]
    assert ledger_metric(rows) == "val_acc"
    assert ledger_metric(rows[:2]) == "score"
    assert ledger_metric([], None) is None


def test_simulator_run_without_a_workspace_cannot_be_isolated():
    body = (
        "job = FedJob(name='j', min_clients=2)\njob.to_server(FedAvg(num_rounds=2))\njob.to(object(), 'site-1')\n"
        "job.simulator_run()\n"
    )
    config = imported(body)
    assert config["environment"]["simulator_workspace"] == {
        "line": LINE + 3,
        "reads_root_variable": False,
        "value": None,
        "confidence": "unresolved",
    }
    assert config["admission_errors"][0]["message"].startswith(
        f"FedJob.simulator_run() at line {LINE + 3} writes to a path and ignores NVFLARE_SIMULATOR_WORKSPACE_ROOT"
    )


def test_an_unresolved_subscript_keeps_the_options_of_its_index():
    assert v_of(f"{ENV}[args.n]") == unresolved(f"{ENV}[args.n]", READS, "--n")


def test_a_job_without_a_recipe_or_fedjob_is_told_what_auto_fl_needs():
    assert api.import_source("print('hello')\n")["import"]["support"]["reason"] == (
        "no recognizable NVFLARE recipe or FedJob: Auto-FL needs a job.py that builds a *Recipe and runs it with "
        "recipe.execute(SimEnv(...)), or a FedJob run with simulator_run(...)"
    )
