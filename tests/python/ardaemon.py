"""Helpers for the Python tests: start a real arenad on a temporary socket, find models and
goldens (the same places as the Check suites: $AR_MODELS_DIR, $AR_GOLDEN_DIR, $AR_BUILDDIR)."""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time

import numpy as np

SRC = os.environ.get("AR_SRCDIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("AR_BUILDDIR") or os.path.join(SRC, "build")
MODELS = os.environ.get("AR_MODELS_DIR") or os.path.join(SRC, "models")
GOLDEN = os.environ.get("AR_GOLDEN_DIR") or os.path.join(SRC, "tests", "golden")
ARENAD = os.path.join(BUILD, "arenad")
ARENACTL = os.path.join(BUILD, "arenactl")
# The cross build's programs are aarch64: ./dev cross-check starts them through tools/cross-run.
WRAP = [os.environ["AR_EXEC_WRAPPER"]] if os.environ.get("AR_EXEC_WRAPPER") else []


def model_path(stem: str) -> str:
    return os.path.join(MODELS, stem + ".tflite")


def golden(stem: str, case: str):
    """(meta, inputs, outputs) of a golden case: lists of numpy arrays in the model's order."""
    with open(os.path.join(GOLDEN, stem, "meta.json")) as f:
        meta = json.load(f)
    c = next(c for c in meta["cases"] if c["case"] == case)
    d = os.path.join(GOLDEN, stem, c["dir"])

    def load(t):
        return np.fromfile(os.path.join(d, t["file"]), dtype=np.dtype(t["dtype"]).newbyteorder("<")).reshape(t["shape"])

    return meta, c, [load(t) for t in c["inputs"]], [load(t) for t in c["outputs"]]


def golden_mismatches(got: np.ndarray, want: np.ndarray) -> int:
    """The Check suites' acceptance (tests/ar_test_util.h): |got - want| <= 1e-4 * max|want| + 1e-5."""
    tol = 1e-4 * float(np.max(np.abs(want))) + 1e-5
    return int(np.count_nonzero(np.abs(got.astype(np.float64) - want.astype(np.float64)) > tol))


class Daemon:
    """arenad --foreground on <tmp>/arenad.sock; stop() sends SIGTERM and returns the exit code."""

    def __init__(self, pool_bytes: str = "64M", extra=()):
        self.dir = tempfile.mkdtemp(prefix="arenad-py-")
        self.socket = os.path.join(self.dir, "arenad.sock")
        self.log_path = os.path.join(self.dir, "arenad.log")
        env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID")}
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen([*WRAP, ARENAD, "--foreground", "--socket", self.socket, "--pool-bytes", pool_bytes,
                                          "--model-dir", MODELS, *extra], stdout=log, stderr=subprocess.STDOUT, env=env)
        # Readiness, not timing: wait (up to 60 s) until the socket accepts.
        for _ in range(600):
            if self.proc.poll() is not None:
                raise RuntimeError(f"arenad exited with {self.proc.returncode}: {self.log()}")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(self.socket)
                return
            except OSError:
                time.sleep(0.1)
            finally:
                s.close()
        self.kill()
        raise RuntimeError(f"arenad did not accept on {self.socket}: {self.log()}")

    def log(self) -> str:
        with open(self.log_path) as f:
            return f.read()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            self._clean()

    def wait(self, timeout: float = 60) -> int:
        """Wait for an exit the test caused (a second SIGTERM during the drain would kill it)."""
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self._clean()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._clean()

    def _clean(self) -> None:
        if not os.path.isdir(self.dir):
            return
        for name in os.listdir(self.dir):
            try:
                os.unlink(os.path.join(self.dir, name))
            except OSError:
                pass
        try:
            os.rmdir(self.dir)
        except OSError:
            pass
