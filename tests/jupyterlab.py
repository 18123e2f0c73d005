"""A JupyterLab server for the tests: headless, on 127.0.0.1 with a free port and a random
token, with its own settings, workspaces and runtime folders (nothing leaks into the
repository or the home folder).

    lab = JupyterLab(tmp_path, root)   # serves ``root``
    lab.wait_until_ready()
    lab.api("/api/contents/notebooks")  # the REST API, with the token
    lab.stop()                          # kernels shut down, then the server, by its PID
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

SERVER_START_S = 60  # JupyterLab answering HTTP

# JupyterLab settings for the test: every cell in the DOM (no virtual scrolling), and
# no news or update checks (this machine may have no internet).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "windowingMode": "none",
        "autoStartDefaultKernel": True,
    },
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JupyterLab:
    """A JupyterLab server in a folder of its own; ``stop()`` ends it by its PID."""

    def __init__(self, home: Path, notebooks: Path):
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = home / "jupyterlab.log"
        settings = home / "settings"
        for name, values in LAB_SETTINGS.items():
            path = settings / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(home / "config"),
            "JUPYTER_DATA_DIR": str(home / "data"),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "IPYTHONDIR": str(home / "ipython"),
        }
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={notebooks}",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={home / 'workspaces'}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-root")
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            command, cwd=notebooks, env=env, stdout=self._log, stderr=subprocess.STDOUT
        )

    def api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(
            f"{self.base}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            body = response.read()
        return json.loads(body) if body else None

    def wait_until_ready(self) -> None:
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(
                    f"JupyterLab exited with code {self.process.returncode}:\n{self.log_tail()}",
                    pytrace=False,
                )
            with contextlib.suppress(OSError, urllib.error.URLError):
                self.api("/api/status")
                return
            time.sleep(0.25)
        pytest.fail(
            f"JupyterLab did not answer within {SERVER_START_S} s:\n{self.log_tail()}",
            pytrace=False,
        )

    def log_tail(self, lines: int = 40) -> str:
        if not self._log.closed:
            self._log.flush()
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        """Shut the kernels down (they run in sessions of their own), then end the server."""
        if self.process.poll() is None:
            with contextlib.suppress(Exception):
                for kernel in self.api("/api/kernels"):
                    self.api(f"/api/kernels/{kernel['id']}", method="DELETE")
            self.process.terminate()  # SIGTERM to our server's PID: it shuts down cleanly
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._log.close()
