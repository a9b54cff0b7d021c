"""The Python client as a user installs it: `python3 -m venv --system-site-packages` (Debian's numpy
and protobuf; no package index is reachable from these machines) and `pip install
--no-build-isolation --no-index clients/python` into a fresh venv (protoc generates arenad_pb2.py
at build time), then examples/detect_and_classify.py from that venv against a running daemon -
first on models the daemon already has (no --load: what a non-admin client can do), then with
--load on a pair it has not. Also: without the generated module, `import arenad` says what is
missing and how to get it, not "circular import"."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import arenad
from ardaemon import MODELS, SRC, Daemon, model_path

PY = os.environ.get("AR_PYTHON") or sys.executable
EXAMPLE = os.path.join(SRC, "examples", "detect_and_classify.py")


def setUpModule():
    global TMP, VENV, DAEMON
    if subprocess.run([PY, "-c", "import ensurepip, venv"], capture_output=True).returncode != 0:
        raise unittest.SkipTest(f"{PY} has no venv/ensurepip (apt-get install python3-venv)")
    if shutil.which("protoc") is None:
        raise unittest.SkipTest("protoc missing (apt-get install protobuf-compiler)")
    for stem in ("face_detection_short_range", "selfie_segmentation", "palm_detection_lite", "hand_landmark_lite"):
        if not os.path.isfile(model_path(stem)):
            raise unittest.SkipTest(f"{model_path(stem)} missing (./dev models)")
    TMP = tempfile.mkdtemp(prefix="arenad-py-install-")
    # A copy of the two folders the package's build reads, so pip's in-tree build writes nothing
    # into the source tree.
    shutil.copytree(os.path.join(SRC, "clients", "python"), os.path.join(TMP, "src", "clients", "python"),
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    shutil.copytree(os.path.join(SRC, "proto"), os.path.join(TMP, "src", "proto"),
                    ignore=shutil.ignore_patterns("*.pb-c.*"))
    VENV = os.path.join(TMP, "venv")
    subprocess.run([PY, "-m", "venv", "--system-site-packages", VENV], check=True)
    r = subprocess.run([os.path.join(VENV, "bin", "pip"), "install", "--no-build-isolation", "--no-index",
                        "--disable-pip-version-check", os.path.join(TMP, "src", "clients", "python")],
                       capture_output=True, text=True, env=_clean_env())
    if r.returncode != 0:
        raise AssertionError(f"pip install failed:\n{r.stdout}\n{r.stderr}")
    DAEMON = Daemon(pool_bytes="96M")


def tearDownModule():
    rc = DAEMON.stop()
    shutil.rmtree(TMP, ignore_errors=True)
    assert rc == 0, f"arenad exited {rc}: {DAEMON.log()}"


def _clean_env():
    """The environment without the build tree's PYTHONPATH: the venv's own arenad must serve."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def venv_run(*args, cwd=None):
    return subprocess.run([os.path.join(VENV, "bin", "python"), *args], capture_output=True, text=True,
                          env=_clean_env(), cwd=cwd or TMP, timeout=300)


class Installed(unittest.TestCase):
    def test_package_comes_from_the_venv(self):
        r = venv_run("-c", "import arenad, arenad.arenad_pb2, arenad.image, arenad.detection, numpy, google.protobuf;"
                           "print(arenad.__file__); print(arenad.arenad_pb2.__file__)")
        self.assertEqual(r.returncode, 0, r.stderr)
        files = r.stdout.split()
        for f in files:
            self.assertTrue(f.startswith(os.path.join(VENV, "lib")), f)
        r = subprocess.run([os.path.join(VENV, "bin", "pip"), "show", "arenad"], capture_output=True, text=True,
                           env=_clean_env())
        self.assertIn("Requires: numpy, protobuf", r.stdout)

    def test_example_uses_the_loaded_models(self):
        with arenad.Client(DAEMON.socket, timeout=60) as c:
            c.load("face", model_path("face_detection_short_range"), group="people")
            c.load("selfie", model_path("selfie_segmentation"), group="people")
            try:
                r = venv_run(EXAMPLE, "--socket", DAEMON.socket)
                print(r.stdout)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertNotIn("loaded ", r.stdout)        # nothing loaded by the example
                self.assertIn("face: 1 face(s) with score >= 0.5 (best anchor 141 of 896, score 0.921", r.stdout)
                self.assertIn("detection 1: face score 0.921, box x 179..274, y 82..177 px", r.stdout)
                self.assertIn("selfie: person mask covers 54.5% of the photo", r.stdout)
                self.assertIn("detection 1: label: person", r.stdout)
                self.assertEqual(sorted(m.name for m in c.models()), ["face", "selfie"])
                # A pair the daemon does not have, without --load: refused, naming what to do.
                r = venv_run(EXAMPLE, "--socket", DAEMON.socket, "--detector", "palm", "--classifier", "hand")
                self.assertEqual(r.returncode, 2)
                self.assertIn("the daemon has no model named 'palm' (loaded: face, selfie)", r.stderr)
                self.assertIn("pass --load", r.stderr)
            finally:
                c.unload("face")
                c.unload("selfie")

    def test_example_loads_when_asked(self):
        r = venv_run(EXAMPLE, "--socket", DAEMON.socket, "--detector", "palm", "--classifier", "hand", "--load",
                     "--models", MODELS)
        print(r.stdout)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"loaded palm from {os.path.join(MODELS, 'palm_detection_lite.tflite')}", r.stdout)
        self.assertIn("palm: 0 palm(s) with score >= 0.5 (best anchor 606 of 2016, score 0.142", r.stdout)
        self.assertIn("hand on the best (sub-threshold) candidate's hand region", r.stdout)
        with arenad.Client(DAEMON.socket) as c:
            self.assertEqual([m.name for m in c.models()], [])   # what it loaded it unloaded

    def test_missing_generated_module_is_named(self):
        """The source tree alone (no build dir on the path): a clear ImportError."""
        env = _clean_env()
        env["PYTHONPATH"] = os.path.join(SRC, "clients", "python")
        r = subprocess.run([PY, "-c", "import arenad"], capture_output=True, text=True, env=env, cwd=TMP)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("the generated protocol module arenad/arenad_pb2.py is missing", r.stderr)
        self.assertIn("pip install clients/python", r.stderr)
        self.assertNotIn("circular import", r.stderr)


if __name__ == "__main__":
    unittest.main()
