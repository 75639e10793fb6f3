"""progress.png: pure plot data, matplotlib render, Pillow fallback, text note, CLI."""

import json
import subprocess
import sys

import pytest
from autofl_core.campaign import ledger, plot
from PIL import Image, ImageStat

BEST_RGB = (0xFF, 0x7F, 0x0E)
# the default renderers (matplotlib first); the suite elsewhere draws with Pillow (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("matplotlib_plot")


def r(status, score=None, name=None, lit=""):
    values = dict.fromkeys(ledger.COLUMNS, "")
    values.update(status=status, score=score, runtime_seconds=None, name=name or status, literature_event_id=lit)
    values["metric_name"] = "accuracy" if score is not None else ""
    return values


EVERY_STATUS = [
    r("baseline", 0.80, "baseline"),
    r("discard", 0.78, "lr-half"),
    r("keep", 0.84, "lr-x2"),
    r("crash", None, "broken"),
    r("infrastructure_retry", None, "sandbox"),
    r("literature", None, "fedprox", lit="lit-0001"),
    r("keep", 0.86, "fedprox-faithful"),
    r("discard", 0.85, "fedprox-tuned"),
    r("discard", 0.86, "fedprox-tie"),
]


def _block(monkeypatch, *packages):
    for name in list(sys.modules):
        if name.split(".")[0] in packages:
            monkeypatch.setitem(sys.modules, name, None)
    for package in packages:
        monkeypatch.setitem(sys.modules, package, None)


def _check_png(path):
    with Image.open(path) as image:
        assert image.format == "PNG"
        assert image.size == plot.SIZE
        rgb = image.convert("RGB")
    assert ImageStat.Stat(rgb.convert("L")).var[0] > 50, "the image must not be blank"
    return rgb


def _has_color(image, rgb, tolerance=12):
    return any(
        all(abs(channel - want) <= tolerance for channel, want in zip(pixel, rgb, strict=True))
        for _count, pixel in image.getcolors(image.width * image.height)
    )


# --- pure plot data -----------------------------------------------------------------------------


def test_plot_data_every_status():
    data = plot.plot_data(EVERY_STATUS, "max")
    assert [(p["x"], p["status"], p["score"]) for p in data["points"]] == [
        (1, "baseline", 0.80),
        (2, "discard", 0.78),
        (3, "keep", 0.84),
        (5, "keep", 0.86),
        (6, "discard", 0.85),
        (7, "discard", 0.86),
    ]
    assert data["failures"] == [{"x": 4, "row": 3, "name": "broken", "status": "crash", "pruned": False}]
    assert data["literature"] == [{"x": 4.5, "row": 5, "event_id": "lit-0001"}]
    assert data["running_best"] == [{"x": 1, "score": 0.8}, {"x": 3, "score": 0.84}, {"x": 5, "score": 0.86}]
    assert data["best"] == {"x": 5, "row": 6, "score": 0.86, "status": "keep", "name": "fedprox-faithful"}
    assert data["x_max"] == 7 and data["scored"] == 6
    assert data["counts"] == {
        "baseline": 1,
        "keep": 2,
        "discard": 3,
        "crash": 1,
        "literature": 1,
        "infrastructure_retry": 1,
        "replicate": 0,
    }


def test_plot_data_min_mode_and_ties_at_ledger_precision():
    rows = [r("baseline", 0.5), r("keep", 0.4, "down"), r("keep", 0.4000000000000001, "tie"), r("keep", 0.6, "up")]
    data = plot.plot_data(rows, "min")
    assert data["best"]["name"] == "down"
    assert [step["score"] for step in data["running_best"]] == [0.5, 0.4]


def test_plot_data_unscored_baseline_is_a_failure_mark():
    data = plot.plot_data([r("baseline", None), r("baseline", 0.7, "baseline_retry_1")], "max")
    assert data["failures"][0]["status"] == "baseline" and data["best"]["name"] == "baseline_retry_1"


def test_title_has_metric_direction_and_counts():
    title = plot.title_text(plot.plot_data(EVERY_STATUS, "min"), "loss", "min")
    assert (
        "loss" in title and "lower is better" in title and "6 attempt(s) (5 scored)" in title and "1 crashed" in title
    )


# --- renderers ----------------------------------------------------------------------------------


def test_matplotlib_render_every_status(tmp_path):
    output = tmp_path / "progress.png"
    output.write_bytes(b"stale")
    summary = plot.render(EVERY_STATUS, output, metric="accuracy", mode="max")
    assert summary["backend"] == "matplotlib" and summary["best"]["name"] == "fedprox-faithful"
    image = _check_png(output)
    assert _has_color(image, BEST_RGB), "running best line / best annotation drawn"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["progress.png"], "atomic write leaves no temp file"


def test_matplotlib_without_a_best_draws_no_best_line(tmp_path):
    rows = [r("discard", 0.5, "a"), r("discard", 0.6, "b"), r("crash")]
    summary = plot.render(rows, tmp_path / "p.png", metric="accuracy", mode="max")
    assert summary["best"] is None
    assert not _has_color(_check_png(tmp_path / "p.png"), BEST_RGB)


def test_matplotlib_empty_ledger_image(tmp_path):
    summary = plot.render([r("crash"), r("literature", lit="lit-0001")], tmp_path / "e.png", metric="acc", mode="max")
    assert summary["scored"] == 0
    empty = _check_png(tmp_path / "e.png")
    plot.render(EVERY_STATUS, tmp_path / "full.png", metric="acc", mode="max")
    assert empty.tobytes() != _check_png(tmp_path / "full.png").tobytes()


def test_pillow_fallback(tmp_path, monkeypatch):
    _block(monkeypatch, "matplotlib")
    summary = plot.render(EVERY_STATUS, tmp_path / "progress.png", metric="accuracy", mode="max")
    assert summary["backend"] == "pillow"
    with Image.open(tmp_path / "progress.png") as image:
        image.verify()
    image = _check_png(tmp_path / "progress.png")
    assert _has_color(image, BEST_RGB)
    for status in ("baseline", "keep", "discard", "crash", "literature"):
        wanted = tuple(int(plot.COLORS[status][i : i + 2], 16) for i in (1, 3, 5))
        assert _has_color(image, wanted, tolerance=2), status
    plot.render([], tmp_path / "empty.png", metric="accuracy", mode="max")
    empty = _check_png(tmp_path / "empty.png")
    assert not _has_color(empty, BEST_RGB) and not _has_color(empty, (0x94, 0x67, 0xBD), tolerance=2)


def _ring_above(image, pixel):
    """True when the best color appears just above `pixel`, where the best-point ring passes (no line does)."""
    x, y = pixel
    strip = image.crop((x - 2, y - 11, x + 3, y - 6))
    return _has_color(strip, BEST_RGB, tolerance=40)


@pytest.mark.parametrize("backend", ["matplotlib", "pillow"])
def test_the_best_point_is_ringed_where_the_data_puts_it(tmp_path, monkeypatch, backend):
    if backend == "pillow":
        _block(monkeypatch, "matplotlib")
    # Same scores and x positions in both modes, so the two images share their axes: only the best differs.
    high = plot.render(EVERY_STATUS, tmp_path / "max.png", metric="accuracy", mode="max")
    low = plot.render(EVERY_STATUS, tmp_path / "min.png", metric="accuracy", mode="min")
    assert high["backend"] == low["backend"] == backend
    assert (high["best"]["name"], low["best"]["name"]) == ("fedprox-faithful", "baseline")
    assert high["best_pixel"][0] > low["best_pixel"][0], "a later experiment sits further right"
    assert high["best_pixel"][1] < low["best_pixel"][1], "a higher score sits higher"
    max_image, min_image = _check_png(tmp_path / "max.png"), _check_png(tmp_path / "min.png")
    assert _ring_above(max_image, high["best_pixel"]) and _ring_above(min_image, low["best_pixel"])
    assert not _ring_above(max_image, low["best_pixel"]), "the max-mode image rings only its own best"
    assert not _ring_above(min_image, high["best_pixel"]), "the min-mode image rings only its own best"


def test_text_note_without_matplotlib_or_pillow(tmp_path, monkeypatch, capsys):
    _block(monkeypatch, "matplotlib", "PIL")
    summary = plot.render(EVERY_STATUS, tmp_path / "progress.png", metric="accuracy", mode="max")
    assert summary["backend"] == "text" and summary["output"] == str(tmp_path / "progress.txt")
    assert summary["best_pixel"] is None
    note = (tmp_path / "progress.txt").read_text()
    assert "accuracy (max" in note and "fedprox-faithful  <- best" in note and "(no score)  broken" in note
    assert not (tmp_path / "progress.png").exists()
    assert "neither matplotlib nor Pillow" in capsys.readouterr().err


def test_module_import_does_not_load_plotting_libraries(python_exe, repo_root):
    scripts = repo_root / "skills" / "nvflare-autofl" / "scripts"
    code = (
        f"import sys; sys.path.insert(0, {str(scripts)!r}); import autofl_core.campaign.plot\n"
        "print([m for m in ('matplotlib', 'PIL') if m in sys.modules])"
    )
    done = subprocess.run([python_exe, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


# --- CLI ----------------------------------------------------------------------------------------


@pytest.fixture
def cli(repo_root, python_exe):
    script = str(repo_root / "skills" / "nvflare-autofl" / "scripts" / "plot_progress.py")

    def run(*args, cwd=None):
        return subprocess.run(
            [python_exe, script, *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd
        )

    return run


def _write_ledger(folder, rows):
    path = folder / "results.tsv"
    for row in rows:
        ledger.append_row(path, {key: value for key, value in row.items() if value not in ("", None)})
    return path


def test_cli_defaults_output_metric_and_stored_mode(tmp_path, cli):
    results = _write_ledger(tmp_path, EVERY_STATUS)
    (tmp_path / ".nvflare" / "autofl").mkdir(parents=True)
    (tmp_path / ".nvflare" / "autofl" / "campaign_state.json").write_text('{"mode": "min"}')
    done = cli(results, cwd="/")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["output"] == str(tmp_path / "progress.png") and summary["backend"] == "matplotlib"
    assert summary["best"] == {"name": "baseline", "row": 0, "score": 0.8, "status": "baseline", "x": 1}
    _check_png(tmp_path / "progress.png")


def test_cli_explicit_output_and_mode(tmp_path, cli):
    results = _write_ledger(tmp_path, EVERY_STATUS)
    out = tmp_path / "plots" / "p.png"
    done = cli(results, "--output", out, "--metric", "acc", "--mode", "max")
    assert done.returncode == 0 and json.loads(done.stdout)["best"]["score"] == 0.86
    _check_png(out)


def test_cli_corrupt_ledger_and_unwritable_output(tmp_path, cli):
    bad = tmp_path / "results.tsv"
    bad.write_text("garbage\n")
    done = cli(bad, "--mode", "max")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "header" in done.stderr
    assert not (tmp_path / "progress.png").exists()
    (tmp_path / "ok").mkdir()
    good = _write_ledger(tmp_path / "ok", EVERY_STATUS)
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = cli(good, "--output", blocker / "progress.png")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_the_pillow_renderer_is_chosen_by_the_environment_and_never_imports_matplotlib(python_exe, repo_root, tmp_path):
    scripts = repo_root / "skills" / "nvflare-autofl" / "scripts"
    code = (
        f"import sys; sys.path.insert(0, {str(scripts)!r}); from autofl_core.campaign import plot, ledger\n"
        "rows = [dict(dict.fromkeys(ledger.COLUMNS, ''), status='baseline', score=0.5, name='b', metric_name='m')]\n"
        "print(plot.warm_up(), plot.render(rows, sys.argv[1], metric='m', mode='max')['backend'],\n"
        "      'matplotlib' in sys.modules)"
    )
    output = tmp_path / "progress.png"
    env = {"PATH": "/usr/bin:/bin", "AUTOFL_PLOT_RENDERER": "pillow"}
    done = subprocess.run([python_exe, "-c", code, str(output)], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.split() == ["pillow", "pillow", "False"], done.stderr
    assert Image.open(output).size == plot.SIZE
    env["AUTOFL_PLOT_RENDERER"] = "auto"
    done = subprocess.run([python_exe, "-c", code, str(output)], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.split() == ["matplotlib", "matplotlib", "True"], done.stderr


def test_an_unknown_renderer_name_warns_and_means_auto(monkeypatch, capsys):
    monkeypatch.setenv("AUTOFL_PLOT_RENDERER", "svg")
    assert plot.renderers() == ("matplotlib", "pillow")
    assert "AUTOFL_PLOT_RENDERER='svg' is not one of auto, pillow; using auto" in capsys.readouterr().err
    monkeypatch.setenv("AUTOFL_PLOT_RENDERER", " Pillow ")
    assert plot.renderers() == ("pillow",)


def test_warm_up_reports_the_backend(monkeypatch):
    assert plot.warm_up() == "matplotlib"
    _block(monkeypatch, "matplotlib")
    assert plot.warm_up() == "pillow"
    _block(monkeypatch, "PIL")
    assert plot.warm_up() is None


def test_dollar_signs_are_shown_literally(tmp_path, capsys):
    rows = [r("baseline", 0.5, "base$"), r("keep", 0.6, "$\\frac{$"), r("literature", lit="lit$^")]
    summary = plot.render(rows, tmp_path / "p.png", metric="acc$", mode="max")
    assert summary["backend"] == "matplotlib", capsys.readouterr().err
    _check_png(tmp_path / "p.png")


def test_a_failing_renderer_falls_back_with_a_warning(tmp_path, monkeypatch, capsys):
    def broken(*_args):
        raise RuntimeError("font cache corrupt")

    monkeypatch.setattr(plot, "_draw_matplotlib", broken)
    summary = plot.render(EVERY_STATUS, tmp_path / "p.png", metric="accuracy", mode="max")
    assert summary["backend"] == "pillow"
    assert "matplotlib failed (RuntimeError: font cache corrupt)" in capsys.readouterr().err
    _check_png(tmp_path / "p.png")


def test_text_summary_is_in_ledger_order():
    data = plot.plot_data(EVERY_STATUS, "max")
    lines = plot.text_summary(data, "t").splitlines()[1:]
    assert [line.split()[0] for line in lines] == ["1", "2", "3", "4", "5", "6", "7"]
    assert "(no score)  broken" in lines[3]


def test_cli_missing_ledger_plots_empty_but_a_missing_folder_is_refused(tmp_path, cli):
    done = cli(tmp_path / "results.tsv", "--mode", "max")
    assert done.returncode == 0 and "does not exist; plotting an empty ledger" in done.stderr
    assert json.loads(done.stdout)["scored"] == 0
    _check_png(tmp_path / "progress.png")
    done = cli(tmp_path / "typo" / "deeper" / "results.tsv", "--mode", "max")
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert "typo/deeper does not exist" in done.stderr
    assert not (tmp_path / "typo").exists()


# --- batches: the candidates that ran together (issue 24, point 8) --------------------------------------------

BATCHED = [
    r("baseline", 0.80, "baseline"),
    r("keep", 0.84, "lr-a"),
    r("keep", 0.86, "bonus"),
    r("crash", None, "broken"),
    r("literature", None, "fedprox", lit="lit-0001"),
    r("replicate", 0.85, "replicate_bonus_1"),
    r("discard", 0.83, "alone"),
    r("infrastructure_retry", None, "denied"),
    r("discard", 0.82, "p"),
    r("discard", 0.81, "q"),
]
BATCHES = [
    {"members": ["p", "q"], "parallel": 1},  # given after the first one in ledger order: numbered by the ledger
    {"members": ["lr-a", "bonus", "broken"], "parallel": 3},
    {"members": ["alone", "denied"], "parallel": 2},  # one member has no experiment: nothing to group
    {"members": ["gone", "missing"], "parallel": 2},  # no row at all (e.g. an edited ledger)
]


def test_batch_spans_group_the_candidates_that_ran_together():
    data = plot.plot_data(BATCHED, "max", BATCHES)
    assert data["batches"] == [
        {"x_min": 2, "x_max": 4, "members": ["lr-a", "bonus", "broken"], "parallel": 3, "label": "batch 1"},
        {"x_min": 7, "x_max": 8, "members": ["p", "q"], "parallel": 1, "label": "batch 2"},
    ]
    assert plot.batch_spans({"a": 1, "b": 2}, [{"members": ["a", "b"], "parallel": "3"}])[0]["parallel"] == 1
    assert plot.plot_data(BATCHED, "max")["batches"] == [] == plot.plot_data(BATCHED, "max", [])["batches"]
    without = {key: value for key, value in data.items() if key != "batches"}
    assert without == {k: v for k, v in plot.plot_data(BATCHED, "max").items() if k != "batches"}


def test_a_replicate_never_joins_a_batch_and_a_name_counts_once():
    rows = [r("baseline", 0.8, "baseline"), r("keep", 0.9, "a"), r("replicate", 0.9, "b"), r("discard", 0.7, "c")]
    (span,) = plot.plot_data(rows, "max", [{"members": ["a", "b", "c"], "parallel": 2}])["batches"]
    assert (span["x_min"], span["x_max"], span["members"]) == (2, 4, ["a", "c"])


def test_text_summary_lists_each_batch():
    lines = plot.text_summary(plot.plot_data(BATCHED, "max", BATCHES), "t").splitlines()
    assert lines[-2:] == [
        "batch 1 (experiments 2-4, 3 at a time): lr-a, bonus, broken",
        "batch 2 (experiments 7-8, one by one): p, q",
    ]
    assert not any(line.startswith("batch") for line in plot.text_summary(plot.plot_data(BATCHED, "max"), "t"))


@pytest.mark.parametrize("backend", ["matplotlib", "pillow"])
def test_a_batch_is_shaded_and_a_campaign_without_one_is_drawn_as_before(tmp_path, monkeypatch, backend):
    if backend == "pillow":
        _block(monkeypatch, "matplotlib")
    batch_rgb = tuple(int(plot.COLORS["batch"][i : i + 2], 16) for i in (1, 3, 5))
    plain = plot.render(BATCHED, tmp_path / "plain.png", metric="accuracy", mode="max")
    empty = plot.render(BATCHED, tmp_path / "empty.png", metric="accuracy", mode="max", batches=[])
    lone = [{"members": ["alone"], "parallel": 1}]
    single = plot.render(BATCHED, tmp_path / "single.png", metric="accuracy", mode="max", batches=lone)
    batched = plot.render(BATCHED, tmp_path / "batched.png", metric="accuracy", mode="max", batches=BATCHES)
    assert plain["backend"] == empty["backend"] == single["backend"] == batched["backend"] == backend
    picture = (tmp_path / "plain.png").read_bytes()
    assert (tmp_path / "empty.png").read_bytes() == picture == (tmp_path / "single.png").read_bytes()
    assert (tmp_path / "batched.png").read_bytes() != picture
    assert batched["best_pixel"] == plain["best_pixel"], "the shading moves no point"
    assert not _has_color(_check_png(tmp_path / "plain.png"), batch_rgb, tolerance=2)
    image = _check_png(tmp_path / "batched.png")
    assert _has_color(image, batch_rgb, tolerance=2)
    x, y = batched["best_pixel"]  # the best (bonus, x=3) sits inside batch 1, the discards p and q in batch 2
    assert _has_color(image.crop((x + 15, y + 35, x + 25, y + 45)), batch_rgb, tolerance=2)
    assert not _has_color(_check_png(tmp_path / "plain.png").crop((x + 15, y + 35, x + 25, y + 45)), batch_rgb, 2)
