"""setup.py - only the build step pyproject.toml cannot say: generate arenad/arenad_pb2.py.

The protocol classes are not kept in the source tree; they are generated from proto/arenad.proto
by protoc at build time, as the project's own build does (clients/python/local.mk). Where protoc
is missing, ARENAD_PB2 may name an arenad_pb2.py the project's build made (e.g.
build/clients/python/arenad/arenad_pb2.py); failing both, the build stops and says so.
"""
import os
import shutil
import subprocess
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def _proto() -> str:
    p = os.environ.get("ARENAD_PROTO") or os.path.join(HERE, "..", "..", "proto", "arenad.proto")
    return os.path.normpath(p)


def generate_pb2(target: str) -> None:
    given = os.environ.get("ARENAD_PB2")
    if given:
        if not os.path.isfile(given):
            raise SystemExit(f"arenad: ARENAD_PB2={given}: no such file")
        shutil.copyfile(given, target)
        return
    proto = _proto()
    protoc = shutil.which("protoc")
    if not os.path.isfile(proto) or protoc is None:
        raise SystemExit(
            "arenad: cannot generate arenad/arenad_pb2.py: "
            + (f"{proto} not found (install from the arenad source tree, or set ARENAD_PROTO)"
               if not os.path.isfile(proto) else
               "protoc not found (apt-get install protobuf-compiler), or set ARENAD_PB2 to the "
               "arenad_pb2.py of a build (build/clients/python/arenad/arenad_pb2.py)"))
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([protoc, f"--proto_path={os.path.dirname(proto)}", f"--python_out={tmp}", proto], check=True)
        shutil.copyfile(os.path.join(tmp, "arenad_pb2.py"), target)


class BuildPyWithProto(build_py):
    def run(self):
        super().run()
        out = os.path.join(self.build_lib, "arenad")
        os.makedirs(out, exist_ok=True)
        generate_pb2(os.path.join(out, "arenad_pb2.py"))


setup(cmdclass={"build_py": BuildPyWithProto})
