"""Name-only credential filter: decide from a path's names, before anything is opened or stat-ed.

Usage: `is_credential(["site-1", "startup", "client.key"])` -> True.

Rule (documented in references): a file is credential material when
- its name ends with a key/certificate/keystore suffix (.key .pem .crt .cer .der .csr .p12 .pfx .jks
  .keystore), or is .netrc / .pgpass / signature.json, or starts with id_rsa / id_ecdsa / id_ed25519 /
  credentials, or contains secret / token / password (case-insensitive);
- or any folder on its path is `startup` (an NVFLARE startup kit: every file there is skipped, including
  the non-secret fed_*.json configs, because when in doubt we skip) or itself has a credential-like name.
"""

from __future__ import annotations

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
