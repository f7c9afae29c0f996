"""Serve the test page, its assets and the A2A router on one port: ``python serve.py --help``.

The checkout's entry point, runnable without installing the package; the installed command
``webmcp-a2a serve`` is the same program (py/webmcp_a2a/cli/serve.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "py"))

from webmcp_a2a.cli.serve import main

if __name__ == "__main__":
    main()
