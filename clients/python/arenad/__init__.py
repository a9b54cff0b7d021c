"""arenad: a pure-Python client for the arenad inference daemon.

    import numpy as np
    import arenad

    with arenad.Client() as c:              # $ARENAD_SOCKET, else /run/arenad/arenad.sock
        c.ping()
        out = c.invoke("face", {"input": np.zeros((1, 128, 128, 3), np.float32)})
        scores = out["classificators"]      # numpy arrays, by output name or index

Streaming models (wake words, LSTMs) keep state from invoke to invoke; a session gives each
stream its own state in the daemon:

    with c.session("wake") as s:
        for features in stream:
            out = s.invoke(features)

Pre- and post-processing as arenactl does it: arenad.image (photographs to input tensors, the
same bytes as `arenactl invoke --image`), arenad.detection (SSD anchors and box decoding,
non-maximum suppression, TFLite_Detection_PostProcess outputs).

The wire protocol is docs/protocol.md: length-prefixed protobuf frames on a Unix socket. The
message classes (arenad_pb2) are generated from proto/arenad.proto by protoc at build time.
"""
# In a build tree the generated arenad_pb2.py lives in <builddir>/clients/python/arenad/ while
# these sources stay in <srcdir>/clients/python/arenad/: with both folders on sys.path, extend
# the package over them (installed, both are one folder and this changes nothing).
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

from .client import (  # noqa: E402  (after the __path__ extension, which the import needs)
    DEFAULT_SOCKET,
    ArenadConnectionError,
    ArenadError,
    ArenadTimeout,
    Client,
    Session,
    CompactResult,
    InvokeResult,
    ModelInfo,
    Pending,
    PingInfo,
    Quantization,
    TensorInfo,
)

__all__ = [
    "DEFAULT_SOCKET",
    "ArenadConnectionError",
    "ArenadError",
    "ArenadTimeout",
    "Client",
    "CompactResult",
    "InvokeResult",
    "ModelInfo",
    "Pending",
    "PingInfo",
    "Quantization",
    "Session",
    "TensorInfo",
]
