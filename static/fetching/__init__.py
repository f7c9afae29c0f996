"""The parts of ``static/fetch.py``, one job each: pins, download, verify, lockfile."""
