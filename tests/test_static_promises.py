"""Static checks of promises every product script makes: no shell strings, no network, no eval of input.

Scans the AST of every Python file the product ships or runs (skills/, shared/) so a violation added anywhere
fails here, not only in the code paths other tests happen to exercise.
"""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PRODUCT_FILES = sorted(
    path for folder in ("skills", "shared") for path in (REPO / folder).rglob("*.py") if "__pycache__" not in path.parts
)
NETWORK_MODULES = {
    "socket",
    "ssl",
    "http",
    "urllib.request",
    "ftplib",
    "smtplib",
    "telnetlib",
    "requests",
    "httpx",
    "aiohttp",
    "xmlrpc",
    "socketserver",
}
SHELL_CALLS = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput"), ("subprocess", "getstatusoutput")}
CODE_EXEC = {"eval", "exec"}
# The one reviewed exception: the trial network-isolation launcher opens a datagram socket only to ioctl the
# loopback interface up inside the new namespace; it never connects, sends or listens (checked below).
NETWORK_EXEMPT = {"skills/nvflare-autofl/scripts/autofl_core/trial/sandbox/syscalls.py": {"imports socket"}}
TRAFFIC_CALLS = {
    "connect",
    "connect_ex",
    "send",
    "sendto",
    "sendall",
    "bind",
    "listen",
    "accept",
    "create_connection",
    "create_server",
    "getaddrinfo",
    "gethostbyname",
}


def _violations(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"imports {a.name}" for a in node.names if _is_network(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and _is_network(node.module):
            found.append(f"imports from {node.module}")
        elif isinstance(node, ast.Call):
            found += _call_violations(node)
    return found


def _is_network(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in NETWORK_MODULES)


def _call_violations(node: ast.Call) -> list[str]:
    found = []
    func = node.func
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and (func.value.id, func.attr) in SHELL_CALLS
    ):
        found.append(f"calls {func.value.id}.{func.attr} (a shell string)")
    if isinstance(func, ast.Name) and func.id in CODE_EXEC:
        found.append(f"calls {func.id}()")
    for keyword in node.keywords:
        if keyword.arg == "shell" and not (isinstance(keyword.value, ast.Constant) and keyword.value.value is False):
            found.append("passes shell=... to a subprocess call")
    return found


def test_the_scan_covers_both_skills_and_the_shared_tools():
    names = {path.name for path in PRODUCT_FILES}
    assert {
        "diagnose_job.py",
        "campaign_guard.py",
        "job_importer.py",
        "processes.py",
        "collect.py",
        "package_skills.py",
    } <= names


@pytest.mark.parametrize(
    "source",
    [
        "import socket",
        "from urllib.request import urlopen",
        "import http.client",
        "os.system('ls')",
        "subprocess.run(cmd, shell=True)",
        "os.popen('ls')",
        "eval(text)",
        "subprocess.getoutput('ls')",
    ],
)
def test_the_scan_catches_each_kind_of_violation(source):
    assert _violations(ast.parse(source))


def test_no_product_file_uses_a_shell_the_network_or_eval():
    problems = {}
    for path in PRODUCT_FILES:
        rel = str(path.relative_to(REPO))
        found = _violations(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        found = [item for item in found if item not in NETWORK_EXEMPT.get(rel, set())]
        if found:
            problems[rel] = found
    assert problems == {}


def test_the_network_exemption_never_makes_traffic():
    for rel in NETWORK_EXEMPT:
        tree = ast.parse((REPO / rel).read_text(encoding="utf-8"))
        used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        used |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        assert not used & TRAFFIC_CALLS, (rel, sorted(used & TRAFFIC_CALLS))
