"""``assets.lock.json`` (what every artifact and file must hash to) and the small
``wheels/pyodide-lock.json`` the page hands to Pyodide, made from the wheels themselves.
"""

from __future__ import annotations

import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

from .download import run
from .pins import LOCK_FORMAT, LOCK_PATH, NPM_PACKAGES, WHEEL_PLATFORM_ARGS, WHEELS, FetchError, canonical
from .verify import Output, rel


def spec_summary() -> dict[str, Any]:
    return {
        "npm": {spec: dict(files) for spec, files in NPM_PACKAGES.items()},
        "wheels": dict(WHEELS),
        "wheel_platform_args": list(WHEEL_PLATFORM_ARGS),
    }


def lock_summary(lock: dict[str, Any]) -> dict[str, Any]:
    return {
        "npm": {spec: {out: f["from"] for out, f in entry["files"].items()} for spec, entry in lock["npm"].items()},
        "wheels": {name: entry["version"] for name, entry in lock["wheels"].items()},
        "wheel_platform_args": lock.get("wheel_platform_args"),
    }


def load_lock() -> dict[str, Any]:
    if not LOCK_PATH.is_file():
        raise FetchError(f"{rel(LOCK_PATH)} is missing: run `python3 static/fetch.py --record`")
    try:
        lock: dict[str, Any] = json.loads(LOCK_PATH.read_text())
    except ValueError as exc:
        raise FetchError(f"{rel(LOCK_PATH)} is not valid JSON: {exc}") from exc
    if lock.get("format") != LOCK_FORMAT:
        raise FetchError(f"{rel(LOCK_PATH)}: unknown format {lock.get('format')!r}")
    # Pins in fetch.py and the recorded manifest must agree.
    want = spec_summary()
    want["npm"] = {spec: {out: member for member, out in files.items()} for spec, files in want["npm"].items()}
    if lock_summary(lock) != want:
        raise FetchError(
            f"{rel(LOCK_PATH)} does not match the pins in static/fetch.py "
            "(a version or file list changed): run `python3 static/fetch.py --record` "
            "and commit the new assets.lock.json"
        )
    return lock


def outputs_of(lock: dict[str, Any]) -> list[Output]:
    outs: list[Output] = []
    for spec, entry in lock["npm"].items():
        for path, f in entry["files"].items():
            outs.append(Output(path, f["sha256"], spec, f["from"]))
    for name, entry in lock["wheels"].items():
        outs.append(Output(entry["path"], entry["sha256"], f"wheel:{name}"))
    for path, digest in lock["generated"].items():
        outs.append(Output(path, digest, "generated"))
    return outs


def wheel_lock_bytes(lock: dict[str, Any]) -> bytes:
    """The small pyodide-lock.json served next to the wheels.

    Keys and names are canonical (lower case, '-'), as Pyodide looks them up
    after canonicalising; depends use the same names so that Pyodide waits for
    a dependency to be installed before its dependant.  file_name is relative:
    Pyodide resolves it against the lock file's URL.
    """
    packages = {}
    for name, entry in sorted(lock["wheels"].items()):
        key = canonical(name)
        packages[key] = {
            "name": key,
            "version": entry["version"],
            "file_name": Path(entry["path"]).name,
            "install_dir": "site",
            "package_type": "package",
            "sha256": entry["sha256"],
            "imports": entry["imports"],
            "depends": entry["depends"],
        }
    doc = {"info": lock["pyodide_lock_info"], "packages": packages}
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()


def wheel_imports(whl: Path) -> list[str]:
    """Top-level importable names in a wheel (packages and modules)."""
    names = set()
    with zipfile.ZipFile(whl) as zf:
        for n in zf.namelist():
            top = n.split("/", 1)[0]
            if top.endswith((".dist-info", ".data")):
                continue
            if "/" in n:
                if top.isidentifier():
                    names.add(top)
            elif top.endswith((".py", ".so")) and top.split(".", 1)[0].isidentifier():
                names.add(top.split(".", 1)[0])
    return sorted(names)


def wheel_depends(whl: Path, vendored: set[str]) -> list[str]:
    """Canonical names of the wheel's unconditional requirements.

    Requirements guarded only by an extra are skipped (extras are never
    requested).  Any other environment marker is not evaluated here: it stops
    the recording so that a person decides.
    """
    with zipfile.ZipFile(whl) as zf:
        meta_name = next(n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        meta = zf.read(meta_name).decode()
    deps = []
    for line in meta.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        req = line.split(":", 1)[1].strip()
        req_part, _, marker = req.partition(";")
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req_part)
        if m is None:
            raise FetchError(f"{whl.name}: cannot parse requirement {req!r}")
        if marker.strip():
            if "extra" in marker:
                continue
            raise FetchError(f"{whl.name}: requirement with a marker, decide by hand: {req!r}")
        dep = canonical(m.group(1))
        if dep not in vendored:
            raise FetchError(f"{whl.name} requires {req!r}, which is not pinned in WHEELS")
        deps.append(dep)
    return sorted(set(deps))


def check_resolves(wheels: dict[str, Path], tmp: Path) -> None:
    """Let pip's resolver, offline, confirm the pinned set is complete and consistent."""
    chk = tmp / "resolve-check"
    chk.mkdir()
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-index",
            "--find-links",
            str(next(iter(wheels.values())).parent),
            "--only-binary=:all:",
            *WHEEL_PLATFORM_ARGS,
            "--dest",
            str(chk),
            "--disable-pip-version-check",
            "--no-input",
            "--progress-bar",
            "off",
            *[f"{n}=={v}" for n, v in WHEELS.items()],
        ],
        cwd=tmp,
    )
    got = {p.name for p in chk.glob("*.whl")}
    want = {p.name for p in wheels.values()}
    if got != want:
        raise FetchError(
            "pip's resolver wants a different wheel set than WHEELS pins:\n"
            f"    pinned:   {sorted(want)}\n    resolved: {sorted(got)}"
        )
