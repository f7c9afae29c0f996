"""Real clusters for the tests: Debian's ``redis-server`` and ``serve.py --redis`` processes.

Each test run gets its own Redis on a free port with its own data directory (``appendonly``
on, as a cluster should run it), and routers that are real processes, so a test can kill one
with SIGKILL.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis

from tests.conftest import ROOT, OnLoopback, free_port, wait_until_answers

# Short leases, so a killed router's agents are back within seconds.
LEASE = ["--cluster-heartbeat", "0.2", "--cluster-lease", "1.0"]


class RedisServer:
    def __init__(self, directory: Path, port: int | None = None) -> None:
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server is missing: `make redis` installs Debian's package")
        self.directory = directory
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory)]
        argv += ["--save", "", "--appendonly", "yes", "--appendfsync", "everysec", "--logfile", "redis.log"]
        self.process = subprocess.Popen(argv)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        client.close()
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)  # a frozen server (SIGSTOP) would not hear the SIGTERM
            self.process.terminate()
            self.process.wait(10)


class RouterProcess(OnLoopback):
    """``serve.py --redis URL`` on a free port."""

    def __init__(self, redis_url: str, *flags: str, port: int | None = None) -> None:
        self.port = port or free_port()
        argv = [sys.executable, str(ROOT / "serve.py"), "--port", str(self.port), "--log-level", "warning"]
        argv += ["--redis", redis_url, "--hub-name", "cluster", *LEASE, *flags]
        self.process = subprocess.Popen(argv, cwd=ROOT)
        try:
            wait_until_answers(f"{self.http_url}/healthz", self.process)
        except RuntimeError:
            self.kill()
            raise

    def kill(self) -> None:
        """SIGKILL: no goodbye to the cluster, no flushing."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
