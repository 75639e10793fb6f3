"""Name-only credential filter: decide from a path's names, before anything is opened or stat-ed.

Usage: `is_credential(["site-1", "startup", "client.key"])` -> True.

Rule (documented in references): a file is credential material when
- its name ends with a key/certificate/keystore suffix (.key .pem .crt .cer .der .csr .p12 .pfx .jks
  .keystore), or is .netrc / .pgpass / signature.json, or starts with id_rsa / id_ecdsa / id_ed25519 /
  credentials, or contains secret / token / password (case-insensitive);
- or any folder on its path is `startup` (an NVFLARE startup kit: every file there is skipped, including
  the non-secret fed_*.json configs, because when in doubt we skip) or itself has a credential-like name.

A symlink is judged twice: by its own name and path, and by its resolved target (`link_target_parts` gives the
target's names inside the given folders; `in_kit_folder` checks an absolute target for a kit folder), so a
`local/log.txt` that links into `startup/` is skipped like the kit file itself.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

_SUFFIXES = (".key", ".pem", ".crt", ".cer", ".der", ".csr", ".p12", ".pfx", ".jks", ".keystore")
_EXACT = frozenset({".netrc", "_netrc", ".pgpass", "signature.json"})
_PREFIXES = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "credentials")
_SUBSTRINGS = ("secret", "token", "password", "passwd")
_KIT_FOLDERS = frozenset({"startup"})


def credential_name(name: str) -> bool:
    """True when a single file or folder name looks like credential material."""
    low = name.lower()
    if low in _EXACT or low.endswith(_SUFFIXES) or low.startswith(_PREFIXES):
        return True
    return any(word in low for word in _SUBSTRINGS)


def is_credential(parts: Sequence[str]) -> bool:
    """True when the path given as name parts (folders..., file name) must never be opened."""
    if not parts:
        return False
    *folders, name = parts
    if any(folder.lower() in _KIT_FOLDERS or credential_name(folder) for folder in folders):
        return True
    return credential_name(name)


def in_kit_folder(real_path: str) -> bool:
    """True when any folder of the absolute (resolved) path is a startup kit folder."""
    folders = os.path.normpath(real_path).split(os.sep)[:-1]
    return any(folder.lower() in _KIT_FOLDERS for folder in folders)


def link_target_parts(target: str, roots_real: Sequence[str]) -> list[tuple[str, ...]]:
    """The resolved `target`'s name parts inside each given folder that holds it (the folder's own name kept
    when it is a kit folder, as for the files walked directly)."""
    found = []
    for root in roots_real:
        if target.startswith(root.rstrip(os.sep) + os.sep):
            rel = tuple(os.path.relpath(target, root).split(os.sep))
            name = os.path.basename(root.rstrip(os.sep))
            found.append((name, *rel) if name.lower() in _KIT_FOLDERS else rel)
    return found


def name_parts(path: str) -> tuple[str, str]:
    """(parent folder name, file name) of `path`: what `is_credential` judges."""
    return os.path.basename(os.path.dirname(path)), os.path.basename(path)


def given_credential(path: str) -> bool:
    """A given path is credential material when its (or its link target's) name or parent folder says so, or
    when it resolves into a startup kit folder."""
    given, real = os.path.normpath(os.path.abspath(path)), os.path.realpath(path)
    if any(is_credential(name_parts(candidate)) for candidate in (given, real)):
        return True
    return real != given and in_kit_folder(real)
