"""Verification: sha256 of bytes and files, and a survey of what is present, missing or altered."""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

from .pins import LOCK_PATH, MANAGED_DIRS, STATIC, FetchError


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def rel(path: Path) -> str:
    """A path as shown in messages: relative to the repository root."""
    try:
        return str(path.relative_to(STATIC.parent))
    except ValueError:
        return str(path)


def mismatch_message(what: str, expected: str, actual: str) -> str:
    return f"sha256 mismatch for {what}\n    expected: {expected}\n    actual:   {actual}"


def check_hash(what: str, data: bytes, expected: str) -> None:
    actual = sha256_bytes(data)
    if actual != expected:
        raise FetchError(mismatch_message(what, expected, actual))


@dataclass
class Output:
    """One file under static/ with its expected hash and where it comes from."""

    path: str  # relative to static/
    sha256: str
    source: str  # npm spec, "wheel:<name>", or "generated"
    member: str = ""  # for npm outputs: the path inside the tarball


def survey(outs: list[Output]) -> tuple[list[Output], list[str]]:
    """Return (missing outputs, mismatch messages)."""
    missing, bad = [], []
    for out in outs:
        path = STATIC / out.path
        if not path.is_file():
            missing.append(out)
            continue
        actual = sha256_file(path)
        if actual != out.sha256:
            bad.append(mismatch_message(rel(path), out.sha256, actual))
    return missing, bad


def warn_stale(outs: list[Output]) -> None:
    known = {out.path for out in outs}
    for d in MANAGED_DIRS:
        root = STATIC / d
        if not root.is_dir():
            continue
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.relative_to(STATIC).as_posix() not in known:
                print(f"warning: {rel(p)} is not in {LOCK_PATH.name} (stale? it can be deleted)", file=sys.stderr)
