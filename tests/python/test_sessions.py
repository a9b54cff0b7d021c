"""Sessions of stateful models through the Python client (issue 27): `with client.session(model) as
s: s.invoke(...)` reproduces a stream golden of ../shared/golden_state, two sessions interleaved each
reproduce their own, reset restarts from step 0, leaving the block ends the session, and the
daemon's refusals come back as ArenadError with their code. Skipped when ../shared/models_state or
../shared/golden_state is absent (never committed)."""
import json
import os
import unittest

import numpy as np

import arenad
from ardaemon import SRC, Daemon

STATE_MODELS = os.environ.get("AR_MODELS_STATE_DIR") or os.path.join(SRC, "..", "shared", "models_state")
STATE_GOLDEN = os.environ.get("AR_GOLDEN_STATE_DIR") or os.path.join(SRC, "..", "shared", "golden_state")
MODEL = "mww_v1_alexa"
HAVE = os.path.isfile(os.path.join(STATE_MODELS, MODEL + ".tflite")) and os.path.isdir(os.path.join(STATE_GOLDEN, MODEL))
DAEMON = None

_DT = {"FLOAT32": np.float32, "INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16, "INT32": np.int32,
       "INT64": np.int64, "BOOL": np.bool_}


class Stream:
    """A golden stream: inputs and outputs of step k as numpy arrays."""

    def __init__(self, name):
        self.dir = os.path.join(STATE_GOLDEN, name)
        with open(os.path.join(self.dir, "meta.json")) as f:
            self.meta = json.load(f)
        self.steps = self.meta["steps"]

    def _load(self, k, kind, t):
        path = os.path.join(self.dir, "steps", str(k), f"{kind}_{t[kind]}.bin")
        return np.fromfile(path, dtype=np.dtype(_DT[t["dtype"]]).newbyteorder("<")).reshape(t["shape"])

    def inputs(self, k):
        return [self._load(k, "input", t) for t in self.meta["inputs"]]

    def outputs(self, k):
        return [self._load(k, "output", t) for t in self.meta["outputs"]]


def matches(result, want) -> bool:
    for j, w in enumerate(want):
        got = np.asarray(result[j])
        if w.dtype == np.float32:
            tol = 1e-4 * float(np.max(np.abs(w))) + 1e-5
            if np.any(np.abs(got.astype(np.float64) - w.astype(np.float64)) > tol):
                return False
        elif got.tobytes() != w.tobytes():
            return False
    return True


def setUpModule():
    global DAEMON
    if not HAVE:
        return
    DAEMON = Daemon(extra=("--model-dir", STATE_MODELS))
    with arenad.Client(DAEMON.socket) as c:
        c.load(MODEL, os.path.join(STATE_MODELS, MODEL + ".tflite"))


def tearDownModule():
    if DAEMON is not None:
        rc = DAEMON.stop()
        assert rc == 0, f"arenad exited {rc}: {DAEMON.log()}"


@unittest.skipUnless(HAVE, f"{STATE_MODELS} or {STATE_GOLDEN} is absent (never committed)")
class Sessions(unittest.TestCase):
    def setUp(self):
        self.c = arenad.Client(DAEMON.socket, timeout=60)
        self.s = Stream(MODEL)

    def tearDown(self):
        self.c.close()

    def open_sessions(self):
        return self.c.stats()["models"][0]["sessions"]["open"]

    def test_session_context_manager_reproduces_the_stream_and_ends(self):
        before = self.open_sessions()
        with self.c.session(MODEL) as s:
            for k in range(self.s.steps):
                self.assertTrue(matches(s.invoke(self.s.inputs(k)), self.s.outputs(k)), f"step {k}")
            self.assertEqual(self.open_sessions(), before + 1)
        self.assertEqual(self.open_sessions(), before)

    def test_two_interleaved_sessions_and_a_reset(self):
        with self.c.session(MODEL, "py-a") as a, self.c.session(MODEL, "py-b") as b:
            na = nb = 0
            for who in "ABAAB" * self.s.steps:
                if who == "A" and na < self.s.steps:
                    self.assertTrue(matches(a.invoke(self.s.inputs(na)), self.s.outputs(na)), f"A step {na}")
                    na += 1
                elif who == "B" and nb < self.s.steps:
                    self.assertTrue(matches(b.invoke(self.s.inputs(nb)), self.s.outputs(nb)), f"B step {nb}")
                    nb += 1
            self.assertEqual((na, nb), (self.s.steps, self.s.steps))
            a.reset()
            self.assertTrue(matches(a.invoke(self.s.inputs(0)), self.s.outputs(0)), "A after reset")
            self.assertTrue(matches(b.invoke(self.s.inputs(0), reset=True), self.s.outputs(0)), "B reset flag")

    def test_unknown_session_is_enoent_and_a_bad_id_einval(self):
        with self.assertRaises(arenad.ArenadError) as e:
            self.c.invoke(MODEL, self.s.inputs(0), session={"id": "never-started"})
        self.assertEqual(e.exception.code, "ENOENT")
        self.assertIn("start it with the start flag", str(e.exception))
        with self.assertRaises(arenad.ArenadError) as e:
            self.c.invoke(MODEL, self.s.inputs(0), session={"id": "x" * 65, "start": True})
        self.assertEqual(e.exception.code, "EINVAL")
        self.assertTrue(self.c.reset_session(MODEL, ""))   # the default state of a stateful model


if __name__ == "__main__":
    unittest.main()
