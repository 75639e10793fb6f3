"""Why reruns of a job may differ, read from its source (pure, AST): where randomness enters without a seed.

Each finding names the file and line, the cause and the smallest change that would make reruns comparable: a model
built before any seed is set in a file using a framework with random initial weights, a shuffle or split without
a seed, a nondeterministic loader or cuDNN kernel choice (`_risks`). Usage::

    found = scan({"job.py": source_text, "client.py": other_text})
    # [{"file": "job.py", "line": 42, "cause": "...", "fix": "..."}, ...] in file and line order
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .files import parsed

MODEL_KEYWORDS = ("model", "initial_model")
MODEL_SUFFIXES = ("Net", "Network", "Model", "CNN", "MLP")
FRAMEWORKS = {"torch", "tensorflow", "keras", "jax", "flax", "lightning", "pytorch_lightning"}
SEED_CALLS = {  # the last name of a call that seeds -> the generators it seeds (`seed`: by its receiver)
    "manual_seed": {"torch"},
    "seed_everything": {"torch", "numpy", "random"},
    "set_seed": {"torch", "numpy", "random"},
    "set_random_seed": {"torch", "numpy", "random"},
}
MAX_FINDINGS = 20


def scan(files: dict[str, str]) -> list[dict]:
    """Findings in every parsable Python file of `files` (path -> text), in path and line order."""
    found: list[dict] = []
    for path in sorted(files):
        tree = parsed(files[path]) if path.endswith(".py") else None
        if tree is not None:
            found += _scan_file(path, tree)
    return found[:MAX_FINDINGS]


def _scan_file(path: str, tree: ast.AST) -> list[dict]:
    seeds = _seed_lines(tree)
    models = _model_builds(tree) if _random_init_framework(tree) else set()
    found = {
        (node.lineno, cause): {"file": path, "line": node.lineno, "cause": cause, "fix": fix}
        for node in ast.walk(tree)
        for cause, fix in _risks(node, seeds, models)
    }
    return [found[key] for key in sorted(found)]


def _random_init_framework(tree: ast.AST) -> bool:
    """The file imports a framework whose layers start from random weights (FRAMEWORKS, NVFLARE's pt/tf recipes)."""
    names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    names += [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    paths = [name.split(".") for name in names]
    return any(parts[0] in FRAMEWORKS or (parts[0] == "nvflare" and {"pt", "tf"} & set(parts)) for parts in paths)


def _model_builds(tree: ast.AST) -> set[int]:
    """Calls that build a model: named like one (MODEL_SUFFIXES), passed as `model=`, or assigned to `model`/`net`."""
    built: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            last = _dotted(node.func).rsplit(".", 1)[-1]
            if last[:1].isupper() and last.endswith(MODEL_SUFFIXES):
                built.add(id(node))
            for keyword in node.keywords:
                if keyword.arg in MODEL_KEYWORDS and isinstance(keyword.value, ast.Call):
                    built.add(id(keyword.value))
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if any(isinstance(t, ast.Name) and t.id in ("model", "net") for t in node.targets):
                built.add(id(node.value))
    return built


def _risks(node: ast.AST, seeds: dict[str, int], models: set[int]) -> Iterator[tuple[str, str]]:
    """(cause, smallest fix) for each way `node` lets reruns differ."""
    if isinstance(node, ast.Assign) and _dotted(node.targets[0]).endswith("cudnn.benchmark") and _true(node.value):
        yield (
            "cuDNN picks its fastest (nondeterministic) kernels (`cudnn.benchmark = True`)",
            "set `torch.backends.cudnn.benchmark = False` (and `torch.backends.cudnn.deterministic = True`)",
        )
    if not isinstance(node, ast.Call):
        return
    if id(node) in models and not seeds.get("torch", node.lineno) < node.lineno:
        yield (
            f"the model is built (`{ast.unparse(node)[:60]}`) before any seed is set: its initial "
            "weights differ per run",
            f"call `torch.manual_seed(0)` (or the framework's seed) before line {node.lineno}",
        )
    name = _dotted(node.func)
    last = name.rsplit(".", 1)[-1]
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    if last == "DataLoader":
        if _true(keywords.get("shuffle")) and "generator" not in keywords and "torch" not in seeds:
            yield (
                "`DataLoader(shuffle=True)` without a seeded generator: the batch order differs per run",
                "pass `generator=torch.Generator().manual_seed(0)` (or call `torch.manual_seed(0)` first)",
            )
        if _positive(keywords.get("num_workers")) and "worker_init_fn" not in keywords:
            yield (
                "`DataLoader(num_workers>0)` without `worker_init_fn`: worker processes draw their own random state",
                "pass `worker_init_fn=` seeding numpy and random per worker, and a seeded `generator=`",
            )
    if name in ("random.shuffle", "random.sample", "random.choice") and "random" not in seeds:
        yield f"`{name}` with an unseeded generator", "call `random.seed(0)` first"
    if name in ("np.random.shuffle", "numpy.random.shuffle", "np.random.permutation", "numpy.random.permutation"):
        if "numpy" not in seeds:
            yield (
                f"`{name}` with numpy's unseeded global generator",
                "use `np.random.default_rng(0)` (or call `np.random.seed(0)` first)",
            )
    if last == "default_rng" and not node.args and "seed" not in keywords:
        yield "`default_rng()` without a seed", "pass a seed: `np.random.default_rng(0)`"
    if last == "train_test_split" and "random_state" not in keywords:
        yield "`train_test_split` without `random_state`: the split differs per run", "pass `random_state=0`"
    if last == "sample" and "frac" in keywords and "random_state" not in keywords:
        yield "`.sample(frac=...)` without `random_state`", "pass `random_state=0`"


def _seed_lines(tree: ast.AST) -> dict[str, int]:
    """Generator family -> the first line that seeds it in this file."""
    seeds: dict[str, int] = {}
    for node in ast.walk(tree):
        for family in _seeded(_dotted(node.func)) if isinstance(node, ast.Call) else ():
            seeds[family] = min(seeds.get(family, node.lineno), node.lineno)
    return seeds


def _seeded(name: str) -> set[str]:
    """The generator families a call named `name` seeds (a `Generator().manual_seed(...)` seeds that one only)."""
    last = name.rsplit(".", 1)[-1]
    if last == "seed":
        return {"numpy"} if "np." in name or "numpy." in name else {"random"} if name == "random.seed" else set()
    return set() if last == "manual_seed" and not name.startswith("torch") else SEED_CALLS.get(last, set())


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return _dotted(node.func) + "()" if isinstance(node, ast.Call) else ""


def _true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _positive(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, int) and node.value > 0


def sentence(found: list[dict]) -> str:
    """The findings in words, for the replicate note and the report ('' when none)."""
    if not found:
        return ""
    parts = [f"{item['file']}:{item['line']}: {item['cause']} (smallest fix: {item['fix']})" for item in found]
    return "Where reruns can differ, read from the job: " + "; ".join(parts) + "."
