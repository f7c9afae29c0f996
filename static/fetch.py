#!/usr/bin/env python3
"""Vendor, pinned and hash-checked, everything the web page loads at run time.

Why this exists
---------------
The page runs Python agents in the browser with Pyodide and talks WebMCP.  It
must never contact anything but its own server: no CDN, no package index.  So
every byte it loads is copied into ``static/`` ahead of time by this script:

* ``static/pyodide/``   the Pyodide runtime, taken from the npm package
  ``pyodide`` (the JS loaders, ``pyodide.asm.mjs``, ``pyodide.asm.wasm``,
  ``python_stdlib.zip``, the stock ``pyodide-lock.json``, and ``package.json``
  for the version/licence record).  The npm package holds no wheels.
* ``static/wheels/``    the wheels ``pyodide.loadPackage(["pydantic"])`` needs,
  downloaded by pip for Pyodide's platform (the WebAssembly build of
  pydantic-core plus pure-Python pydantic and its dependencies), and a small
  ``pyodide-lock.json`` that describes only them.  The page points Pyodide at
  it with ``lockFileURL``; ``file_name`` entries are relative, so Pyodide
  resolves them against the lock file's own URL (``static/wheels/``).
* ``static/vendor/webmcp-polyfill/``  ``dist/index.iife.js`` and ``LICENSE``
  from the npm package ``@mcp-b/webmcp-polyfill``.

Trust model: versions are pinned below, and ``static/assets.lock.json``
(committed) records the sha256 of every downloaded artifact (the npm tarballs
and each wheel) and of every file written under ``static/``.  Artifacts are
fetched with the ordinary clients (``npm pack``, ``pip download``) so the
machine's registry configuration applies and no host name is written here.
Downloads land in a temporary directory, are checked, and only then are files
moved into place (write to a hidden temporary file, then an atomic rename), so
an interrupted run never leaves a half-written file under a real name.  Any
hash mismatch stops the run with exit code 1, naming the file, the expected
and the actual hash.

The script is stdlib-only (it runs before any virtualenv exists; Python 3.11+).

Usage
-----
``python3 static/fetch.py``           verify what is present; download only what
                                      is missing.  No network when all is there.
``python3 static/fetch.py --check``   verify only, never download; exit 1 if a
                                      file is missing or does not match.
``python3 static/fetch.py --record``  maintainer mode: download everything afresh,
                                      (re)write the hashes in assets.lock.json and
                                      install.  Run it after changing a pin below,
                                      then review and commit assets.lock.json.

A file that is present but does not match is never overwritten silently (it
may have been tampered with): delete it and run the script again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

if sys.version_info < (3, 11):  # pragma: no cover
    sys.exit("fetch.py needs Python 3.11 or newer")

# --------------------------------------------------------------------------
# Pins.  Change these, then run `python3 static/fetch.py --record`.
# --------------------------------------------------------------------------

PYODIDE_VERSION = "314.0.7"
WEBMCP_POLYFILL_VERSION = "5.1.0"

# npm package spec -> {path inside the tarball: path under static/}
NPM_PACKAGES: dict[str, dict[str, str]] = {
    f"pyodide@{PYODIDE_VERSION}": {
        "package/pyodide.mjs": "pyodide/pyodide.mjs",
        "package/pyodide.js": "pyodide/pyodide.js",
        "package/pyodide.asm.mjs": "pyodide/pyodide.asm.mjs",
        "package/pyodide.asm.wasm": "pyodide/pyodide.asm.wasm",
        "package/python_stdlib.zip": "pyodide/python_stdlib.zip",
        "package/pyodide-lock.json": "pyodide/pyodide-lock.json",
        "package/package.json": "pyodide/package.json",
    },
    f"@mcp-b/webmcp-polyfill@{WEBMCP_POLYFILL_VERSION}": {
        "package/dist/index.iife.js": "vendor/webmcp-polyfill/index.iife.js",
        "package/LICENSE": "vendor/webmcp-polyfill/LICENSE",
    },
}
PYODIDE_NPM_SPEC = f"pyodide@{PYODIDE_VERSION}"

# Wheels for Pyodide 314 (CPython 3.14, ABI 2026_0).  pydantic 2.14.3 pins
# pydantic-core 2.50.4; the others are the newest releases satisfying
# pydantic's (and each other's) requirements when they were recorded.
WHEELS: dict[str, str] = {
    "pydantic": "2.14.3",
    "pydantic-core": "2.50.4",
    "typing-extensions": "4.16.0",
    "annotated-types": "0.8.0",
    "typing-inspection": "0.4.5",
}
# Platform of the Pyodide build (checked against its pyodide-lock.json `info`
# by --record).  Pure-Python wheels match any platform.
WHEEL_PLATFORM_ARGS: list[str] = [
    "--platform", "pyemscripten_2026_0_wasm32",
    "--python-version", "3.14",
    "--implementation", "cp",
    "--abi", "cp314",
]

# --------------------------------------------------------------------------

STATIC = Path(__file__).resolve().parent
LOCK_PATH = STATIC / "assets.lock.json"
WHEEL_LOCK_OUT = "wheels/pyodide-lock.json"
MANAGED_DIRS = ("pyodide", "wheels", "vendor")
PART_SUFFIX = ".part"
LOCK_FORMAT = 1


class FetchError(Exception):
    """A problem that stops the run (exit code 1)."""


def canonical(name: str) -> str:
    """PEP 503 normalisation, the same one Pyodide applies to lock keys."""
    return re.sub(r"[-_.]+", "-", name).lower()


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
    return (
        f"sha256 mismatch for {what}\n"
        f"    expected: {expected}\n"
        f"    actual:   {actual}"
    )


def check_hash(what: str, data: bytes, expected: str) -> None:
    actual = sha256_bytes(data)
    if actual != expected:
        raise FetchError(mismatch_message(what, expected, actual))


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
            f"command failed (exit {proc.returncode}): {' '.join(cmd)}\n"
            f"{proc.stdout}{proc.stderr}".rstrip()
        )
    return proc.stdout


# --------------------------------------------------------------------------
# Downloads (into a temporary directory)
# --------------------------------------------------------------------------

def npm_pack(spec: str, dest: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise FetchError("npm is not on PATH; it is needed to fetch " + spec)
    out = run(
        [npm, "pack", spec, "--pack-destination", str(dest), "--json",
         "--ignore-scripts", "--loglevel=error"],
        cwd=dest,
    )
    try:
        filename = json.loads(out)[0]["filename"]
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
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         *WHEEL_PLATFORM_ARGS, "--dest", str(dest), "--disable-pip-version-check",
         "--no-input", "--progress-bar", "off", *reqs],
        cwd=dest,
    )
    found: dict[str, Path] = {}
    for whl in dest.glob("*.whl"):
        name, version = parse_wheel_filename(whl.name)
        for want, want_version in pins.items():
            if canonical(want) == name and want_version == version:
                if want in found:
                    raise FetchError(f"pip downloaded two wheels for {want}: "
                                     f"{found[want].name}, {whl.name}")
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


# --------------------------------------------------------------------------
# The manifest (assets.lock.json) and what it implies
# --------------------------------------------------------------------------

@dataclass
class Output:
    """One file under static/ with its expected hash and where it comes from."""
    path: str          # relative to static/
    sha256: str
    source: str        # npm spec, "wheel:<name>", or "generated"
    member: str = ""   # for npm outputs: the path inside the tarball


def spec_summary() -> dict:
    return {
        "npm": {spec: dict(files) for spec, files in NPM_PACKAGES.items()},
        "wheels": dict(WHEELS),
        "wheel_platform_args": list(WHEEL_PLATFORM_ARGS),
    }


def lock_summary(lock: dict) -> dict:
    return {
        "npm": {spec: {out: f["from"] for out, f in entry["files"].items()}
                for spec, entry in lock["npm"].items()},
        "wheels": {name: entry["version"] for name, entry in lock["wheels"].items()},
        "wheel_platform_args": lock.get("wheel_platform_args"),
    }


def load_lock() -> dict:
    if not LOCK_PATH.is_file():
        raise FetchError(f"{rel(LOCK_PATH)} is missing: run `python3 static/fetch.py --record`")
    try:
        lock = json.loads(LOCK_PATH.read_text())
    except ValueError as exc:
        raise FetchError(f"{rel(LOCK_PATH)} is not valid JSON: {exc}") from exc
    if lock.get("format") != LOCK_FORMAT:
        raise FetchError(f"{rel(LOCK_PATH)}: unknown format {lock.get('format')!r}")
    # Pins in fetch.py and the recorded manifest must agree.
    want = spec_summary()
    want["npm"] = {spec: {out: member for member, out in files.items()}
                   for spec, files in want["npm"].items()}
    if lock_summary(lock) != want:
        raise FetchError(
            f"{rel(LOCK_PATH)} does not match the pins in static/fetch.py "
            "(a version or file list changed): run `python3 static/fetch.py --record` "
            "and commit the new assets.lock.json"
        )
    return lock


def outputs_of(lock: dict) -> list[Output]:
    outs: list[Output] = []
    for spec, entry in lock["npm"].items():
        for path, f in entry["files"].items():
            outs.append(Output(path, f["sha256"], spec, f["from"]))
    for name, entry in lock["wheels"].items():
        outs.append(Output(entry["path"], entry["sha256"], f"wheel:{name}"))
    for path, digest in lock["generated"].items():
        outs.append(Output(path, digest, "generated"))
    return outs


def wheel_lock_bytes(lock: dict) -> bytes:
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


# --------------------------------------------------------------------------
# Verifying what is installed
# --------------------------------------------------------------------------

def clean_partials() -> None:
    """Remove hidden temporary files a killed run may have left behind."""
    for d in MANAGED_DIRS:
        root = STATIC / d
        if root.is_dir():
            for p in root.rglob(f".*{PART_SUFFIX}"):
                p.unlink(missing_ok=True)


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
                print(f"warning: {rel(p)} is not in {LOCK_PATH.name} (stale? it can be deleted)",
                      file=sys.stderr)


# --------------------------------------------------------------------------
# Modes
# --------------------------------------------------------------------------

def cmd_check() -> int:
    t0 = time.monotonic()
    lock = load_lock()
    outs = outputs_of(lock)
    missing, bad = survey(outs)
    for out in missing:
        print(f"missing: static/{out.path}", file=sys.stderr)
    for msg in bad:
        print(msg, file=sys.stderr)
    if missing or bad:
        print("fetch.py --check: FAILED (run `python3 static/fetch.py`; "
              "delete any mismatched file first)", file=sys.stderr)
        return 1
    warn_stale(outs)
    print(f"fetch.py --check: all {len(outs)} files present and verified "
          f"({time.monotonic() - t0:.2f}s)")
    return 0


def cmd_fetch() -> int:
    t0 = time.monotonic()
    lock = load_lock()
    clean_partials()
    outs = outputs_of(lock)
    missing, bad = survey(outs)
    if bad:
        raise FetchError(
            "\n".join(bad)
            + "\nrefusing to continue: the files above were changed after they were installed;"
            " delete them and run `python3 static/fetch.py` again"
        )
    if not missing:
        warn_stale(outs)
        print(f"fetch.py: all {len(outs)} files present and verified "
              f"({time.monotonic() - t0:.2f}s, no download)")
        return 0

    print(f"fetch.py: {len(missing)} of {len(outs)} files missing, downloading what provides them")
    with tempfile.TemporaryDirectory(prefix="webmcp-a2a-fetch-") as tmp_s:
        tmp = Path(tmp_s)
        # npm packages
        npm_specs = dict.fromkeys(o.source for o in missing if o.source in lock["npm"])
        for i, spec in enumerate(npm_specs):
            entry = lock["npm"][spec]
            d = tmp / "npm" / str(i)
            d.mkdir(parents=True)
            tarball = npm_pack(spec, d)
            check_hash(f"npm tarball {tarball.name} ({spec})", tarball.read_bytes(), entry["sha256"])
            members = extract_members(tarball, [o.member for o in missing if o.source == spec])
            for o in missing:
                if o.source == spec:
                    check_hash(f"{o.member} in {tarball.name} (for static/{o.path})",
                               members[o.member], o.sha256)
            for o in missing:
                if o.source == spec:
                    write_atomic(STATIC / o.path, members[o.member])
                    print(f"  installed static/{o.path}")
        # wheels
        need = {o.source.removeprefix("wheel:"): o for o in missing if o.source.startswith("wheel:")}
        if need:
            d = tmp / "wheels"
            d.mkdir()
            got = pip_download({name: WHEELS[name] for name in need}, d)
            for name, o in need.items():
                check_hash(f"wheel {got[name].name}", got[name].read_bytes(), o.sha256)
            for name, o in need.items():
                write_atomic(STATIC / o.path, got[name].read_bytes())
                print(f"  installed static/{o.path}")
        # generated lock for the wheels (last: it refers to them)
        for o in missing:
            if o.source == "generated":
                data = wheel_lock_bytes(lock)
                check_hash(f"generated static/{o.path}", data, o.sha256)
                write_atomic(STATIC / o.path, data)
                print(f"  wrote static/{o.path}")

    missing, bad = survey(outs)
    if missing or bad:  # should not happen: everything was checked before the rename
        raise FetchError("verification after install failed: "
                         + "; ".join([f"missing static/{o.path}" for o in missing] + bad))
    warn_stale(outs)
    print(f"fetch.py: done, all {len(outs)} files verified ({time.monotonic() - t0:.1f}s)")
    return 0


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
        meta_name = next(n for n in zf.namelist()
                         if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
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
    run([sys.executable, "-m", "pip", "download", "--no-index", "--find-links",
         str(next(iter(wheels.values())).parent), "--only-binary=:all:", *WHEEL_PLATFORM_ARGS,
         "--dest", str(chk), "--disable-pip-version-check", "--no-input", "--progress-bar", "off",
         *[f"{n}=={v}" for n, v in WHEELS.items()]], cwd=tmp)
    got = {p.name for p in chk.glob("*.whl")}
    want = {p.name for p in wheels.values()}
    if got != want:
        raise FetchError("pip's resolver wants a different wheel set than WHEELS pins:\n"
                         f"    pinned:   {sorted(want)}\n    resolved: {sorted(got)}")


def cmd_record() -> int:
    t0 = time.monotonic()
    try:
        old = json.loads(LOCK_PATH.read_text())
    except (OSError, ValueError):
        old = {}
    old_hashes: dict[str, str] = {}   # artifact file name -> previously recorded sha256
    for entry in old.get("npm", {}).values():
        old_hashes[entry.get("tarball", "")] = entry.get("sha256", "")
    for entry in old.get("wheels", {}).values():
        old_hashes[Path(entry.get("path", "")).name] = entry.get("sha256", "")

    lock: dict = {
        "format": LOCK_FORMAT,
        "note": "Written by `python3 static/fetch.py --record`; do not edit by hand. "
                "sha256 of every downloaded artifact and of every file fetch.py "
                "writes under static/.",
        "npm": {},
        "wheels": {},
        "wheel_platform_args": list(WHEEL_PLATFORM_ARGS),
        "pyodide_lock_info": None,
        "generated": {},
    }
    contents: dict[str, bytes] = {}   # path under static/ -> bytes to install
    with tempfile.TemporaryDirectory(prefix="webmcp-a2a-record-") as tmp_s:
        tmp = Path(tmp_s)
        for i, (spec, files) in enumerate(NPM_PACKAGES.items()):
            d = tmp / "npm" / str(i)
            d.mkdir(parents=True)
            tarball = npm_pack(spec, d)
            members = extract_members(tarball, list(files))
            lock["npm"][spec] = {
                "tarball": tarball.name,
                "sha256": sha256_file(tarball),
                "files": {out: {"from": member, "sha256": sha256_bytes(members[member])}
                          for member, out in files.items()},
            }
            for member, out in files.items():
                contents[out] = members[member]
            if spec == PYODIDE_NPM_SPEC:
                stock = json.loads(members["package/pyodide-lock.json"])
                lock["pyodide_lock_info"] = stock["info"]

        info = lock["pyodide_lock_info"]
        platform = WHEEL_PLATFORM_ARGS[WHEEL_PLATFORM_ARGS.index("--platform") + 1]
        pyver = WHEEL_PLATFORM_ARGS[WHEEL_PLATFORM_ARGS.index("--python-version") + 1]
        if platform != f"pyemscripten_{info['abi_version']}_{info['arch']}" or \
                not info["python"].startswith(pyver + "."):
            raise FetchError(f"WHEEL_PLATFORM_ARGS {WHEEL_PLATFORM_ARGS} do not match "
                             f"the Pyodide build: {info}")

        wd = tmp / "wheels"
        wd.mkdir()
        got = pip_download(WHEELS, wd)
        vendored = {canonical(n) for n in WHEELS}
        for name, version in WHEELS.items():
            whl = got[name]
            path = f"wheels/{whl.name}"
            lock["wheels"][name] = {
                "version": version,
                "path": path,
                "sha256": sha256_file(whl),
                "imports": wheel_imports(whl),
                "depends": wheel_depends(whl, vendored),
            }
            contents[path] = whl.read_bytes()
        check_resolves(got, tmp)

        data = wheel_lock_bytes(lock)
        lock["generated"][WHEEL_LOCK_OUT] = sha256_bytes(data)
        contents[WHEEL_LOCK_OUT] = data

    for entry in lock["npm"].values():
        prev = old_hashes.get(entry["tarball"])
        if prev and prev != entry["sha256"]:
            print("WARNING: " + mismatch_message(
                f"{entry['tarball']} (same version, new bytes: check why!)", prev, entry["sha256"]),
                file=sys.stderr)
    for entry in lock["wheels"].values():
        prev = old_hashes.get(Path(entry["path"]).name)
        if prev and prev != entry["sha256"]:
            print("WARNING: " + mismatch_message(
                f"{entry['path']} (same file name, new bytes: check why!)", prev, entry["sha256"]),
                file=sys.stderr)

    for out, data in contents.items():
        write_atomic(STATIC / out, data)
    write_atomic(LOCK_PATH, (json.dumps(lock, indent=2) + "\n").encode())
    outs = outputs_of(lock)
    missing, bad = survey(outs)
    if missing or bad:
        raise FetchError("verification after --record failed")
    warn_stale(outs)
    print(f"fetch.py --record: wrote {rel(LOCK_PATH)} and installed {len(outs)} files "
          f"({time.monotonic() - t0:.1f}s); review and commit the lock")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Vendor Pyodide, its wheels and the WebMCP polyfill into static/, hash-checked.")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="verify only, no network; exit 1 if a file is missing or mismatched")
    mode.add_argument("--record", action="store_true",
                      help="maintainer mode: download everything and rewrite assets.lock.json")
    args = parser.parse_args(argv)
    try:
        if args.check:
            return cmd_check()
        if args.record:
            return cmd_record()
        return cmd_fetch()
    except FetchError as exc:
        print(f"fetch.py: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fetch.py: interrupted", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
