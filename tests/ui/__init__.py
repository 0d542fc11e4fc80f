"""Browser tests: JupyterLab in headless Chromium (harness in lab.py)."""

from __future__ import annotations
