"""Downloads with the ordinary clients (``npm pack``, ``pip download``), and atomic writes.

The machine's registry configuration applies; no host name is written here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from .pins import MANAGED_DIRS, PART_SUFFIX, STATIC, WHEEL_PLATFORM_ARGS, FetchError, canonical


def write_atomic(dest: Path, data: bytes) -> None:
    """Write via a hidden temporary file in the same directory + rename."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=PART_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run(cmd: list[str], cwd: Path) -> str:
    """Run a client; on failure show its output and stop."""
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise FetchError(
            f"command failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stdout}{proc.stderr}".rstrip()
        )
    return proc.stdout


def npm_pack(spec: str, dest: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise FetchError("npm is not on PATH; it is needed to fetch " + spec)
    out = run(
        [npm, "pack", spec, "--pack-destination", str(dest), "--json", "--ignore-scripts", "--loglevel=error"],
        cwd=dest,
    )
    try:
        filename = str(json.loads(out)[0]["filename"])
    except (ValueError, LookupError, TypeError) as exc:
        raise FetchError(f"unexpected output from npm pack {spec}: {out!r}") from exc
    path = dest / filename
    if not path.is_file():
        raise FetchError(f"npm pack {spec} did not produce {filename}")
    return path


def pip_download(pins: dict[str, str], dest: Path) -> dict[str, Path]:
    """Download the pinned wheels for Pyodide's platform; name -> wheel path."""
    reqs = [f"{name}=={version}" for name, version in pins.items()]
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            *WHEEL_PLATFORM_ARGS,
            "--dest",
            str(dest),
            "--disable-pip-version-check",
            "--no-input",
            "--progress-bar",
            "off",
            *reqs,
        ],
        cwd=dest,
    )
    found: dict[str, Path] = {}
    for whl in dest.glob("*.whl"):
        name, version = parse_wheel_filename(whl.name)
        for want, want_version in pins.items():
            if canonical(want) == name and want_version == version:
                if want in found:
                    raise FetchError(f"pip downloaded two wheels for {want}: {found[want].name}, {whl.name}")
                found[want] = whl
    missing = sorted(set(pins) - set(found))
    if missing:
        raise FetchError(f"pip download produced no wheel for: {', '.join(missing)}")
    return found


def parse_wheel_filename(filename: str) -> tuple[str, str]:
    parts = filename[: -len(".whl")].split("-")
    if not filename.endswith(".whl") or len(parts) not in (5, 6):
        raise FetchError(f"not a wheel file name: {filename}")
    return canonical(parts[0]), parts[1]


def clean_partials() -> None:
    """Remove hidden temporary files a killed run may have left behind."""
    for d in MANAGED_DIRS:
        root = STATIC / d
        if root.is_dir():
            for p in root.rglob(f".*{PART_SUFFIX}"):
                p.unlink(missing_ok=True)


def extract_members(tarball: Path, members: list[str]) -> dict[str, bytes]:
    """Read the named regular files out of an npm tarball (never extract to disk)."""
    found: dict[str, bytes] = {}
    with tarfile.open(tarball, "r:gz") as tf:
        for m in tf.getmembers():
            if m.name in members and m.isfile():
                f = tf.extractfile(m)
                assert f is not None
                found[m.name] = f.read()
    absent = [m for m in members if m not in found]
    if absent:
        raise FetchError(f"{tarball.name} has no file(s): {', '.join(absent)}")
    return found
