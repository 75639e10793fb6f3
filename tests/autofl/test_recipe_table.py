"""shared/nvflare_recipes.py: the recipe table is read statically from the installed NVFLARE and kept fresh."""

import json
import subprocess
from pathlib import Path

import pytest
from module_loader import load_by_path

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "skills" / "nvflare-autofl" / "scripts" / "autofl_core" / "importer" / "nvflare_recipes.json"


@pytest.fixture(scope="module")
def generator():
    return load_by_path("shared_nvflare_recipes", REPO / "shared" / "nvflare_recipes.py")


def test_committed_table_matches_the_installed_nvflare(generator):
    assert TABLE.read_bytes() == generator.render(), "stale recipe table: run make sync"
    table = json.loads(TABLE.read_text())
    assert table["nvflare_version"] == "2.9.0"
    recipe_classes = [q for q, e in table["classes"].items() if e["kind"] == "recipe"]
    assert len(recipe_classes) >= 25
    assert "nvflare.app_opt.pt.recipes.fedavg.FedAvgRecipe" in recipe_classes


def test_rendering_never_imports_nvflare(python_exe):
    code = (
        "import sys, importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('g', {str(REPO / 'shared' / 'nvflare_recipes.py')!r})\n"
        "g = importlib.util.module_from_spec(spec); sys.modules['g'] = g; spec.loader.exec_module(g)\n"
        "g.render()\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('nvflare', 'torch')))\n"
    )
    proc = subprocess.run([python_exe, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def _fake_nvflare(root: Path, extra: str = "") -> Path:
    """A tiny nvflare source tree: the Recipe base, an aliased base class, a subclass forwarding **kwargs."""
    files = {
        "__init__.py": "",
        "recipe/__init__.py": "from .fedavg import FedAvgRecipe\n",
        "recipe/spec.py": "class Recipe:\n    def __init__(self, job):\n        pass\n",
        "recipe/fedavg.py": (
            "from nvflare.recipe.spec import Recipe\n"
            "class FedAvgRecipe(Recipe):\n"
            "    def __init__(self, *, min_clients: int, num_rounds: int = 2, train_script: str,\n"
            "                 key_metric='accuracy', mode=SOME_CONSTANT):\n        pass\n"
        ),
        "app/recipes/__init__.py": "",
        "app/recipes/svm.py": (
            "from nvflare.recipe.fedavg import FedAvgRecipe as UnifiedFedAvgRecipe\n"
            "class SVMFedAvgRecipe(UnifiedFedAvgRecipe):\n"
            "    def __init__(self, *, min_clients, kernel='rbf', **kwargs):\n"
            "        super().__init__(min_clients=min_clients, num_rounds=2, **kwargs)\n"
        ),
        "app/recipes/stats.py": (
            "from ...recipe.spec import Recipe\nclass FedStatsRecipe(Recipe):\n    pass\n" + extra
        ),
        "app/workflows.py": "class FedAvg:\n    def __init__(self, num_clients=3, num_rounds=5):\n        pass\n",
    }
    for rel, text in files.items():
        path = root / "nvflare" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "nvflare"


FAMILIES = {
    "recipes": {
        "FedAvgRecipe": {"family": "training"},
        "SVMFedAvgRecipe": {"family": "training"},
        "FedStatsRecipe": {"family": "statistics", "reason": "statistics only"},
    },
    "components": ["nvflare.app.workflows.FedAvg"],
}


def test_signatures_bases_and_fixed_values_are_read_from_source(generator, tmp_path):
    source = generator.SourceTree(_fake_nvflare(tmp_path))
    table = generator.build_table(source, "9.9.9", FAMILIES)["classes"]
    assert sorted(table) == [
        "nvflare.app.recipes.stats.FedStatsRecipe",
        "nvflare.app.recipes.svm.SVMFedAvgRecipe",
        "nvflare.app.workflows.FedAvg",
        "nvflare.recipe.fedavg.FedAvgRecipe",
    ]
    fedavg = table["nvflare.recipe.fedavg.FedAvgRecipe"]
    assert fedavg["defaults"] == {"key_metric": "accuracy", "num_rounds": 2}
    assert fedavg["required"] == ["min_clients", "train_script"] and fedavg["computed"] == {"mode": "SOME_CONSTANT"}
    svm = table["nvflare.app.recipes.svm.SVMFedAvgRecipe"]
    assert svm["bases"] == ["nvflare.recipe.fedavg.FedAvgRecipe"], "the aliased import is followed"
    assert svm["fixed"] == {"num_rounds": 2} and svm["defaults"]["kernel"] == "rbf"
    assert svm["defaults"]["key_metric"] == "accuracy", "**kwargs forwards to the base signature"
    stats = table["nvflare.app.recipes.stats.FedStatsRecipe"]
    assert (stats["family"], stats["reason"]) == ("statistics", "statistics only")
    assert table["nvflare.app.workflows.FedAvg"]["defaults"] == {"num_clients": 3, "num_rounds": 5}


def test_a_changed_default_changes_the_table(generator, tmp_path):
    first = generator.build_table(generator.SourceTree(_fake_nvflare(tmp_path / "a")), "1", FAMILIES)
    changed = _fake_nvflare(tmp_path / "b")
    path = changed / "recipe" / "fedavg.py"
    path.write_text(path.read_text().replace("num_rounds: int = 2", "num_rounds: int = 3"))
    second = generator.build_table(generator.SourceTree(changed), "1", FAMILIES)
    assert first != second
    assert second["classes"]["nvflare.recipe.fedavg.FedAvgRecipe"]["defaults"]["num_rounds"] == 3


def test_an_unclassified_recipe_class_is_an_error(generator, tmp_path):
    tree = _fake_nvflare(tmp_path, extra="class NewRecipe(FedStatsRecipe):\n    pass\n")
    with pytest.raises(generator.RecipeTableError, match="NewRecipe.*does not classify"):
        generator.build_table(generator.SourceTree(tree), "1", FAMILIES)


def test_the_families_file_is_valid(generator):
    families = generator.load_families()
    assert {e["family"] for e in families["recipes"].values()} == generator.FAMILIES
    assert all(e.get("reason") for e in families["recipes"].values() if e["family"] != "training")


def test_cli_lists_recipe_classes(python_exe):
    proc = subprocess.run(
        [python_exe, str(REPO / "shared" / "nvflare_recipes.py"), "--list"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "nvflare.recipe.fedstats.FedStatsRecipe\tstatistics" in proc.stdout.splitlines()
