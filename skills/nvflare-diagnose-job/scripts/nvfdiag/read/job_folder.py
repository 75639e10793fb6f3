"""Structural check of an exported NVFLARE job folder (what `recipe.export()` / `FedJob.export_job()` write).

Usage:
    if looks_exported(folder_name, names): lines = check_exported(folder_path, meta_json_text)

The layout NVFLARE 2.9 writes (and `nvflare job submit` / the simulator validate):
`<job>/meta.json` with `deploy_map` {app: [targets]} where a target is "@ALL", "server" or a site name, and
per app `<job>/<app>/config/config_fed_server.json` (when deployed to the server or @ALL) and
`config/config_fed_client.json` (when deployed to any client or @ALL), plus optional `custom/`.
A problem becomes one fixed-wording evidence line `exported job folder <name>: ...` that the catalog row
PACKAGE_EXPORT_ERROR matches. Pure apart from `os.path.isdir` / `os.path.isfile` (nothing is opened here;
the caller reads meta.json with the bounded reader).
"""

from __future__ import annotations

import os
import re

from . import jsontext

META = "meta.json"  # meta.conf / meta.yml variants are not parsed (standard library only)
CONFIG_EXTENSIONS = (".json", ".conf", ".yml", ".yaml")
SERVER_CONFIG, CLIENT_CONFIG = "config_fed_server", "config_fed_client"
ALL_SITES, SERVER = "@all", "server"
# Run folders hold a deployed copy (app_server, app_site-N) of the submitted job: not an exported layout.
RUNTIME_FOLDERS = frozenset({"simulate_job", "workspace"})
MAX_APPS = 20
_NAME = re.compile(r"^[A-Za-z0-9@][A-Za-z0-9._@-]{0,63}$")


def looks_exported(folder_name: str, names: set[str], *, run_folder: bool = False) -> bool:
    """True for a folder holding a job meta file that is not a run folder (simulate_job, <job_id>, workspace)."""
    return META in names and not run_folder and folder_name not in RUNTIME_FOLDERS


def shown(name: object) -> str:
    """A folder/app name safe to print in an evidence line."""
    return name if isinstance(name, str) and _NAME.match(name) else "<unnamed>"


def check_exported(folder: str, meta_text: str) -> list[str]:
    """Evidence lines: one per structural problem of the exported job folder `folder`, or one saying it is sound."""
    prefix = f"exported job folder {shown(os.path.basename(os.path.normpath(folder)))}: "
    meta = jsontext.parse(meta_text)
    if not isinstance(meta, dict):
        return [prefix + "meta.json is not a valid JSON object (malformed exported job folder)"]
    deploy_map = meta.get("deploy_map")
    if not isinstance(deploy_map, dict) or not deploy_map:
        return [prefix + "meta.json has no deploy_map (missing, empty or not a mapping)"]
    apps = sorted(deploy_map, key=str)[:MAX_APPS]
    problems = _target_problems(deploy_map)
    for app in apps:
        problems += _app_problems(folder, app, _targets(deploy_map[app]))
    if not problems:  # said explicitly, so a sound export still yields a report (matching no catalog row)
        return [prefix + f"structure is sound (deploy_map and the config folders of {len(apps)} app(s) checked)"]
    return [prefix + problem for problem in problems]


def _targets(value: object) -> list[str]:
    """Deploy targets of one app: a list of names and/or {"sites"|"targets": [...]} entries."""
    items = value if isinstance(value, list) else [value]
    out: list[str] = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            for key in ("sites", "targets"):
                out += [name for name in item.get(key) or [] if isinstance(name, str)]
    return out


def _target_problems(deploy_map: dict) -> list[str]:
    targets = [name.lower() for value in deploy_map.values() for name in _targets(value)]
    if not targets:
        return ["deploy_map deploys no app to any site"]
    if ALL_SITES not in targets and SERVER not in targets:
        return ["deploy_map deploys no app to the server"]
    return []


def _app_problems(folder: str, app: object, targets: list[str]) -> list[str]:
    app_dir = os.path.join(folder, str(app))
    if not isinstance(app, str) or not _NAME.match(app) or not os.path.isdir(os.path.join(app_dir, "config")):
        return [f"app '{shown(app)}' listed in deploy_map does not exist (no {shown(app)}/config folder)"]
    lowered = [name.lower() for name in targets]
    needed = []
    if ALL_SITES in lowered or SERVER in lowered:
        needed.append(SERVER_CONFIG)
    if ALL_SITES in lowered or any(name != SERVER for name in lowered):
        needed.append(CLIENT_CONFIG)
    config_dir = os.path.join(app_dir, "config")
    return [
        f"app '{app}' is missing config/{name}.json"
        for name in needed
        if not any(os.path.isfile(os.path.join(config_dir, name + ext)) for ext in CONFIG_EXTENSIONS)
    ]
