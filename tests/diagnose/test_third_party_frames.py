"""A traceback that ends in third-party code with no frame of the job's code is its own kind."""

from nvfdiag.match import catalog as cat
from nvfdiag.match.tracebacks import find_tracebacks
from nvfdiag.model import Evidence, Line, Source
from nvfdiag.pipeline import diagnose
from report_schema import validated

CATALOG = cat.load_catalog()
SP = "/opt/conda/lib/python3.10/site-packages"


def tb(last, frames):
    out = ["Traceback (most recent call last):"]
    for path, func in frames:
        out += [f'  File "{path}", line 10, in {func}', "    call()"]
    return out + [last]


FROM_EXECUTOR = [
    (f"{SP}/nvflare/app_common/executors/launcher_executor.py", "execute"),
    (f"{SP}/lightgbm/basic.py", "load"),
]


def run(texts, mode="simulation", source="site-1/log.txt", site="site-1", **kw):
    lines = [Line(source, site, i + 1, t) for i, t in enumerate(texts)]
    evidence = Evidence(sources=[Source(source, "log", site, "complete", 100)], lines=lines)
    return validated(diagnose(evidence, CATALOG, mode=mode, **kw))


def test_third_party_is_named_and_needs_no_job_frame():
    lines = [Line("a", None, i, t) for i, t in enumerate(tb("ValueError: bad booster", FROM_EXECUTOR))]
    block = find_tracebacks(lines)[0]
    assert block.third_party == "lightgbm" and block.user_frame is None
    job = tb("ValueError: x", [("/home/u/job/client.py", "train"), (f"{SP}/lightgbm/basic.py", "load")])
    assert find_tracebacks([Line("a", None, i, t) for i, t in enumerate(job)])[0].third_party is None


def test_the_traceback_is_not_reported_missing_when_it_is_in_the_file():
    texts = tb("lightgbm.basic.LightGBMError: Check failed: num_data > 0", FROM_EXECUTOR)
    report = run(texts, job_status="FINISHED:EXECUTION_EXCEPTION")
    assert "CLIENT_TRACEBACK_MISSING" not in report["findings"]
    assert "traceback is missing" not in report["likely_cause"]


def test_a_library_chosen_path_is_not_a_confident_data_path_diagnosis():
    texts = tb("FileNotFoundError: Cannot find model.cfg in 3f2a/app_site-1/custom", FROM_EXECUTOR)
    report = run(texts, mode="production")
    assert report["confidence"] != "high"
    if report["matched_pattern"] == "DATA_PATH_NOT_FOUND":
        assert report["signals"][0]["match_basis"]["loose"] is True
        assert "third-party code (lightgbm)" in report["likely_cause"]


def test_a_package_built_without_a_feature_is_an_import_error():
    texts = tb("somelib.core.LibError: somelib needs to be built with the federated plugin enabled", FROM_EXECUTOR)
    assert run(texts)["matched_pattern"] == "IMPORT_ERROR"
