"""Child environment: allowlist only, validated passthrough, runner-set variables."""

import pytest
from autofl_core.trial.argv import TrialError
from autofl_core.trial.childenv import SIMULATOR_ROOT_VAR, TOKEN_VAR, build_child_env, validate_passthrough

PARENT = {
    "PATH": "/usr/bin",
    "HOME": "/home/u",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "2",
    "https_proxy": "http://proxy:3128",
    "SSL_CERT_FILE": "/etc/ssl/ca.pem",
    "CUDA_VISIBLE_DEVICES": "0",
    "AWS_SECRET_ACCESS_KEY": "shh",
    "GITHUB_TOKEN": "ghp_x",
    "MY_DATA_DIR": "/data",
    "LD_PRELOAD": "/evil.so",
    "NVFLARE_SIMULATOR_WORKSPACE_ROOT": "/parent/root",
}


def test_only_allowlisted_variables_reach_the_child():
    env = build_child_env(PARENT, passthrough=[], simulator_root="/tmp/r", token="tok")
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "2",
        "https_proxy": "http://proxy:3128",
        "SSL_CERT_FILE": "/etc/ssl/ca.pem",
        "CUDA_VISIBLE_DEVICES": "0",
        SIMULATOR_ROOT_VAR: "/tmp/r",
        TOKEN_VAR: "tok",
        "PYTHONUNBUFFERED": "1",
    }


def test_declared_passthrough_names_are_copied_when_present():
    env = build_child_env(PARENT, passthrough=["MY_DATA_DIR", "NOT_SET_ANYWHERE"], simulator_root="/r", token="t")
    assert env["MY_DATA_DIR"] == "/data"
    assert "NOT_SET_ANYWHERE" not in env
    assert "AWS_SECRET_ACCESS_KEY" not in env and "GITHUB_TOKEN" not in env


def test_runner_values_win_over_the_parent():
    env = build_child_env(PARENT, passthrough=[], simulator_root="/trial/root", token="t")
    assert env[SIMULATOR_ROOT_VAR] == "/trial/root"


@pytest.mark.parametrize("name", ["", "1ABC", "A-B", "A B", "A=B", "PATH\n", TOKEN_VAR, SIMULATOR_ROOT_VAR, None])
def test_invalid_or_runner_owned_passthrough_names_are_rejected(name):
    with pytest.raises(TrialError) as info:
        validate_passthrough([name])
    assert info.value.code == "AUTOFL_INVALID_ENV_PASSTHROUGH"
    assert "shh" not in str(info.value)


def test_passthrough_names_are_sorted_and_unique():
    assert validate_passthrough(["B_VAR", "A_VAR", "B_VAR"]) == ["A_VAR", "B_VAR"]
