"""The controller's cache of rewritten test modules (tests/assert_cache.py): what xdist workers then read."""

from _pytest.assertion import rewrite
from assert_cache import modules_under, write_rewritten

MODULE = "def test_sum():\n    total = 1 + 1\n    assert total == 3\n"


def _cached(source):
    return rewrite._read_pyc(source, source.parent / "__pycache__" / (source.stem + rewrite.PYC_TAIL))


def test_only_test_and_conftest_modules_are_taken(tmp_path):
    for name in ("test_a.py", "conftest.py", "helper.py", "a_test.py", "test_b.txt", "sub/test_c.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    found = [path.relative_to(tmp_path).as_posix() for path in modules_under([tmp_path])]
    assert found == ["conftest.py", "sub/test_c.py", "test_a.py"]
    assert modules_under([tmp_path / "helper.py", tmp_path / "test_a.py"]) == [tmp_path / "test_a.py"]


def test_the_written_code_is_pytests_rewrite_and_is_written_once(tmp_path, pytestconfig):
    source = tmp_path / "test_sum.py"
    source.write_text(MODULE)
    assert write_rewritten(pytestconfig, [tmp_path]) == 1
    code = _cached(source)
    assert code is not None
    namespace: dict = {}
    exec(code, namespace)
    try:
        namespace["test_sum"]()
    except AssertionError as error:
        assert "assert 2 == 3" in str(error)  # pytest's explanation, not a bare AssertionError
    else:
        raise AssertionError("the rewritten test passed")
    assert write_rewritten(pytestconfig, [tmp_path]) == 0  # fresh: nothing rewritten again


def test_a_changed_module_is_rewritten_and_a_broken_one_left_to_the_import(tmp_path, pytestconfig):
    source = tmp_path / "test_sum.py"
    source.write_text(MODULE)
    write_rewritten(pytestconfig, [tmp_path])
    source.write_text(MODULE.replace("3", "2"))
    assert _cached(source) is None  # stale: pytest would not read it
    assert write_rewritten(pytestconfig, [tmp_path]) == 1 and _cached(source) is not None
    (tmp_path / "test_broken.py").write_text("def f(:\n")
    assert write_rewritten(pytestconfig, [tmp_path]) == 0
