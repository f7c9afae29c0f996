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
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fetching.download import clean_partials, extract_members, npm_pack, pip_download, write_atomic
from fetching.lockfile import check_resolves, load_lock, outputs_of, wheel_depends, wheel_imports, wheel_lock_bytes
from fetching.pins import (
    LOCK_FORMAT,
    LOCK_PATH,
    NPM_PACKAGES,
    PYODIDE_NPM_SPEC,
    STATIC,
    WHEEL_LOCK_OUT,
    WHEEL_PLATFORM_ARGS,
    WHEELS,
    FetchError,
    canonical,
)
from fetching.verify import check_hash, mismatch_message, rel, sha256_bytes, sha256_file, survey, warn_stale


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
        print(
            "fetch.py --check: FAILED (run `python3 static/fetch.py`; delete any mismatched file first)",
            file=sys.stderr,
        )
        return 1
    warn_stale(outs)
    print(f"fetch.py --check: all {len(outs)} files present and verified ({time.monotonic() - t0:.2f}s)")
    return 0


def cmd_fetch() -> int:
    t0 = time.monotonic()
    lock = load_lock()
    clean_partials()
    outs = outputs_of(lock)
    missing, bad = survey(outs)
    if bad:
        raise FetchError(
            "\n".join(bad) + "\nrefusing to continue: the files above were changed after they were installed;"
            " delete them and run `python3 static/fetch.py` again"
        )
    if not missing:
        warn_stale(outs)
        print(f"fetch.py: all {len(outs)} files present and verified ({time.monotonic() - t0:.2f}s, no download)")
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
                    check_hash(f"{o.member} in {tarball.name} (for static/{o.path})", members[o.member], o.sha256)
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
        raise FetchError(
            "verification after install failed: " + "; ".join([f"missing static/{o.path}" for o in missing] + bad)
        )
    warn_stale(outs)
    print(f"fetch.py: done, all {len(outs)} files verified ({time.monotonic() - t0:.1f}s)")
    return 0


def cmd_record() -> int:
    t0 = time.monotonic()
    try:
        old = json.loads(LOCK_PATH.read_text())
    except (OSError, ValueError):
        old = {}
    old_hashes: dict[str, str] = {}  # artifact file name -> previously recorded sha256
    for entry in old.get("npm", {}).values():
        old_hashes[entry.get("tarball", "")] = entry.get("sha256", "")
    for entry in old.get("wheels", {}).values():
        old_hashes[Path(entry.get("path", "")).name] = entry.get("sha256", "")

    lock: dict[str, Any] = {
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
    contents: dict[str, bytes] = {}  # path under static/ -> bytes to install
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
                "files": {
                    out: {"from": member, "sha256": sha256_bytes(members[member])} for member, out in files.items()
                },
            }
            for member, out in files.items():
                contents[out] = members[member]
            if spec == PYODIDE_NPM_SPEC:
                stock = json.loads(members["package/pyodide-lock.json"])
                lock["pyodide_lock_info"] = stock["info"]

        info = lock["pyodide_lock_info"]
        platform = WHEEL_PLATFORM_ARGS[WHEEL_PLATFORM_ARGS.index("--platform") + 1]
        pyver = WHEEL_PLATFORM_ARGS[WHEEL_PLATFORM_ARGS.index("--python-version") + 1]
        if platform != f"pyemscripten_{info['abi_version']}_{info['arch']}" or not info["python"].startswith(
            pyver + "."
        ):
            raise FetchError(f"WHEEL_PLATFORM_ARGS {WHEEL_PLATFORM_ARGS} do not match the Pyodide build: {info}")

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
            print(
                "WARNING: "
                + mismatch_message(f"{entry['tarball']} (same version, new bytes: check why!)", prev, entry["sha256"]),
                file=sys.stderr,
            )
    for entry in lock["wheels"].values():
        prev = old_hashes.get(Path(entry["path"]).name)
        if prev and prev != entry["sha256"]:
            print(
                "WARNING: "
                + mismatch_message(f"{entry['path']} (same file name, new bytes: check why!)", prev, entry["sha256"]),
                file=sys.stderr,
            )

    for out, data in contents.items():
        write_atomic(STATIC / out, data)
    write_atomic(LOCK_PATH, (json.dumps(lock, indent=2) + "\n").encode())
    outs = outputs_of(lock)
    missing, bad = survey(outs)
    if missing or bad:
        raise FetchError("verification after --record failed")
    warn_stale(outs)
    print(
        f"fetch.py --record: wrote {rel(LOCK_PATH)} and installed {len(outs)} files "
        f"({time.monotonic() - t0:.1f}s); review and commit the lock"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Vendor Pyodide, its wheels and the WebMCP polyfill into static/, hash-checked."
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check", action="store_true", help="verify only, no network; exit 1 if a file is missing or mismatched"
    )
    mode.add_argument(
        "--record", action="store_true", help="maintainer mode: download everything and rewrite assets.lock.json"
    )
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
