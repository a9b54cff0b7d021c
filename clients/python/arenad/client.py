"""The arenad client: one Unix-socket connection, requests matched to replies by id.

Framing (docs/protocol.md): every message is a little-endian uint32 length followed by that many
bytes of a serialized arenad.Request (client to daemon) or arenad.Response (daemon to client).
The daemon answers every request with exactly one Response carrying the request's id; Invoke and
LoadModel replies may overtake each other, so replies are matched by id, never by order.

Replies are read by whichever call is waiting for one; a reply that belongs to another request is
kept until its own waiter asks for it. So several invokes can be in flight on one connection
(invoke_async / invoke_many) without a reader thread, and a Client may be shared by threads.
"""
import array
import ctypes
import errno
import fcntl
import json
import mmap
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

try:
    from . import arenad_pb2 as pb
except ImportError as _e:
    # Without this, Python reports the missing generated module as "cannot import name 'arenad_pb2'
    # from partially initialized module 'arenad' (most likely due to a circular import)".
    if getattr(_e, "name", None) not in (None, "arenad.arenad_pb2", "arenad_pb2") and "arenad_pb2" not in str(_e):
        raise
    raise ImportError(
        "arenad: the generated protocol module arenad/arenad_pb2.py is missing (it is made from "
        "proto/arenad.proto by protoc, not kept in the source tree). Install the package - "
        "`pip install clients/python` generates it (needs protoc: apt-get install protobuf-compiler) -, "
        "or build the project (`./dev build`) and run with "
        "PYTHONPATH=clients/python:build/clients/python", name="arenad.arenad_pb2") from None

DEFAULT_SOCKET = "/run/arenad/arenad.sock"
# A daemon whose Ping does not report max_inflight_per_connection had this default.
DEFAULT_INFLIGHT_CAP = 64
# The largest reply frame accepted (the C client's limit too); the daemon's own limit on the
# frames it reads is its max_frame_bytes (default 64 MiB).
MAX_FRAME_BYTES = 1 << 30
BUSY_POLL_MAX_US = 1000000   # Client(busy_poll_us=...) upper bound, as AR_CLIENT_BUSY_POLL_MAX
_RECV_BYTES = 1 << 16   # a read buffer's least size
_COPY_BELOW = 4096      # input arrays smaller than this are copied into the frame, others sent from where they are
_IOV_MAX = 1024
_KEEP_BYTES = 16 << 20  # a read buffer larger than this is not kept for the next reply
_UNSET = object()

# TFLite TensorType (proto DType) -> numpy dtype, little-endian as on the wire.
_DTYPES = {
    "FLOAT32": np.dtype("<f4"),
    "FLOAT16": np.dtype("<f2"),
    "INT32": np.dtype("<i4"),
    "UINT8": np.dtype("u1"),
    "INT64": np.dtype("<i8"),
    "BOOL": np.dtype("?"),
    "INT16": np.dtype("<i2"),
    "COMPLEX64": np.dtype("<c8"),
    "INT8": np.dtype("i1"),
    "FLOAT64": np.dtype("<f8"),
}
_TO_NP = {pb.DType.Value(k): v for k, v in _DTYPES.items()}
_FROM_NP = {v.str.lstrip("<|"): pb.DType.Value(k) for k, v in _DTYPES.items()}


# ---- protobuf wire format, for the tensor bytes that are not copied ------------------------------
# Replies: an invoke reply is decoded without its outputs' `data` (Response.invoke = field 7 >
# InvokeResponse.outputs = field 1 > Tensor.data = field 4), whose bytes stay in the frame they were
# read into and are handed out as numpy views of it (the daemon starts each output's bytes at a
# multiple of 16 from the frame's start; libarenaclient's unpack_borrowing does the same in C).
# Requests: the inputs' bytes are not copied into the frame either; the frame is sent in pieces, the
# arrays' own memory among them (socket.sendmsg).

def _varint_read(mv, p: int) -> Tuple[int, int]:
    b = mv[p]
    if b < 0x80:
        return b, p + 1
    v, shift = b & 0x7F, 7
    while True:
        p += 1
        b = mv[p]
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, p + 1
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _strip_outputs(mv, p: int, end: int, level: int, data: list) -> Tuple[list, int]:
    """The message at mv[p:end] (level 0 Response, 1 InvokeResponse, 2 Tensor) without the output
    Tensors' field 4: (pieces, their total length). Appends one (offset, bytes) per output Tensor to
    `data` (offset into mv; None for an output without data). Raises ValueError (or IndexError)
    on bytes that are not well-formed protobuf."""
    pieces: list = []
    n = 0
    keep = p   # start of the fields copied as they are, not yet appended
    while p < end:
        start = p
        tag, p = _varint_read(mv, p)
        wt = tag & 7
        if wt == 0:
            _, p = _varint_read(mv, p)
        elif wt == 1:
            p += 8
        elif wt == 5:
            p += 4
        elif wt == 2:
            ln, p = _varint_read(mv, p)
            q, p = p, p + ln
            if p > end:
                raise ValueError("field runs past its message")
            f = tag >> 3
            inner = (level == 0 and f == 7) or (level == 1 and f == 1)
            if inner or (level == 2 and f == 4):
                if start > keep:
                    pieces.append(mv[keep:start])
                    n += start - keep
                keep = p
                if not inner:
                    data[-1] = (q, ln)
                    continue
                if level == 1:
                    data.append(None)
                sub, sn = _strip_outputs(mv, q, p, level + 1, data)
                head = _varint(tag) + _varint(sn)
                pieces.append(head)
                pieces.extend(sub)
                n += len(head) + sn
                continue
        else:
            raise ValueError(f"wire type {wt}")
        if p > end:
            raise ValueError("field runs past its message")
    if end > keep:
        pieces.append(mv[keep:end])
        n += end - keep
    return pieces, n


class _Reply:
    """An invoke reply decoded without its outputs' bytes: `msg` the Response (outputs with empty
    data), `frame` the numpy uint8 buffer holding the whole frame (4-byte length included) and
    `data` one (offset into frame, bytes) per output (None: the output has no data). Other
    attributes are the Response's."""

    __slots__ = ("msg", "frame", "data")

    def __init__(self, msg, frame: np.ndarray, data: list):
        self.msg = msg
        self.frame = frame
        self.data = data

    def __getattr__(self, name):
        return getattr(self.msg, name)


class ArenadError(Exception):
    """A request failed. `code` is the daemon's code name ("ENOENT", "ESHAPE", ...; the names of
    proto/arenad.proto's Code enum, i.e. common/ar_error.h), `number` its value (None for errors
    raised by the client alone), `message` the daemon's text naming what is wrong."""

    def __init__(self, code: str, message: str, number: Optional[int] = None):
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.number = number

    @classmethod
    def from_status(cls, status) -> "ArenadError":
        try:
            name = pb.Code.Name(status.code)
        except ValueError:   # a daemon newer than these classes
            name = f"E{status.code}"
        return cls(name, status.message or name, status.code)


class ArenadConnectionError(ArenadError, ConnectionError):
    """The connection could not be made, or was lost (code "ECONN"); the Client is unusable."""

    def __init__(self, message: str):
        super().__init__("ECONN", message, pb.Code.Value("ECONN"))


class ArenadTimeout(ArenadError, TimeoutError):
    """No reply within the timeout (code "ETIMEDOUT"). The connection stays usable: a reply that
    comes later for an abandoned request is dropped."""

    def __init__(self, message: str):
        super().__init__("ETIMEDOUT", message)


@dataclass(frozen=True)
class Quantization:
    """Affine quantization of a tensor as the daemon reports it (proto Tensor.quantization, TFLite
    QuantizationParameters): real = scale * (q - zero_point), per tensor (one scale) or per `axis`
    (one scale and zero point per index of that dimension). `scale` float32, `zero_point` int64."""

    scale: np.ndarray
    zero_point: np.ndarray
    axis: int = 0

    def _broadcast(self, ndim: int):
        if self.scale.size == 1:
            return np.float32(self.scale.item()), np.float32(self.zero_point.item())
        shape = [1] * ndim
        shape[self.axis] = -1
        return self.scale.reshape(shape).astype(np.float32), self.zero_point.reshape(shape).astype(np.float32)

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        """float32 real values of the integer codes q: (float32(q) - zero_point) * scale."""
        scale, zp = self._broadcast(np.ndim(q))
        return ((np.asarray(q).astype(np.float32) - zp) * scale).astype(np.float32)

    def quantize(self, real, dtype) -> np.ndarray:
        """Integer codes of `real` in numpy `dtype` (uint8, int8, ...): round(real / scale) + zero_point
        (halves away from zero, as TFLite's QUANTIZE), saturated to the dtype's range."""
        dtype = np.dtype(dtype)
        real = np.asarray(real, np.float64)
        scale, zp = self._broadcast(real.ndim)
        v = real / np.asarray(scale, np.float64)
        q = np.sign(v) * np.floor(np.abs(v) + 0.5) + np.asarray(zp, np.float64)
        info = np.iinfo(dtype)
        return np.clip(q, info.min, info.max).astype(dtype)


@dataclass(frozen=True)
class TensorInfo:
    """A model input or output as the daemon describes it: name, numpy dtype (float32, uint8, int8,
    int32, int64, bool, ...), shape (NHWC for images), and its quantization (None for float tensors
    and for integer tensors the model gives no parameters)."""

    name: str
    dtype: np.dtype
    shape: Tuple[int, ...]
    quantization: Optional[Quantization] = None


@dataclass(frozen=True)
class PingInfo:
    """max_inflight_per_connection: the daemon's cap on one connection's unanswered requests (0 from
    a daemon too old to say)."""
    version: str
    uptime_us: int
    max_inflight_per_connection: int = 0


@dataclass(frozen=True)
class ModelInfo:
    """A loaded model (proto ModelInfo); sizes in bytes, offsets into the daemon's arena pool."""

    name: str
    path: str
    sha256: str
    group: str
    strategy: str
    arena_bytes: int
    persistent_bytes: int
    weights_bytes: int
    activation_offset: int
    activation_bytes: int
    persistent_offset: int
    inputs: List[TensorInfo] = field(default_factory=list)
    outputs: List[TensorInfo] = field(default_factory=list)
    invokes: int = 0


@dataclass(frozen=True)
class CompactResult:
    """What a pool compaction did (proto CompactResponse; bytes, microseconds). After it
    largest_free_bytes_after == free_bytes_after: the free bytes are one block."""

    regions_moved: int
    bytes_moved: int
    models_replaced: int
    free_bytes_before: int
    largest_free_bytes_before: int
    free_blocks_before: int
    free_bytes_after: int
    largest_free_bytes_after: int
    free_blocks_after: int
    duration_us: int
    released_bytes: int = 0


class InvokeResult(Sequence):
    """The outputs of one invoke in the model's output order: result[0] or result["name"] is a
    numpy array of the output's dtype and shape (integer codes for quantized outputs);
    result.tensors[i] its TensorInfo with the quantization parameters, result.real(key) the output
    as float32 real values (dequantized when it is quantized). invoke_us / queue_us: the daemon's
    time in the interpreter and waiting for the model's group, microseconds. state_reset: "" unless
    this invoke's input shapes re-planned a stateful model and that reset state pieces ("state
    reset: NAME (A -> B bytes), ...": docs/protocol.md "Sessions").

    Where the arrays live (no copy is made of an output's bytes unless asked for):
    * outputs sent in the reply are numpy views of `frame`, the numpy uint8 buffer the client read
      the reply frame into (4-byte length included; each output's bytes start at a multiple of 16
      in it). The client never reads into that buffer again nor frees it: numpy's base reference
      keeps it alive as long as any of the arrays is, so the arrays stay valid and unchanged for as
      long as they are held, and are writable (writing changes this result only). Holding one of
      them holds the whole frame (every output of the reply): keep a copy of a small output of a
      large reply (np.array(result[i])), or invoke with copy=True. The socket read is then the
      only copy of the outputs; a reply that arrived in a read buffer more than twice its size (a
      small reply after a large one, or one read with others when several are in flight) is first
      moved into a buffer of its own (one copy), so that a result never holds more than that.
    * outputs the daemon wrote into a registered SharedBuffer (invoke outputs=) are the caller's
      views of that buffer: they show what the buffer holds, so the next invoke writing the same
      range changes them. `frame` is None when every output went there.
    * with copy=True every array owns its memory (flags.owndata) and `frame` is None."""

    def __init__(self, tensors: List[TensorInfo], arrays: List[np.ndarray], invoke_us: int, queue_us: int,
                 frame: Optional[np.ndarray] = None, state_reset: str = ""):
        self.tensors = tensors
        self.arrays = arrays
        self.invoke_us = invoke_us
        self.queue_us = queue_us
        self.frame = frame
        self.state_reset = state_reset

    def copy(self) -> "InvokeResult":
        """The same result with arrays that own their memory (frame None)."""
        return InvokeResult(self.tensors, [np.array(a) for a in self.arrays], self.invoke_us, self.queue_us,
                            state_reset=self.state_reset)

    @property
    def names(self) -> List[str]:
        return [t.name for t in self.tensors]

    def _index(self, key: Union[int, str]) -> int:
        if isinstance(key, str):
            for i, t in enumerate(self.tensors):
                if t.name == key:
                    return i
            raise KeyError(f"no output named {key!r} (outputs: {', '.join(self.names)})")
        return key

    def __getitem__(self, key):
        if isinstance(key, slice):
            return self.arrays[key]
        return self.arrays[self._index(key)]

    def __len__(self) -> int:
        return len(self.arrays)

    def quantization(self, key: Union[int, str]) -> Optional[Quantization]:
        return self.tensors[self._index(key)].quantization

    def real(self, key: Union[int, str]) -> np.ndarray:
        """Output `key` as real values: dequantized (float32) when it is quantized, else as is."""
        i = self._index(key)
        q = self.tensors[i].quantization
        return q.dequantize(self.arrays[i]) if q is not None else self.arrays[i]

    def as_dict(self) -> Dict[str, np.ndarray]:
        return {t.name: a for t, a in zip(self.tensors, self.arrays)}

    def __repr__(self) -> str:
        outs = ", ".join(f"{t.name}{list(t.shape)}:{t.dtype}" for t in self.tensors)
        return f"InvokeResult({outs}; invoke_us={self.invoke_us})"


def _quantization(t) -> Optional[Quantization]:
    # Tensor.quantization (proto field 5); a daemon older than it never sets it.
    if "quantization" not in type(t).DESCRIPTOR.fields_by_name or not t.HasField("quantization"):
        return None
    q = t.quantization
    if len(q.scale) == 0 or len(q.zero_point) != len(q.scale):
        return None
    return Quantization(np.asarray(q.scale, np.float32), np.asarray(q.zero_point, np.int64),
                        int(getattr(q, "quantized_dimension", 0)))


def _tensor_info(t) -> TensorInfo:
    dtype = _TO_NP.get(t.dtype)
    if dtype is None:
        raise ArenadError("EUNSUPPORTED", f"tensor {t.name!r}: dtype {t.dtype} has no numpy equivalent here")
    return TensorInfo(t.name, dtype, tuple(int(d) for d in t.shape), _quantization(t))


def _model_info(m) -> ModelInfo:
    return ModelInfo(m.name, m.path, m.sha256, m.group, m.strategy, m.arena_bytes, m.persistent_bytes,
                     m.weights_bytes, m.activation_offset, m.activation_bytes, m.persistent_offset,
                     [_tensor_info(t) for t in m.inputs], [_tensor_info(t) for t in m.outputs], m.invokes)


class Pending:
    """An invoke in flight (Client.invoke_async). result() waits for its reply."""

    def __init__(self, client: "Client", request_id: int, model: str, copy: bool = False):
        self._client = client
        self.id = request_id
        self.model = model
        self.copy = copy          # the result's arrays own their memory (InvokeResult)
        self._result: Optional[InvokeResult] = None
        self._error: Optional[ArenadError] = None
        self.outputs = None   # SharedBuffer views the daemon writes the outputs into (invoke outputs=)

    def done(self) -> bool:
        """True when the reply has arrived (reads what the socket already holds, never blocks)."""
        if self._result is None and self._error is None:
            self._client._poll()
            return self.id in self._client._replies
        return True

    def result(self, timeout: Any = _UNSET) -> InvokeResult:
        """The outputs, or the daemon's error raised as ArenadError. `timeout` in seconds (None:
        no limit; default: the client's); a timeout here keeps the request pending, so result()
        may be called again."""
        if self._result is None and self._error is None:
            try:
                resp = self._client._wait(self.id, timeout, abandon=False)
                self._result = self._client._invoke_result(resp, self.model, self.outputs, self.copy)
            except ArenadTimeout:
                raise
            except ArenadError as e:
                self._error = e
        if self._error is not None:
            raise self._error
        return self._result


InputsArg = Union[np.ndarray, Sequence, Mapping]


class SharedBuffer:
    """A shared-memory buffer registered with the daemon on one connection (Client.register_buffer):
    a sealed memfd mapped here and in the daemon. array(offset, shape, dtype) gives numpy views of
    it; inputs that are such views travel as (buffer, offset, bytes) ranges instead of bytes, and
    Client.invoke(..., outputs=[views]) has the daemon write the outputs into them."""

    def __init__(self, client: "Client", buffer_id: int, mm: mmap.mmap, nbytes: int):
        self.client = client
        self.id = buffer_id
        self.nbytes = nbytes
        self._mm = mm
        self._base = ctypes.addressof(ctypes.c_char.from_buffer(mm))

    def array(self, offset: int, shape, dtype) -> np.ndarray:
        """A numpy view of `shape` x `dtype` at byte `offset` of the buffer."""
        return np.ndarray(shape, dtype=np.dtype(dtype), buffer=self._mm, offset=offset)

    def range_of(self, a: np.ndarray) -> Optional[Tuple[int, int]]:
        """(offset, bytes) of a C-contiguous array lying inside this buffer, else None."""
        if not isinstance(a, np.ndarray) or not a.flags["C_CONTIGUOUS"]:
            return None
        at = a.__array_interface__["data"][0] - self._base
        if 0 <= at and a.nbytes <= self.nbytes - at:
            return at, a.nbytes
        return None

    def release(self) -> None:
        """Unregister (the daemon unmaps it once the invokes using it are done)."""
        if self.id:
            try:
                self.client._call("register_buffer", pb.RegisterBufferRequest(release=self.id), _UNSET)
            finally:
                self.client._buffers.pop(self.id, None)
                self.id = 0


class Session:
    """A session of a stateful model on one Client (Client.session). The first invoke starts it
    (the model's initial state); end() or leaving the `with` block closes it. Invokes of a session
    run in order; sessions of a model interleave freely, each reading only its own state."""

    _serial = 0

    def __init__(self, client: "Client", model: str, id: Optional[str] = None):
        if id is None:
            Session._serial += 1
            id = f"py-{os.getpid()}-{Session._serial}-{os.urandom(4).hex()}"
        self.client = client
        self.model = model
        self.id = id
        self.started = False

    def invoke(self, inputs: InputsArg, timeout: Any = _UNSET, outputs=None, copy: bool = False,
               reset: bool = False, end: bool = False) -> InvokeResult:
        """Client.invoke in this session; reset=True starts it again from the initial state first,
        end=True closes it after this invoke."""
        sess = {"id": self.id, "start": not self.started, "reset": reset, "end": end}
        r = self.client.invoke(self.model, inputs, timeout, outputs=outputs, copy=copy, session=sess)
        self.started = not end
        return r

    def reset(self, timeout: Any = _UNSET) -> None:
        """Back to the initial state (ordered after the invokes already sent)."""
        if self.started:
            self.client.reset_session(self.model, self.id, timeout=timeout)

    def end(self, timeout: Any = _UNSET) -> None:
        """Close the session (its slot is free for others); a later invoke starts a new one."""
        if self.started:
            self.started = False
            self.client.reset_session(self.model, self.id, end=True, timeout=timeout)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.end()
        except ArenadError:
            if exc[0] is None:
                raise

    def __repr__(self) -> str:
        return f"Session(model={self.model!r}, id={self.id!r}, started={self.started})"


class Client:
    """A connection to arenad.

    socket_path: the daemon's Unix socket (default: $ARENAD_SOCKET, else /run/arenad/arenad.sock,
    as arenactl). timeout: seconds allowed for connecting, sending and each reply (None: no limit);
    every call also takes its own timeout=. Errors are ArenadError (code, message); a lost
    connection is ArenadConnectionError, a reply that does not come in time ArenadTimeout.
    busy_poll_us: before blocking for a reply, poll the socket without sleeping (yielding the CPU)
    for up to this many microseconds (0..1,000,000), so that a reply arriving meanwhile costs no
    wake-up of a sleeping thread; the price is that much CPU per call (default: $ARENAD_BUSY_POLL_US,
    else 0 = block at once). Unlike libarenaclient's ar_client_set_busy_poll, the polling starts at
    the send (no sleep until the previous invoke's round trip is nearly over).
    Use as a context manager, or call close().
    """

    def __init__(self, socket_path: Optional[str] = None, timeout: Optional[float] = 30.0,
                 busy_poll_us: Optional[int] = None):
        self.socket_path = socket_path or os.environ.get("ARENAD_SOCKET") or DEFAULT_SOCKET
        self.timeout = timeout
        if busy_poll_us is None:
            env = os.environ.get("ARENAD_BUSY_POLL_US", "")
            busy_poll_us = int(env) if env.isdigit() else 0
        self.busy_poll_us = max(0, min(int(busy_poll_us), BUSY_POLL_MAX_US))
        # Replies are read into _rbuf (numpy uint8; _rstart.._rstart+_rlen read, not yet handed
        # out). An invoke reply's outputs are left in it and the buffer goes with the result
        # (_rlent): the next read takes a new one. _rhint: the last frame's size, a new buffer's.
        self._rbuf = np.empty(_RECV_BYTES, np.uint8)
        self._rstart = 0
        self._rlen = 0
        self._rlent = False
        self._rhint = 0
        self._next_id = 1
        self._replies: Dict[int, Any] = {}   # arrived, not yet claimed
        self._expected: set = set()          # sent, not yet claimed nor abandoned
        self._inputs: Dict[str, List[TensorInfo]] = {}
        self._send_lock = threading.Lock()
        self._recv_lock = threading.Lock()
        self._lost: Optional[str] = None
        self._buffers: Dict[int, SharedBuffer] = {}
        self._inflight_cap: Optional[int] = None   # the daemon's max_inflight_per_connection (inflight_cap)
        self._sock: Optional[socket.socket] = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.settimeout(timeout)
            self._sock.connect(self.socket_path)
        except socket.timeout:
            self.close()
            raise ArenadTimeout(f"connect {self.socket_path}: no answer within {timeout} s") from None
        except OSError as e:
            self.close()
            raise ArenadConnectionError(f"connect {self.socket_path}: {e.strerror or e}") from None

    # ---- context manager ------------------------------------------------------------------------
    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent). Replies still in flight are lost."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
            if self._lost is None:
                self._lost = "the client was closed"

    # ---- requests -------------------------------------------------------------------------------
    def ping(self, timeout: Any = _UNSET) -> PingInfo:
        r = self._call("ping", pb.PingRequest(), timeout)
        if r.ping.max_inflight_per_connection:
            self._inflight_cap = r.ping.max_inflight_per_connection
        return PingInfo(r.ping.version, r.ping.uptime_us, r.ping.max_inflight_per_connection)

    def inflight_cap(self, timeout: Any = _UNSET) -> int:
        """How many requests this connection keeps unanswered at most: the daemon's
        max_inflight_per_connection, learned from a Ping the first time it is needed (a daemon too
        old to report it: its default, 64): when a second request would be in flight. invoke_async
        waits for replies rather than exceed it."""
        if self._inflight_cap is None:
            self.ping(timeout)
            if self._inflight_cap is None:
                self._inflight_cap = DEFAULT_INFLIGHT_CAP
        return self._inflight_cap

    def models(self, timeout: Any = _UNSET) -> List[ModelInfo]:
        r = self._call("list_models", pb.ListModelsRequest(), timeout)
        infos = [_model_info(m) for m in r.list_models.models]
        self._inputs = {m.name: m.inputs for m in infos}
        return infos

    def load(self, name: str, path: str, group: Optional[str] = None, strategy: Optional[str] = None,
             timeout: Any = _UNSET, weights: Optional[str] = None) -> ModelInfo:
        """Load the model file `path` (made absolute here: the daemon opens it) as `name`; models
        of the same `group` share one activation region; `strategy` names the planner ("best");
        `weights` is "stored" (fp16 weights kept as stored) or "fp32" (widened at load); None
        takes the daemon's configured default."""
        req = pb.LoadModelRequest(name=name, path=os.path.abspath(path), group=group or "", strategy=strategy or "",
                                  weights=weights or "")
        info = _model_info(self._call("load_model", req, timeout).load_model.model)
        self._inputs[info.name] = info.inputs
        return info

    def unload(self, name: str, timeout: Any = _UNSET) -> None:
        self._inputs.pop(name, None)
        self._call("unload_model", pb.UnloadModelRequest(name=name), timeout)

    def resize_input(self, name: str, input: Union[int, str], shape: Sequence[int],
                     timeout: Any = _UNSET) -> ModelInfo:
        """Resize input `input` (index or name) of model `name` to `shape` (TFLite
        ResizeInputTensor): only dims that are -1 in the input's shape_signature may change. The
        daemon re-plans the model and grows or shrinks its region; returns the model as it now is
        (its inputs' and outputs' new shapes). An invoke that simply sends arrays of the new shape
        does the same. Errors: ESHAPE (a fixed dim), ENOSPC (the pool cannot hold the new plan),
        EPERM (past max_resize_activation_bytes for a peer that is not an admin)."""
        if isinstance(input, str):
            names = [t.name for t in self._input_infos(name)]
            if input not in names:
                raise ArenadError("EINVAL", f"model '{name}' has no input named '{input}' (inputs: {names})",
                                  pb.Code.Value("EINVAL"))
            input = names.index(input)
        req = pb.ResizeInputRequest(model=name, input=int(input), shape=[int(d) for d in shape])
        info = _model_info(self._call("resize_input", req, timeout).resize_input.model)
        self._inputs[info.name] = info.inputs
        return info

    def compact(self, timeout: Any = _UNSET) -> CompactResult:
        """Compact the daemon's pool (admins only): regions above its first free block move down,
        each moved model re-placed behind the invokes its share group had accepted, so that the
        free bytes become one block. Returns when they serve from their new places."""
        r = self._call("compact", pb.CompactRequest(), timeout).compact
        return CompactResult(
            regions_moved=r.regions_moved, bytes_moved=r.bytes_moved, models_replaced=r.models_replaced,
            free_bytes_before=r.free_bytes_before, largest_free_bytes_before=r.largest_free_bytes_before,
            free_blocks_before=r.free_blocks_before, free_bytes_after=r.free_bytes_after,
            largest_free_bytes_after=r.largest_free_bytes_after, free_blocks_after=r.free_blocks_after,
            duration_us=r.duration_us, released_bytes=r.released_bytes)

    def stats(self, timeout: Any = _UNSET) -> Dict[str, Any]:
        """The stats document (docs/protocol.md lists its keys) as a dict."""
        return json.loads(self._call("get_stats", pb.GetStatsRequest(), timeout).get_stats.json)

    def plan(self, name: str, timeout: Any = _UNSET) -> Dict[str, Any]:
        """The budget table of a loaded model (the keys of `arenactl plan --json`) as a dict."""
        return json.loads(self._call("get_plan", pb.GetPlanRequest(model=name), timeout).get_plan.json)

    def register_buffer(self, nbytes: int, timeout: Any = _UNSET) -> SharedBuffer:
        """Create a sealed memfd of `nbytes`, map it and register it with the daemon (sent with
        SCM_RIGHTS on this connection). See SharedBuffer; released with the connection."""
        fd = os.memfd_create("arenad-buffer", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, nbytes)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            # MAP_POPULATE: the pages are this process's (charged to it); the daemon refuses output
            # ranges whose pages nobody populated rather than fault them into its own memory.
            mm = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE)
            rid = self._send("register_buffer", pb.RegisterBufferRequest(), timeout, fds=[fd])
        finally:
            os.close(fd)
        resp = self._wait(rid, timeout, abandon=True)
        self._check(resp, "register_buffer")
        b = SharedBuffer(self, resp.register_buffer.buffer, mm, nbytes)
        self._buffers[b.id] = b
        return b

    def session(self, name: str, id: Optional[str] = None) -> "Session":
        """A session of stateful model `name` (docs/protocol.md, "Sessions"): invokes through it
        read and write a state of their own in the daemon, so several streams can use one loaded
        model. `id`: 1 to 64 printable ASCII characters (default: one made unique for this
        process). Use it as a context manager, which ends the session on exit:

            with client.session("wake") as s:
                for features in stream:
                    out = s.invoke(features)
        """
        return Session(self, name, id)

    def reset_session(self, name: str, session: str = "", end: bool = False, timeout: Any = _UNSET) -> bool:
        """Reset session `session` of model `name` to its initial state ("" = the model's default
        state), or with end=True close it, in order with the invokes already sent. Returns False
        when the model keeps no state. Errors: ENOENT (no such open session), ESTATE (it expired),
        EPERM (another uid's)."""
        req = pb.ResetSessionRequest(model=name, session=session, end=end)
        return self._call("reset_session", req, timeout).reset_session.stateful

    def invoke(self, name: str, inputs: InputsArg, timeout: Any = _UNSET, outputs=None,
               copy: bool = False, session: Optional[Dict[str, Any]] = None) -> InvokeResult:
        """Run model `name` once. `inputs`: {input name or index: array}, a list in the model's
        input order, or one array for a one-input model; arrays are sent with their own dtype
        and shape, which must match the model's (else ArenadError "ESHAPE"), from their own memory
        (no copy; a non-contiguous or big-endian array is made contiguous little-endian first); an
        array that is a view of a registered SharedBuffer goes by reference. `outputs` (optional):
        one SharedBuffer view per model output (None: sent in the reply) that the daemon writes the
        output into; the result then holds those views. Returns the outputs (InvokeResult): views
        of the reply's frame or of the SharedBuffer, not copies (InvokeResult says how long they
        live); copy=True gives arrays that own their memory instead. `session`: the
        InvokeRequest.session fields as a dict ({"id": ..., "start": ..., "end": ..., "reset": ...});
        Client.session() wraps them."""
        p = self.invoke_async(name, inputs, timeout, outputs=outputs, copy=copy, session=session)
        try:
            return p.result(timeout)
        except ArenadTimeout:
            self._abandon(p.id)
            raise

    def invoke_async(self, name: str, inputs: InputsArg, timeout: Any = _UNSET, outputs=None,
                     copy: bool = False, session: Optional[Dict[str, Any]] = None) -> Pending:
        """Send an invoke without waiting: returns a Pending whose result() gives the outputs
        (arguments as invoke). Many may be in flight on one connection; replies are matched by id.
        The input arrays are sent before this returns: they may be changed afterwards. At most
        inflight_cap() requests are unanswered at once: past it, this first reads replies (kept for
        their Pending) until one is answered; and it reads replies while its frame is being written,
        so any number of calls completes without the daemon and the client waiting on each other."""
        req = pb.InvokeRequest(model=name)
        if session is not None:
            req.session.CopyFrom(pb.Session(**session))
        if outputs is not None:
            for j, o in enumerate(outputs):
                r = None if o is None else self._range_of(o)
                if o is not None and r is None:
                    raise ArenadError("EINVAL", f"output {j}: not a contiguous view of a registered SharedBuffer")
                req.outputs.append(pb.BufferRange() if r is None else pb.BufferRange(buffer=r[0], offset=r[1], bytes=r[2]))
        pieces, nbytes = self._pack_inputs(name, inputs)
        if self._inflight_cap is not None or self._unanswered() > 0:
            # A lone request is within any cap: the Ping that learns it waits for pipelining.
            self._make_room(self.inflight_cap(timeout), timeout)
        p = Pending(self, self._send("invoke", req, timeout, extra=(pieces, nbytes)), name, copy)
        if outputs is not None:
            p.outputs = list(outputs)
        return p

    def invoke_many(self, name: str, batches: Sequence[InputsArg], window: int = 32,
                    timeout: Any = _UNSET, copy: bool = False) -> List[InvokeResult]:
        """Invoke `name` on each inputs of `batches`, keeping up to `window` invokes in flight
        (pipelined on this connection; never more than inflight_cap()); results in the order of
        `batches` (their arrays as invoke's, copy= likewise). The first error is raised after every
        reply has been read."""
        window = max(1, int(window))
        if window > 1 and len(batches) > 1:
            window = min(window, self.inflight_cap(timeout))
        pending: List[Pending] = []
        results: List[Optional[InvokeResult]] = [None] * len(batches)
        first_error: Optional[ArenadError] = None
        done = 0
        for i, inputs in enumerate(batches):
            pending.append(self.invoke_async(name, inputs, timeout, copy=copy))
            while len(pending) - done >= window:
                first_error = self._collect(pending, results, done, timeout, first_error)
                done += 1
        while done < len(pending):
            first_error = self._collect(pending, results, done, timeout, first_error)
            done += 1
        if first_error is not None:
            raise first_error
        return results  # type: ignore[return-value]

    @staticmethod
    def _collect(pending, results, i, timeout, first_error):
        try:
            results[i] = pending[i].result(timeout)
        except ArenadConnectionError:
            raise
        except ArenadTimeout:
            raise
        except ArenadError as e:
            return first_error or e
        return first_error

    # ---- inputs and outputs ---------------------------------------------------------------------
    def _input_infos(self, name: str) -> List[TensorInfo]:
        if name not in self._inputs:
            self.models()
        if name not in self._inputs:
            raise ArenadError("ENOENT", f"no model named {name!r} is loaded", pb.Code.Value("ENOENT"))
        return self._inputs[name]

    def _pack_inputs(self, name: str, inputs: InputsArg) -> Tuple[list, int]:
        """The InvokeRequest.inputs fields (field 2) of `inputs`, serialized: (pieces, total bytes).
        The bytes of arrays of _COPY_BELOW bytes or more are pieces of their own, the arrays' memory
        (sent from there: no copy); the rest is copied into the pieces between them."""
        infos: Optional[List[TensorInfo]] = None
        if isinstance(inputs, np.ndarray):
            ordered = [inputs]
        elif isinstance(inputs, Mapping):
            keys = list(inputs.keys())
            if keys and all(isinstance(k, int) for k in keys) and sorted(keys) == list(range(len(keys))):
                ordered = [inputs[i] for i in range(len(keys))]
            else:
                infos = self._input_infos(name)
                ordered = [None] * len(infos)
                for k, v in inputs.items():
                    if isinstance(k, str):
                        idx = next((i for i, t in enumerate(infos) if t.name == k), None)
                        if idx is None:
                            raise ArenadError("EINVAL", f"model {name!r} has no input named {k!r} "
                                              f"(inputs: {', '.join(t.name for t in infos)})")
                    elif isinstance(k, int) and 0 <= k < len(infos):
                        idx = k
                    else:
                        raise ArenadError("EINVAL", f"model {name!r}: input key {k!r} is neither a name nor "
                                          f"an index below {len(infos)}")
                    ordered[idx] = v
                missing = [f"{i} ({t.name})" for i, t in enumerate(infos) if ordered[i] is None]
                if missing:
                    raise ArenadError("EINVAL", f"model {name!r}: no value for input {', '.join(missing)}")
        elif isinstance(inputs, Sequence) and not isinstance(inputs, (str, bytes)):
            ordered = list(inputs)
        else:
            raise ArenadError("EINVAL", "inputs must be an array, a list of arrays or a dict of arrays")
        if infos is None:
            infos = self._inputs.get(name)
        pieces: list = []
        small = bytearray()
        total = 0
        for i, v in enumerate(ordered):
            info = infos[i] if infos is not None and i < len(infos) else None
            a = v if isinstance(v, np.ndarray) else np.asarray(v, dtype=info.dtype if info else np.float32)
            code = _FROM_NP.get(a.dtype.newbyteorder("<").str.lstrip("<|"))
            if code is None:
                raise ArenadError("EINVAL", f"input {i}: numpy dtype {a.dtype} has no arenad (TFLite) type")
            r = self._range_of(a)
            if r is not None:
                t = pb.Tensor(name=info.name if info else "", dtype=code, shape=a.shape,
                              shm=pb.BufferRange(buffer=r[0], offset=r[1], bytes=r[2])).SerializeToString()
                small += b"\x12" + _varint(len(t)) + t
                continue
            a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
            t = pb.Tensor(name=info.name if info else "", dtype=code, shape=a.shape).SerializeToString()
            head = b"\x22" + _varint(a.nbytes)   # Tensor.data
            small += b"\x12" + _varint(len(t) + len(head) + a.nbytes) + t + head
            raw = a.reshape(-1).view(np.uint8)
            if a.nbytes < _COPY_BELOW:
                small += memoryview(raw)   # (not `+= raw`: numpy would add element-wise)
            else:
                total += len(small) + a.nbytes
                pieces += [bytes(small), raw]
                small = bytearray()
        if small:
            total += len(small)
            pieces.append(bytes(small))
        return pieces, total

    def _range_of(self, a) -> Optional[Tuple[int, int, int]]:
        """(buffer id, offset, bytes) when `a` is a contiguous view of a registered buffer."""
        for b in self._buffers.values():
            r = b.range_of(a)
            if r is not None:
                return b.id, r[0], r[1]
        return None

    def _invoke_result(self, resp, model: str, outputs=None, copy: bool = False) -> InvokeResult:
        self._check(resp, "invoke", model)
        frame = resp.frame if isinstance(resp, _Reply) else None
        used_frame = False
        infos, arrays = [], []
        for j, t in enumerate(resp.invoke.outputs):
            info = _tensor_info(t)
            want = int(np.prod(info.shape, dtype=np.int64)) * info.dtype.itemsize
            if t.HasField("shm") and t.shm.buffer and outputs is not None and outputs[j] is not None:
                # Written into the caller's view of the buffer: the result is that view.
                a = outputs[j].reshape(-1).view(np.uint8)[:want].view(info.dtype).reshape(info.shape)
                infos.append(info)
                arrays.append(np.array(a) if copy else a)
                continue
            at = resp.data[j] if frame is not None and j < len(resp.data) else None
            raw = frame[at[0]:at[0] + at[1]] if at is not None else np.frombuffer(t.data, np.uint8)
            if len(raw) != want:
                raise ArenadError("EPROTO", f"output {t.name!r}: {len(raw)} data bytes, shape "
                                  f"{list(info.shape)} of {info.dtype} needs {want}", pb.Code.Value("EPROTO"))
            a = raw.view(info.dtype).reshape(info.shape)
            if copy or at is None:   # (no data field: an empty output, a read-only bytes otherwise)
                a = a.copy()
            else:
                used_frame = True
            infos.append(info)
            arrays.append(a)
        return InvokeResult(infos, arrays, resp.invoke.invoke_us, resp.invoke.queue_us,
                            frame if used_frame else None, getattr(resp.invoke, "state_reset", ""))

    # ---- framing and id matching ----------------------------------------------------------------
    def _deadline(self, timeout: Any) -> Optional[float]:
        t = self.timeout if timeout is _UNSET else timeout
        return None if t is None else time.monotonic() + t

    def _call(self, body: str, msg, timeout: Any):
        rid = self._send(body, msg, timeout)
        resp = self._wait(rid, timeout, abandon=True)
        self._check(resp, body)
        return resp

    def _check(self, resp, body: str, model: Optional[str] = None) -> None:
        if resp.status.code != pb.Code.Value("OK"):
            if model is not None:
                self._inputs.pop(model, None)   # the model may have changed under its name
            raise ArenadError.from_status(resp.status)
        if resp.WhichOneof("body") != body:
            raise ArenadError("EPROTO", f"reply to {body} carries {resp.WhichOneof('body')}", pb.Code.Value("EPROTO"))

    def _lost_error(self) -> ArenadConnectionError:
        return ArenadConnectionError(f"not connected to {self.socket_path}: {self._lost}")

    def _connection_lost(self, why: str) -> ArenadConnectionError:
        self._lost = why
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        return ArenadConnectionError(f"{self.socket_path}: {why}")

    def _send(self, body: str, msg, timeout: Any, fds=None, extra: Optional[Tuple[list, int]] = None) -> int:
        """Send Request{id, body: msg} (returns the id). `extra`: (pieces, bytes) of serialized
        fields appended to the body message, sent from where they are (_pack_inputs); `fds` go
        with the frame's first bytes (SCM_RIGHTS)."""
        with self._send_lock:
            if self._sock is None:
                raise self._lost_error()
            rid = self._next_id
            self._next_id += 1
            req = pb.Request(id=rid)
            if extra is None:
                getattr(req, body).CopyFrom(msg)
                head = req.SerializeToString()
                pieces, n = [], len(head)
            else:
                inner = msg.SerializeToString()
                number = req.DESCRIPTOR.fields_by_name[body].number
                head = req.SerializeToString() + _varint(number << 3 | 2) + _varint(len(inner) + extra[1]) + inner
                pieces, n = extra[0], len(head) + extra[1]
            if n > 0xFFFFFFFF:
                raise ArenadError("E2BIG", f"request of {n} bytes does not fit a frame")
            deadline = self._deadline(timeout)
            self._expected.add(rid)
            try:
                self._send_pieces([struct.pack("<I", n) + head, *pieces], fds, deadline)
            except socket.timeout:
                # Part of a frame may have gone: the stream cannot be trusted any more.
                raise self._connection_lost("send timed out inside a frame; connection closed") from None
            except OSError as e:
                raise self._connection_lost(f"send: {e.strerror or e}") from None
            return rid

    def _send_pieces(self, pieces: list, fds, deadline: Optional[float]) -> None:
        """sendmsg the pieces (bytes-like, one byte per item) until all are written. While the
        socket takes no more, the replies it holds are read (and kept for their requests): the
        daemon stops reading a connection whose replies are not read (max_inflight_per_connection,
        max_pending_reply_bytes), so a client that only wrote would wait for it forever."""
        views = [memoryview(p) for p in pieces if len(p)]
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        poller = select.poll()
        poller.register(self._sock.fileno(), select.POLLIN | select.POLLOUT)
        while views:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise socket.timeout("send timed out")
            events = 0
            for _, ev in poller.poll(None if left is None else max(int(left * 1000), 1)):
                events |= ev
            if events & (select.POLLIN | select.POLLHUP | select.POLLERR) and not events & select.POLLOUT:
                self._poll()   # replies first: the daemon may be waiting for them to be read
                if self._sock is None:
                    raise OSError(errno.EPIPE, self._lost or "connection closed")
                if events & (select.POLLHUP | select.POLLERR):
                    raise OSError(errno.EPIPE, "the daemon closed the connection")
                continue
            if not events & select.POLLOUT:
                continue
            try:
                sent = self._sock.sendmsg(views[:_IOV_MAX], anc, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                continue
            anc = []   # the descriptors went with the first bytes
            k = 0
            while k < len(views) and sent >= views[k].nbytes:
                sent -= views[k].nbytes
                k += 1
            del views[:k]
            if sent:
                views[0] = views[0][sent:]

    def _unanswered(self) -> int:
        """Requests sent whose reply has not arrived: at least what the daemon counts in flight."""
        return len(self._expected) - len(self._replies)

    def _make_room(self, cap: int, timeout: Any) -> None:
        """Read replies (kept for whoever claims them) until fewer than `cap` requests are
        unanswered, so the next one is within the daemon's max_inflight_per_connection."""
        deadline = self._deadline(timeout)
        while self._unanswered() >= cap:
            with self._recv_lock:
                if self._unanswered() < cap:
                    return
                if self._sock is None:
                    raise self._lost_error()
                resp = self._read_frame(deadline)
                if resp is None:
                    continue
                if resp.id == 0 and resp.status.code != pb.Code.Value("OK"):
                    raise ArenadError.from_status(resp.status)
                self._file(resp)

    def _abandon(self, rid: int) -> None:
        self._expected.discard(rid)
        self._replies.pop(rid, None)

    def _poll(self) -> None:
        """Take in the replies the socket already holds, without blocking."""
        if not self._recv_lock.acquire(blocking=False):
            return
        try:
            while self._sock is not None:
                resp = self._read_frame(deadline=0.0)
                if resp is None:
                    return
                self._file(resp)
        finally:
            self._recv_lock.release()

    def _wait(self, rid: int, timeout: Any, abandon: bool):
        deadline = self._deadline(timeout)
        while True:
            with self._recv_lock:
                if rid in self._replies:
                    self._expected.discard(rid)
                    return self._replies.pop(rid)
                if self._sock is None:
                    raise self._lost_error()
                try:
                    resp = self._read_frame(deadline)
                except ArenadTimeout:
                    if abandon:
                        self._abandon(rid)
                    raise
                if resp is None:
                    continue
                if resp.id == rid:
                    self._expected.discard(rid)
                    return resp
                if resp.id == 0 and resp.status.code != pb.Code.Value("OK"):
                    # A framing error or a refusal (EBUSY) not tied to one request: it is news
                    # for whoever is waiting.
                    raise ArenadError.from_status(resp.status)
                self._file(resp)

    def _file(self, resp) -> None:
        if resp.id in self._expected:
            self._replies[resp.id] = resp
        # else: the reply to an abandoned (timed out) request: dropped.

    def _busy_recv(self, into) -> Optional[int]:
        """busy_poll_us: the bytes a non-blocking receive into `into` finds within that time (0:
        the stream ended), else None."""
        if not self.busy_poll_us:
            return None
        end = time.monotonic() + self.busy_poll_us / 1e6
        while True:
            try:
                return self._sock.recv_into(into, 0, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                if time.monotonic() >= end:
                    return None
                os.sched_yield()
            except OSError as e:
                raise self._connection_lost(f"receive: {e.strerror or e}") from None

    def _reserve(self, need: int) -> None:
        """Room for `need` bytes from where the unread bytes start, which move to the start of
        _rbuf (a new buffer when _rbuf is lent to a result or too small)."""
        keep = self._rbuf[self._rstart:self._rstart + self._rlen]
        if self._rlent or len(self._rbuf) < need:
            self._rbuf = np.empty(max(need, _RECV_BYTES), np.uint8)
            self._rlent = False
        elif self._rstart == 0:
            return
        self._rbuf[:self._rlen] = keep   # numpy copies overlapping ranges correctly
        self._rstart = 0

    def _take_frame(self, n: int):
        """The frame of body length n at _rstart, decoded: a Response, or for an invoke reply
        with output bytes a _Reply whose outputs stay in the buffer they were read into."""
        start, size = self._rstart, 4 + n
        mv = memoryview(self._rbuf)[start:start + size]
        data: list = []
        msg = pb.Response()
        try:
            pieces, _ = _strip_outputs(mv, 4, size, 0, data)
            borrow = any(d is not None for d in data)
        except (ValueError, IndexError):   # not the daemon's encoding: protobuf decides below
            pieces, borrow = [], False
        try:
            msg.ParseFromString(b"".join(pieces) if borrow else mv[4:])
        except Exception:   # google.protobuf.message.DecodeError and friends
            raise self._connection_lost("a reply frame does not decode as arenad.Response") from None
        self._rhint = size if size <= _KEEP_BYTES else 0
        self._rstart += size
        self._rlen -= size
        if borrow:
            if start % 16 or len(self._rbuf) > 2 * size:
                # Not where the daemon's alignment holds, or in a buffer much larger than itself:
                # the frame moves to a buffer of its own (numpy's, 16-byte aligned).
                frame = self._rbuf[start:start + size].copy()
            else:
                frame = self._rbuf[start:start + size]
                self._rlent = True
        if self._rlen == 0:
            self._rstart = 0
            if not self._rlent and len(self._rbuf) > _KEEP_BYTES:
                self._rbuf = np.empty(_RECV_BYTES, np.uint8)
        return _Reply(msg, frame, data) if borrow else msg

    def _read_frame(self, deadline: Optional[float]):
        """One Response from the stream (bytes already buffered first). Blocks until `deadline`
        (monotonic seconds; None: forever; 0.0: only what is already there, returning None when
        no whole frame is). Raises ArenadTimeout, or ArenadConnectionError when the stream ends.
        The reads go straight into _rbuf: the first takes as much of the next frame as _rhint
        (the previous frame's size) says will come, so a reply like the last one is one read."""
        while True:
            need = max(self._rhint, 4)
            if self._rlen >= 4:
                (n,) = struct.unpack_from("<I", self._rbuf, self._rstart)
                if n > MAX_FRAME_BYTES:
                    raise self._connection_lost(f"reply frame of {n} bytes is larger than the client accepts")
                if self._rlen >= 4 + n:
                    return self._take_frame(n)
                need = 4 + n
            if self._rlent or self._rstart + need > len(self._rbuf):
                self._reserve(need)
            if deadline is None:
                self._sock.settimeout(None)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    if deadline == 0.0:
                        self._sock.settimeout(0.0)
                    else:
                        raise ArenadTimeout(f"no reply from {self.socket_path} in time")
                else:
                    self._sock.settimeout(left)
            into = memoryview(self._rbuf)[self._rstart + self._rlen:]
            try:
                got = self._busy_recv(into) if deadline != 0.0 else None
                if got is None:
                    got = self._sock.recv_into(into)
            except (BlockingIOError, InterruptedError):
                return None
            except socket.timeout:
                if deadline == 0.0:
                    return None
                raise ArenadTimeout(f"no reply from {self.socket_path} in time") from None
            except OSError as e:
                raise self._connection_lost(f"receive: {e.strerror or e}") from None
            if not got:
                pending = len(self._expected)
                raise self._connection_lost(
                    "arenad closed the connection" + (f" with {pending} request(s) unanswered" if pending else ""))
            self._rlen += got
