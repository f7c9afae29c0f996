"""Run the A2A TCK's mandatory JSON-RPC tests against the router's echo agent and, in the same run,
against the plain ``a2a-sdk`` server (the baseline); print both scores and every difference.

    python tests/tck/run.py --tck PATH      (make tck TCK=PATH)

PATH is a checkout of https://github.com/a2aproject/a2a-tck, or a bare git directory of one (it is
exported to ``build/tck/src``); nothing of it enters the repository. Its own virtual environment is
made once in ``build/tck/venv`` (``pip install -e``), from the package registry. Then, on free
loopback ports:

* ``serve.py`` with ``examples/echo_agent.py`` in its mesh. The TCK reads the card at the host's
  root and posts to the URL it is given, so a small adapter (this file, ``--adapter``) puts
  ``/agents/echo`` at a root, byte for byte;
* ``bench/baselines/a2a_sdk_echo.py``: the SDK's own route factories and an in-process echo executor.

Exit status 1 when the router passes fewer TCK tests than the baseline.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "py"))

from tests.conftest import free_port, serving, spawned  # noqa: E402

SCRATCH = ROOT / "build" / "tck"
SUMMARY = re.compile(r"=+ (.*\d+ (?:passed|failed).*) in [\d.]+s")
OUTCOME = re.compile(r"^(FAILED|ERROR) (tests/\S+)", re.MULTILINE)


def prepare(tck: Path) -> Path:
    """The TCK's sources in a scratch folder (exported when ``tck`` is a bare git directory) and its venv."""
    if (tck / "run_tck.py").exists():
        source = tck
    else:  # a bare repository: export HEAD
        commit = subprocess.run(["git", f"--git-dir={tck}", "rev-parse", "HEAD"], capture_output=True, text=True)
        commit.check_returncode()
        source = SCRATCH / "src"
        stamp = source / ".commit"
        if not stamp.exists() or stamp.read_text() != commit.stdout:
            subprocess.run(["rm", "-rf", str(source)], check=True)
            source.mkdir(parents=True)
            archive = subprocess.Popen(["git", f"--git-dir={tck}", "archive", "HEAD"], stdout=subprocess.PIPE)
            subprocess.run(["tar", "-x", "-C", str(source)], stdin=archive.stdout, check=True)
            archive.wait()
            stamp.write_text(commit.stdout)
    venv = SCRATCH / "venv"
    installed = venv / ".installed"
    if not installed.exists() or installed.read_text() != str(source):
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check"]
        with (SCRATCH / "pip.log").open("w") as log:  # the registry's mirror warns about every location
            subprocess.run([*pip, "-e", str(source)], check=True, stderr=log)
        installed.write_text(str(source))
    return source


@contextlib.contextmanager
def process(*argv: str, ready_url: str) -> Iterator[None]:
    """A Python script of the repository, its output in ``build/tck/NAME.log``, while ``ready_url`` answers."""
    with (
        (SCRATCH / f"{Path(argv[0]).stem}.log").open("w") as log,
        spawned([sys.executable, *argv], ready_url, stdout=log, stderr=subprocess.STDOUT),
    ):
        yield


def run_tck(source: Path, sut_url: str, log: Path) -> tuple[str, set[str], set[str]]:
    """The TCK's mandatory JSON-RPC category against ``sut_url``: its summary, failures, passes."""
    result = subprocess.run(
        [
            str(SCRATCH / "venv" / "bin" / "python"),
            "run_tck.py",
            "--sut-url",
            sut_url,
            "--category",
            "mandatory",
            "--transports",
            "jsonrpc",
            "--verbose",
        ],
        cwd=source,
        capture_output=True,
        text=True,
    )
    output = result.stdout + result.stderr
    log.write_text(output)
    summary = SUMMARY.search(output)
    failed = {name for _, name in OUTCOME.findall(output)}
    passed = set(re.findall(r"^(tests/\S+) PASSED", output, re.MULTILINE))
    return (summary.group(1) if summary else "no summary (see the log)"), failed, passed


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tck", type=Path, required=True, help="a2a-tck checkout or bare git directory")
    args = parser.parse_args()
    source = prepare(args.tck.resolve())
    router_port, adapter_port, baseline_port = free_port(), free_port(), free_port()
    credential = SCRATCH / "echo.credential"
    echo = ["examples/echo_agent.py", "--router", f"ws://127.0.0.1:{router_port}/a2a", "--id", "echo"]
    with (
        serving(port=router_port) as router,
        process(*echo, "--credential-file", str(credential), ready_url=f"{router}/agents/echo/.well-known/agent.json"),
        process(
            "tests/tck/adapter.py",
            f"{router}/agents/echo",
            str(adapter_port),
            ready_url=f"http://127.0.0.1:{adapter_port}/.well-known/agent-card.json",
        ),
        process(
            "bench/baselines/a2a_sdk_echo.py",
            "--port",
            str(baseline_port),
            ready_url=f"http://127.0.0.1:{baseline_port}/.well-known/agent-card.json",
        ),
    ):
        ours = run_tck(source, f"http://127.0.0.1:{adapter_port}", SCRATCH / "router.log")
        base = run_tck(source, f"http://127.0.0.1:{baseline_port}", SCRATCH / "baseline.log")
    print(f"A2A TCK ({source}), mandatory, JSON-RPC")
    print(f"  router /agents/echo : {ours[0]}   (log: {SCRATCH / 'router.log'})")
    print(f"  a2a-sdk alone       : {base[0]}   (log: {SCRATCH / 'baseline.log'})")
    print(f"passing here, failing on the baseline: {len(ours[2] & base[1])}")
    for name in sorted(ours[2] & base[1]):
        print(f"  {name}")
    print(f"failing here: {len(ours[1])}")
    for name in sorted(ours[1]):
        on_baseline = "passes" if name in base[2] else "fails" if name in base[1] else "not run"
        print(f"  {name}  (baseline: {on_baseline})")
    return 1 if len(ours[2]) < len(base[2]) else 0


if __name__ == "__main__":
    sys.exit(main())
