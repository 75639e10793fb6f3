"""Options that shape the data, the validation split or the metric: fixed like the budget, never tuned. Pure (AST).

A job option is *fixed* when its name says it decides the data (`SHAPING_NAME_RE`: `--alpha`, `--val_ratio`,
`--iid`, ...), or its value reaches a call that builds the data, the split or the metric (`SHAPING_CALL_RE`) in
job.py or in the client script job.py forwards it to. An option forwarded to a client script the importer cannot
read, or reads only dynamically (`vars(args)`), is *unclassified*: never suggested either. Usage::

    found = classify(flags, job_tree, script_tree, forwarded={"--alpha", "--lr"})
    found["fixed"]          # {"--alpha": "client.py passes it to dirichlet_partition(...)"}
    found["unclassified"]   # {"--mystery": "client.py reads its arguments dynamically (vars(args))"}
"""

from __future__ import annotations

import ast
import re

from .targets import last_name

SHAPING_NAME_RE = re.compile(
    r"(^|_)(alpha|dirichlet\w*|partition\w*|split\w*|val|valid|validation|holdout|hold_out|test_size|test_ratio|"
    r"test_frac\w*|val_\w+|valid_\w+|validation_\w+|num_samples|n_samples|samples_per_\w+|subset\w*|iid|non_iid|"
    r"noniid|label_skew|skew|shards?|dataset\w*|data_\w+|metric\w*)($|_)",
    re.IGNORECASE,
)
SHAPING_CALL_RE = re.compile(
    r"(partition|dirichlet|split|subset|sampler|holdout|hold_out|load_data|get_data|make_data|site_data|"
    r"dataset|dataloader|train_test|validat|metric|accuracy|f1_score|roc_auc|precision|recall|shard)",
    re.IGNORECASE,
)
DYNAMIC_READS = ("vars", "getattr")


def classify(flags: list[dict], job_tree: ast.Module | None, script_tree: ast.Module | None, forwarded: set[str]):
    """{"fixed": {flag: reason}, "unclassified": {flag: reason}} over job.py's argparse `flags` (config records:
    `option_strings`, `dest`); `forwarded`: the canonical flags job.py passes on to the client script."""
    fixed: dict[str, str] = {}
    unclassified: dict[str, str] = {}
    job_uses, script_uses = _call_uses(job_tree), _call_uses(script_tree)
    script_dynamic = _dynamic_read(script_tree)
    for flag in flags:
        longs = [option for option in flag.get("option_strings") or [] if option.startswith("--")]
        dest = flag.get("dest")
        if not longs or not dest:
            continue
        canonical = longs[0]
        if SHAPING_NAME_RE.search(dest):
            fixed[canonical] = f"its name ({dest}) says it decides the data, the validation split or the metric"
        elif dest in job_uses:
            fixed[canonical] = f"job.py passes it to {job_uses[dest]}(...)"
        elif canonical in forwarded:
            script_dest = canonical[2:].replace("-", "_")
            if script_tree is None:
                unclassified[canonical] = "job.py forwards it to a client script the importer cannot read"
            elif script_dest in script_uses:
                fixed[canonical] = f"the client script passes it to {script_uses[script_dest]}(...)"
            elif script_dynamic:
                unclassified[canonical] = f"the client script reads its arguments dynamically ({script_dynamic})"
    return {"fixed": fixed, "unclassified": unclassified}


def _calls(tree: ast.Module | None) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)] if tree is not None else []


def _call_uses(tree: ast.Module | None) -> dict[str, str]:
    """{attribute name: the data-shaping call it reaches} for every `<name>.<attr>` read inside such a call."""
    uses: dict[str, str] = {}
    for node in _calls(tree):
        name = last_name(node.func)  # `f(...)` or `x.f(...)`
        if not name or not SHAPING_CALL_RE.search(name):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner is not node.func:
                uses.setdefault(inner.attr, name)
    return uses


def _dynamic_read(tree: ast.Module | None) -> str | None:
    """`vars(args)` or `getattr(args)` when the file reads its arguments by a computed name, else None."""
    found = (node.func.id for node in _calls(tree) if getattr(node.func, "id", None) in DYNAMIC_READS)
    return next((f"{name}(args)" for name in found), None)
