"""Put this folder on PYTHONPATH to hold the MCP SDK's import until the test says: when a
module of the `mcp` package is first imported, the file TEST_MCP_IMPORTING names is created,
and the import waits until the file TEST_MCP_GATE names exists. A program that imported the
SDK before drawing something would then never draw it; the test sees the order of the two
in the process itself, not by timing. (`mcp` itself may be looked up, as `find_spec("mcp")`
does, without being held: the package's submodules load only when it is imported.)
"""

from __future__ import annotations

import os
import sys
import time
from importlib.abc import MetaPathFinder
from pathlib import Path

HOLD_S = 120.0  # a held import goes on after this, so a failed test leaves no process


class McpImportGate(MetaPathFinder):
    def __init__(self, importing: Path, gate: Path) -> None:
        self.importing, self.gate = importing, gate

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.startswith("mcp.") and not self.importing.exists():
            self.importing.touch()
            deadline = time.monotonic() + HOLD_S
            while not self.gate.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        return None  # the usual finders find it


_importing, _gate = os.environ.get("TEST_MCP_IMPORTING"), os.environ.get("TEST_MCP_GATE")
if _importing and _gate:
    sys.meta_path.insert(0, McpImportGate(Path(_importing), Path(_gate)))
