"""The Python client (clients/python/arenad) against a real arenad: requests, goldens of the
float models (tests/golden, LiteRT outputs), error replies, pipelining, timeouts, and a daemon
that goes away mid-session. unittest classes, so pytest and `python3 -m unittest` both run them."""
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

import numpy as np

import arenad
from arenad import arenad_pb2 as pb
from ardaemon import ARENACTL, BUILD, MODELS, SRC, WRAP, Daemon, golden, golden_mismatches, model_path

FACE = "face_detection_short_range"
# The quantized models (never committed; tests that need them skip without the folder).
MODELS_Q = os.environ.get("AR_MODELS_Q_DIR") or os.path.join(SRC, "..", "shared", "models_q")
HAND = "hand_landmark_lite"


def setUpModule():
    global DAEMON, INT_DIR
    # The integer-I/O model (tests/ar_test_model.c) in a directory the daemon may load from.
    INT_DIR = tempfile.mkdtemp(prefix="arenad-py-int-")
    subprocess.run([*WRAP, os.path.join(BUILD, "tests", "mk_int_io_model"), os.path.join(INT_DIR, "int_io.tflite")],
                   check=True)
    subprocess.run([*WRAP, os.path.join(BUILD, "tests", "mk_int_io_model"), os.path.join(INT_DIR, "batch.tflite"),
                    "batch"], check=True)
    extra = ["--model-dir", INT_DIR]
    if os.path.isdir(MODELS_Q):
        extra += ["--model-dir", MODELS_Q]
    DAEMON = Daemon(extra=tuple(extra))
    with arenad.Client(DAEMON.socket) as c:
        c.load("face", model_path(FACE), group="people")
        c.load("hand", model_path(HAND))


def tearDownModule():
    rc = DAEMON.stop()
    for name in os.listdir(INT_DIR):
        os.unlink(os.path.join(INT_DIR, name))
    os.rmdir(INT_DIR)
    assert rc == 0, f"arenad exited {rc}: {DAEMON.log()}"


class Requests(unittest.TestCase):
    def setUp(self):
        self.c = arenad.Client(DAEMON.socket, timeout=60)

    def tearDown(self):
        self.c.close()

    def test_ping_reports_version_and_uptime(self):
        self.assertEqual(self.c.ping().max_inflight_per_connection, 64)   # the daemon's default
        p = self.c.ping()
        self.assertRegex(p.version, r"^\d+\.\d+\.\d+")
        self.assertGreater(p.uptime_us, 0)

    def test_busy_poll_client_gets_the_same_answers(self):
        self.assertEqual(self.c.busy_poll_us, 0)
        with arenad.Client(DAEMON.socket, timeout=60, busy_poll_us=5000) as c:
            self.assertEqual(c.busy_poll_us, 5000)
            self.assertTrue(c.ping().version)
            _, _, inputs, outputs = golden(FACE, "photo")
            for _ in range(3):
                r = c.invoke("face", inputs[0])
                for got, want in zip(r, outputs):
                    self.assertEqual(golden_mismatches(got, want), 0)
        old = os.environ.get("ARENAD_BUSY_POLL_US")
        try:
            os.environ["ARENAD_BUSY_POLL_US"] = "2000000"   # clamped to 1 s
            with arenad.Client(DAEMON.socket) as c:
                self.assertEqual(c.busy_poll_us, arenad.client.BUSY_POLL_MAX_US)
                self.assertTrue(c.ping().version)
        finally:
            if old is None:
                os.environ.pop("ARENAD_BUSY_POLL_US", None)
            else:
                os.environ["ARENAD_BUSY_POLL_US"] = old

    def test_default_socket_is_arenad_socket_env_then_run(self):
        old = os.environ.get("ARENAD_SOCKET")
        try:
            os.environ["ARENAD_SOCKET"] = DAEMON.socket
            with arenad.Client() as c:
                self.assertEqual(c.socket_path, DAEMON.socket)
                self.assertTrue(c.ping().version)
            del os.environ["ARENAD_SOCKET"]
            if not os.path.exists(arenad.DEFAULT_SOCKET):
                with self.assertRaises(arenad.ArenadConnectionError) as cm:
                    arenad.Client()
                self.assertIn("/run/arenad/arenad.sock", str(cm.exception))
        finally:
            if old is None:
                os.environ.pop("ARENAD_SOCKET", None)
            else:
                os.environ["ARENAD_SOCKET"] = old

    def test_models_describe_inputs_outputs_and_file(self):
        models = {m.name: m for m in self.c.models()}
        self.assertLessEqual({"face", "hand"}, set(models))
        face = models["face"]
        meta, _, _, _ = golden(FACE, "photo")
        self.assertEqual(face.sha256, meta["model_sha256"])
        self.assertEqual(face.group, "people")
        self.assertEqual(face.strategy, "best")
        self.assertEqual([(t.name, t.dtype, t.shape) for t in face.inputs],
                         [("input", np.dtype(np.float32), (1, 128, 128, 3))])
        self.assertEqual([(t.name, t.shape) for t in face.outputs],
                         [("regressors", (1, 896, 16)), ("classificators", (1, 896, 1))])
        self.assertIsNone(face.outputs[0].quantization)
        self.assertGreater(face.arena_bytes, 0)
        self.assertEqual(os.path.realpath(face.path), os.path.realpath(model_path(FACE)))

    def check_golden(self, name, stem, case, how):
        _, c, inputs, outputs = golden(stem, case)
        if how == "name":
            arg = {t["name"]: a for t, a in zip(c["inputs"], inputs)}
        elif how == "index":
            arg = {i: a for i, a in enumerate(inputs)}
        elif how == "list":
            arg = inputs
        else:
            arg = inputs[0]
        r = self.c.invoke(name, arg)
        self.assertEqual(len(r), len(outputs))
        self.assertEqual(r.names, [t["name"] for t in c["outputs"]])
        for j, (got, want) in enumerate(zip(r, outputs)):
            self.assertEqual(got.dtype, np.float32)
            self.assertEqual(got.shape, want.shape)
            self.assertEqual(golden_mismatches(got, want), 0, f"{stem}/{case} output {j}")
            self.assertIsNone(r.quantization(j))
        self.assertIs(r[c["outputs"][0]["name"]], r[0])
        return r

    def test_invoke_face_goldens_by_name_index_list_array(self):
        for case, how in (("photo", "name"), ("random", "index"), ("photo", "list"), ("random", "array")):
            with self.subTest(case=case, how=how):
                self.check_golden("face", FACE, case, how)

    def test_invoke_hand_landmark_goldens_four_outputs(self):
        for case in ("photo", "random"):
            r = self.check_golden("hand", HAND, case, "name")
            self.assertEqual(len(r.as_dict()), 4)

    def test_shared_buffer_inputs_and_outputs_match_the_golden(self):
        _, _, inputs, outputs = golden(FACE, "photo")
        nin = inputs[0].nbytes
        buf = self.c.register_buffer(nin + sum(o.nbytes for o in outputs))
        x = buf.array(0, inputs[0].shape, np.float32)
        x[...] = inputs[0]
        outs, off = [], nin
        for o in outputs:
            outs.append(buf.array(off, o.shape, np.float32))
            off += o.nbytes
        r = self.c.invoke("face", x, outputs=outs)
        for j, want in enumerate(outputs):
            self.assertEqual(golden_mismatches(r[j], want), 0, f"output {j}")
            self.assertTrue(np.shares_memory(r[j], outs[j]))
        r = self.c.invoke("face", x)   # input by reference, outputs in the reply
        self.assertEqual(golden_mismatches(r[0], outputs[0]), 0)
        buf.release()
        # Released: the same memory now travels as bytes (the client's mapping stays valid).
        self.assertEqual(golden_mismatches(self.c.invoke("face", x)[0], outputs[0]), 0)
        req = pb.InvokeRequest(model="face")
        req.inputs.append(pb.Tensor(dtype=pb.DType.Value("FLOAT32"), shape=x.shape,
                                    shm=pb.BufferRange(buffer=1, offset=0, bytes=nin)))
        with self.assertRaises(arenad.ArenadError) as cm:
            self.c._call("invoke", req, None)
        self.assertEqual(cm.exception.code, "EINVAL")
        self.assertIn("no buffer 1 is registered on this connection", cm.exception.message)

    def test_unsealed_memfd_is_refused(self):
        fd = os.memfd_create("unsealed", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, 4096)
        try:
            rid = self.c._send("register_buffer", pb.RegisterBufferRequest(), None, fds=[fd])
        finally:
            os.close(fd)
        resp = self.c._wait(rid, None, abandon=True)
        self.assertEqual(resp.status.code, pb.Code.Value("EINVAL"))
        self.assertIn("not sealed", resp.status.message)
        self.c.ping()

    def test_stats_is_a_dict_with_the_documented_keys(self):
        self.c.invoke("face", golden(FACE, "photo")[2][0])
        s = self.c.stats()
        self.assertEqual(set(s), {"pool", "models", "groups", "daemon", "memory"})
        self.assertEqual(s["pool"]["bytes"], 64 << 20)
        mem = s["memory"]   # resident memory by part: the sum is the parts' (docs/protocol.md)
        parts = ("pool_resident_bytes", "models_resident_bytes", "blas_resident_bytes", "heap_bytes", "rest_bytes",
                 "shm_resident_bytes")
        self.assertEqual(mem["accounted_bytes"], sum(mem[k] for k in parts))
        self.assertEqual(mem["unaccounted_bytes"], mem["rss_bytes"] - mem["accounted_bytes"])
        face = next(m for m in s["models"] if m["name"] == "face")
        self.assertGreaterEqual(face["invokes"], 1)
        lat = face["latency_us"]
        self.assertEqual(lat["count"], face["invokes"])
        counts = [b["count"] for b in lat["buckets"]]
        self.assertEqual(counts, sorted(counts))
        self.assertLessEqual(counts[-1], lat["count"])

    def test_plan_of_a_loaded_model(self):
        plan = self.c.plan("face")
        self.assertIsInstance(plan, dict)
        self.assertTrue(plan.get("buffers"))

    def test_load_plan_unload_then_invoke_is_enoent(self):
        info = self.c.load("face2", model_path(FACE), strategy="greedy-by-size")
        self.assertEqual(info.strategy, "greedy-by-size")
        self.assertEqual(info.inputs[0].shape, (1, 128, 128, 3))
        self.check_golden("face2", FACE, "photo", "name")
        self.c.unload("face2")
        self.assertNotIn("face2", [m.name for m in self.c.models()])
        with self.assertRaises(arenad.ArenadError) as cm:
            self.c.invoke("face2", golden(FACE, "photo")[2][0])
        self.assertEqual(cm.exception.code, "ENOENT")


    def test_compact_after_unload_leaves_one_free_block(self):
        self.c.load("cface1", model_path(FACE))
        self.c.load("cface2", model_path(FACE))
        self.c.unload("cface1")   # a hole below cface2 (the daemon compacts after an unload too)
        r = self.c.compact()      # joins that compaction, or finds nothing left to move
        self.assertIsInstance(r, arenad.CompactResult)
        self.assertEqual(r.largest_free_bytes_after, r.free_bytes_after)
        self.assertEqual(r.free_blocks_after, 1)
        pool = self.c.stats()["pool"]
        self.assertEqual(pool["largest_free_bytes"], pool["free_bytes"])
        self.assertEqual(pool["free_blocks"], 1)
        self.assertGreaterEqual(pool["compactions"], 1)
        self.check_golden("cface2", FACE, "photo", "name")
        # arenactl compact: nothing left to move now.
        out = subprocess.run([*WRAP, ARENACTL, "-s", DAEMON.socket, "compact", "--json"], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        j = json.loads(out.stdout)
        self.assertEqual(j["regions_moved"], 0)
        self.assertEqual(j["largest_free_bytes_after"], j["free_bytes_after"])
        out = subprocess.run([*WRAP, ARENACTL, "-s", DAEMON.socket, "compact"], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"^pool already compact: .* free in 1 block\(s\)\n$")
        self.c.unload("cface2")

    def test_load_with_fp32_weights_matches_stored(self):
        info = self.c.load("face32", model_path(FACE), weights="fp32")
        try:
            self.check_golden("face32", FACE, "photo", "name")
            models = {m["name"]: m for m in self.c.stats()["models"]}
            self.assertEqual(models["face32"]["weights"], "fp32")
            self.assertEqual(models["face"]["weights"], "stored")   # the daemon's default
            self.assertGreater(models["face32"]["folded_bytes"], 0)
            self.assertEqual(models["face"]["folded_bytes"], 0)
            self.assertLess(models["face"]["persistent_bytes"] * 10, info.persistent_bytes)
            self.assertEqual(self.c.plan("face32")["weights"], "fp32")
        finally:
            self.c.unload("face32")
        with self.assertRaises(arenad.ArenadError) as cm:
            self.c.load("x", model_path(FACE), weights="fp16")
        self.assertEqual(cm.exception.code, "EINVAL")


class ZeroCopy(unittest.TestCase):
    """Outputs are views, not copies: of the frame the reply was read into (bytes path) or of the
    registered buffer the daemon wrote them into (shm path); input arrays are sent from their own
    memory. copy=True gives arrays that own their memory."""

    def setUp(self):
        self.c = arenad.Client(DAEMON.socket, timeout=60)
        _, _, self.inputs, self.outputs = golden(FACE, "photo")
        _, _, self.inputs_r, self.outputs_r = golden(FACE, "random")

    def tearDown(self):
        self.c.close()

    def assert_golden(self, r, outputs):
        for j, want in enumerate(outputs):
            self.assertEqual(golden_mismatches(r[j], want), 0, f"output {j}")

    def assert_views_of_the_frame(self, r):
        f = r.frame
        self.assertIsInstance(f, np.ndarray)
        self.assertEqual(f.dtype, np.uint8)
        raw = f.tobytes()
        self.assertEqual(struct.unpack_from("<I", raw)[0], len(raw) - 4)   # the whole frame, length first
        resp = pb.Response.FromString(raw[4:])   # the frame as protobuf decodes it, data included
        self.assertEqual(len(resp.invoke.outputs), len(r))
        for j, t in enumerate(resp.invoke.outputs):
            a = r[j]
            at = a.ctypes.data - f.ctypes.data
            # The array's memory is the output's data field inside the frame, not a copy of it.
            self.assertEqual(at, raw.find(t.data), f"output {j}")
            self.assertEqual(a.nbytes, len(t.data))
            self.assertTrue(np.shares_memory(a, f))
            self.assertFalse(a.flags.owndata)
            self.assertTrue(a.flags.writeable and a.flags.aligned)
            self.assertEqual(at % 16, 0, "the daemon pads each output to 16 bytes from the frame's start")
            self.assertEqual(a.ctypes.data % 16, 0)

    def test_reply_outputs_are_views_of_the_reply_frame(self):
        r1 = self.c.invoke("face", self.inputs[0])
        self.assert_golden(r1, self.outputs)
        self.assert_views_of_the_frame(r1)
        r2 = self.c.invoke("face", self.inputs_r[0])
        self.assert_views_of_the_frame(r2)
        self.assert_golden(r2, self.outputs_r)
        # Each reply has a frame of its own, never read into again: r1 is unchanged by r2.
        self.assertFalse(np.shares_memory(r1.frame, r2.frame))
        self.assert_golden(r1, self.outputs)
        r1[0][...] = 0   # writing one result's arrays changes nothing else
        self.assert_golden(r2, self.outputs_r)
        # Kept alive by the arrays alone (numpy's base reference), after the result is gone.
        a = r2[1]
        del r2
        self.c.invoke("face", self.inputs[0])
        self.assertEqual(golden_mismatches(a, self.outputs_r[1]), 0)

    def test_copy_gives_arrays_owning_their_memory(self):
        for r in (self.c.invoke("face", self.inputs[0], copy=True), self.c.invoke("face", self.inputs[0]).copy()):
            self.assertIsNone(r.frame)
            self.assert_golden(r, self.outputs)
            for a in r:
                self.assertTrue(a.flags.owndata)
        r = self.c.invoke_many("face", [self.inputs[0]] * 3, copy=True)
        self.assertTrue(all(x.frame is None and x[0].flags.owndata for x in r))

    def test_pipelined_replies_are_views_each_of_its_frame(self):
        batches = [self.inputs[0] if i % 2 == 0 else self.inputs_r[0] for i in range(12)]
        rs = self.c.invoke_many("face", batches, window=6)
        for i, r in enumerate(rs):
            self.assert_golden(r, self.outputs if i % 2 == 0 else self.outputs_r)
            self.assert_views_of_the_frame(r)
        for a, b in zip(rs, rs[1:]):
            self.assertFalse(np.shares_memory(a[0], b[0]))

    def test_shm_outputs_are_views_of_the_registered_buffer(self):
        nin = self.inputs[0].nbytes
        offs = [nin + 64 * 1024 * j for j in range(len(self.outputs))]
        buf = self.c.register_buffer(offs[-1] + self.outputs[-1].nbytes)
        x = buf.array(0, self.inputs[0].shape, np.float32)
        outs = [buf.array(o, w.shape, np.float32) for o, w in zip(offs, self.outputs)]
        x[...] = self.inputs[0]
        r = self.c.invoke("face", x, outputs=outs)
        self.assertIsNone(r.frame)
        self.assert_golden(r, self.outputs)
        for j, (o, w) in enumerate(zip(offs, self.outputs)):
            self.assertEqual(buf.range_of(r[j]), (o, w.nbytes), f"output {j}")   # inside the mapping, where asked
            self.assertFalse(r[j].flags.owndata)
        kept = self.c.invoke("face", x, outputs=outs, copy=True)
        # A view shows what the buffer holds: the next invoke into the same ranges changes it; a copy stays.
        x[...] = self.inputs_r[0]
        self.c.invoke("face", x, outputs=outs)
        self.assert_golden(r, self.outputs_r)
        self.assert_golden(kept, self.outputs)
        self.assertTrue(all(a.flags.owndata for a in kept))
        buf.release()

    def test_inputs_are_sent_from_the_arrays_memory(self):
        x = np.ascontiguousarray(self.inputs[0])
        pieces, total = self.c._pack_inputs("face", x)
        self.assertEqual(total, sum(len(memoryview(p).cast("B")) for p in pieces))
        self.assertTrue(any(isinstance(p, np.ndarray) and np.shares_memory(p, x) for p in pieces))
        # Arrays that are not contiguous little-endian are made so first (and still give the golden).
        for odd in (x.astype(">f4"), np.asfortranarray(x), x[..., ::-1].copy()[..., ::-1]):
            self.assert_golden(self.c.invoke("face", odd), self.outputs)


class ErrorReplies(unittest.TestCase):
    def setUp(self):
        self.c = arenad.Client(DAEMON.socket, timeout=60)

    def tearDown(self):
        self.c.close()

    def test_unknown_model_is_enoent_from_the_daemon(self):
        with self.assertRaises(arenad.ArenadError) as cm:
            self.c.invoke("no_such_model", np.zeros((1, 128, 128, 3), np.float32))
        e = cm.exception
        self.assertEqual(e.code, "ENOENT")
        self.assertEqual(e.number, pb.ENOENT)
        self.assertIn("no_such_model", e.message)
        # ... and by input name, which the client resolves through ListModels first.
        with self.assertRaises(arenad.ArenadError) as cm:
            self.c.invoke("no_such_model", {"input": np.zeros((1, 128, 128, 3), np.float32)})
        self.assertEqual(cm.exception.code, "ENOENT")

    def test_wrong_shape_is_eshape_naming_the_input(self):
        with self.assertRaises(arenad.ArenadError) as cm:
            self.c.invoke("face", {"input": np.zeros((1, 64, 128, 3), np.float32)})
        self.assertEqual(cm.exception.code, "ESHAPE")
        self.assertIn("input 0 (input)", cm.exception.message)
        self.assertIn("[1,128,128,3]", cm.exception.message)

    def test_wrong_dtype_is_eshape(self):
        with self.assertRaises(arenad.ArenadError) as cm:
            self.c.invoke("face", np.zeros((1, 128, 128, 3), np.float64))
        self.assertEqual(cm.exception.code, "ESHAPE")

    def test_wrong_input_count_is_eshape(self):
        a = np.zeros((1, 128, 128, 3), np.float32)
        with self.assertRaises(arenad.ArenadError) as cm:
            self.c.invoke("face", [a, a])
        self.assertEqual(cm.exception.code, "ESHAPE")

    def test_unknown_input_name_and_missing_input_fail_in_the_client(self):
        with self.assertRaises(arenad.ArenadError) as cm:
            self.c.invoke("face", {"image": np.zeros((1, 128, 128, 3), np.float32)})
        self.assertEqual(cm.exception.code, "EINVAL")
        self.assertIn("'image'", cm.exception.message)
        self.assertIsNone(cm.exception.number)

    def test_load_errors(self):
        with self.assertRaises(arenad.ArenadError) as cm:
            self.c.load("face", model_path(FACE))
        self.assertEqual(cm.exception.code, "EEXIST")
        with self.assertRaises(arenad.ArenadError) as cm:
            self.c.load("x", model_path(FACE), strategy="no-such-strategy")
        self.assertEqual(cm.exception.code, "EINVAL")
        with self.assertRaises(arenad.ArenadError) as cm:
            self.c.load("x", "/nonexistent/model.tflite")
        self.assertIn(cm.exception.code, ("ENOENT", "EIO", "EPERM"))
        with self.assertRaises(arenad.ArenadError) as cm:
            self.c.unload("never_loaded")
        self.assertEqual(cm.exception.code, "ENOENT")

    def test_connection_stays_usable_after_errors(self):
        for _ in range(3):
            with self.assertRaises(arenad.ArenadError):
                self.c.invoke("face", np.zeros((2, 2), np.float32))
        self.assertTrue(self.c.ping().version)

    def test_connect_to_a_missing_socket_is_econn(self):
        with self.assertRaises(arenad.ArenadConnectionError) as cm:
            arenad.Client("/nonexistent/arenad.sock")
        self.assertEqual(cm.exception.code, "ECONN")
        self.assertIsInstance(cm.exception, ConnectionError)


class Pipelining(unittest.TestCase):
    def test_invokes_in_flight_are_matched_by_id(self):
        _, _, face_photo, face_photo_out = golden(FACE, "photo")
        _, _, face_rand, face_rand_out = golden(FACE, "random")
        _, _, hand_in, hand_out = golden(HAND, "photo")
        with arenad.Client(DAEMON.socket, timeout=120) as c:
            pending, wants = [], []
            for i in range(12):
                if i % 3 == 2:
                    pending.append(c.invoke_async("hand", hand_in))
                    wants.append(hand_out)
                else:
                    photo = i % 2 == 0
                    pending.append(c.invoke_async("face", face_photo if photo else face_rand))
                    wants.append(face_photo_out if photo else face_rand_out)
            # A ping sent behind them is answered on the loop thread, possibly first.
            self.assertTrue(c.ping().version)
            self.assertEqual(len({p.id for p in pending}), 12)
            for p, want in reversed(list(zip(pending, wants))):   # claim in the opposite order
                r = p.result()
                self.assertTrue(p.done())
                self.assertEqual([golden_mismatches(g, w) for g, w in zip(r, want)], [0] * len(want))

    def test_invoke_many_keeps_a_window_in_flight(self):
        _, _, photo, photo_out = golden(FACE, "photo")
        _, _, rand, rand_out = golden(FACE, "random")
        with arenad.Client(DAEMON.socket, timeout=120) as c:
            before = next(m for m in c.stats()["models"] if m["name"] == "face")["invokes"]
            batches = [photo if i % 2 == 0 else rand for i in range(20)]
            results = c.invoke_many("face", batches, window=6)
            self.assertEqual(len(results), 20)
            for i, r in enumerate(results):
                want = photo_out if i % 2 == 0 else rand_out
                self.assertEqual([golden_mismatches(g, w) for g, w in zip(r, want)], [0, 0])
            after = next(m for m in c.stats()["models"] if m["name"] == "face")["invokes"]
            self.assertGreaterEqual(after - before, 20)

    def test_a_thousand_pipelined_invokes_with_a_window_above_the_cap(self):
        # The daemon reads at most max_inflight_per_connection (64) unanswered requests of a
        # connection: invoke_many with window 200 used to write on while it had stopped reading,
        # and deadlocked until send_timeout_ms closed the connection. Now the window is capped at
        # what the Ping reports and replies are read while frames are written.
        _, _, photo, photo_out = golden(FACE, "photo")
        _, _, rand, rand_out = golden(FACE, "random")
        with arenad.Client(DAEMON.socket, timeout=120) as c:
            self.assertEqual(c.ping().max_inflight_per_connection, 64)
            self.assertEqual(c.inflight_cap(), 64)
            batches = [photo if i % 2 == 0 else rand for i in range(1000)]
            results = c.invoke_many("face", batches, window=200)
            self.assertEqual(len(results), 1000)
            for i, r in enumerate(results):
                want = photo_out if i % 2 == 0 else rand_out
                self.assertEqual([golden_mismatches(g, w) for g, w in zip(r, want)], [0, 0], f"invoke {i}")

    def test_a_thousand_invoke_async_before_any_result(self):
        # 1,000 invokes sent before a single result() is asked for (100 used to hang): each send
        # beyond the daemon's cap first takes in replies, which wait in the client for their
        # Pending; every output equals one single invoke's.
        _, _, photo, _ = golden(FACE, "photo")
        with arenad.Client(DAEMON.socket, timeout=120) as c:
            single = c.invoke("face", photo, copy=True)
            pending = [c.invoke_async("face", photo) for _ in range(1000)]
            self.assertEqual(len({p.id for p in pending}), 1000)
            for i, p in enumerate(pending):
                r = p.result()
                for j in range(len(single)):
                    self.assertTrue(np.array_equal(r[j], single[j]), f"invoke {i} output {j}")

    def test_errors_in_flight_do_not_disturb_the_others(self):
        _, _, photo, photo_out = golden(FACE, "photo")
        with arenad.Client(DAEMON.socket, timeout=120) as c:
            good1 = c.invoke_async("face", photo)
            bad = c.invoke_async("face", np.zeros((1, 1), np.float32))
            good2 = c.invoke_async("face", photo)
            with self.assertRaises(arenad.ArenadError) as cm:
                bad.result()
            self.assertEqual(cm.exception.code, "ESHAPE")
            for p in (good2, good1):
                self.assertEqual([golden_mismatches(g, w) for g, w in zip(p.result(), photo_out)], [0, 0])

    def test_one_client_shared_by_threads(self):
        _, _, photo, photo_out = golden(FACE, "photo")
        errors = []
        with arenad.Client(DAEMON.socket, timeout=120) as c:
            def work():
                try:
                    for _ in range(4):
                        r = c.invoke("face", photo)
                        if [golden_mismatches(g, w) for g, w in zip(r, photo_out)] != [0, 0]:
                            errors.append("golden mismatch")
                except Exception as e:   # reported below
                    errors.append(repr(e))
            threads = [threading.Thread(target=work) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        self.assertEqual(errors, [])


class FakeDaemon:
    """A socket that answers Ping only when told to, for deterministic timeouts."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="arenad-fake-")
        self.path = os.path.join(self.dir, "fake.sock")
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(self.path)
        self.srv.listen(1)
        self.release = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        conn, _ = self.srv.accept()
        with conn:
            f = conn.makefile("rb")
            ids = []
            while len(ids) < 2:
                (n,) = struct.unpack("<I", f.read(4))
                req = pb.Request.FromString(f.read(n))
                ids.append(req.id)
            self.release.wait(30)
            for i in ids:   # the reply to the first (timed out) request comes late, then the second
                resp = pb.Response(id=i)
                resp.ping.version = f"fake-{i}"
                data = resp.SerializeToString()
                conn.sendall(struct.pack("<I", len(data)) + data)
            f.read(1)   # until the client closes

    def close(self):
        self.release.set()
        self.srv.close()
        self.thread.join(10)
        os.unlink(self.path)
        os.rmdir(self.dir)


class Timeouts(unittest.TestCase):
    def test_timeout_raises_and_the_late_reply_is_dropped(self):
        fake = FakeDaemon()
        try:
            with arenad.Client(fake.path, timeout=0.2) as c:
                with self.assertRaises(arenad.ArenadTimeout) as cm:
                    c.ping()
                self.assertEqual(cm.exception.code, "ETIMEDOUT")
                self.assertIsInstance(cm.exception, TimeoutError)
                fake.release.set()
                # The second ping gets its own reply, not the first one's (which arrives before it).
                self.assertEqual(c.ping(timeout=30).version, "fake-2")
        finally:
            fake.close()

    def test_pending_result_timeout_keeps_the_request(self):
        fake = FakeDaemon()
        try:
            with arenad.Client(fake.path, timeout=0.2) as c:
                p = c.invoke_async("m", np.zeros(1, np.float32))
                with self.assertRaises(arenad.ArenadTimeout):
                    p.result(timeout=0.1)
                self.assertFalse(p.done())
                p2 = c._send("ping", pb.PingRequest(), None)   # the fake answers after two requests
                fake.release.set()
                with self.assertRaises(arenad.ArenadError) as cm:
                    p.result(timeout=30)   # a Ping reply to an invoke: a protocol error, not a hang
                self.assertEqual(cm.exception.code, "EPROTO")
                self.assertEqual(c._wait(p2, 30, True).ping.version, f"fake-{p2}")
        finally:
            fake.close()


class DaemonGoesAway(unittest.TestCase):
    def test_sigkill_mid_session_gives_econn_not_a_hang(self):
        d = Daemon()
        try:
            c = arenad.Client(d.socket, timeout=60)
            c.load("face", model_path(FACE))
            _, _, photo, _ = golden(FACE, "photo")
            c.invoke("face", photo)
            pending = [c.invoke_async("face", photo) for _ in range(4)]
            d.kill()
            outcomes = []
            for p in pending:   # each either made it before the kill or fails cleanly
                try:
                    p.result()
                    outcomes.append("ok")
                except arenad.ArenadConnectionError as e:
                    self.assertEqual(e.code, "ECONN")
                    outcomes.append("ECONN")
            self.assertIn("ECONN", outcomes + [self._next_call_error(c)])
            with self.assertRaises(arenad.ArenadConnectionError) as cm:
                c.ping()
            self.assertEqual(cm.exception.code, "ECONN")
            c.close()
        finally:
            d.kill()

    @staticmethod
    def _next_call_error(c):
        try:
            c.ping()
            return "ok"
        except arenad.ArenadConnectionError as e:
            return e.code

    def test_sigterm_answers_accepted_invokes_then_closes(self):
        extra = ()
        if WRAP:
            # Under qemu-aarch64 three invokes can outlast the default drain_timeout_ms (5 s).
            cfg_dir = tempfile.mkdtemp(prefix="arenad-py-cfg-")
            self.addCleanup(shutil.rmtree, cfg_dir, True)
            cfg = os.path.join(cfg_dir, "arenad.json")
            with open(cfg, "w") as f:
                f.write('{"models": [], "drain_timeout_ms": 600000}\n')
            extra = ("--config", cfg)
        d = Daemon(extra=extra)
        try:
            c = arenad.Client(d.socket, timeout=60)
            c.load("face", model_path(FACE))
            _, _, photo, photo_out = golden(FACE, "photo")
            pending = [c.invoke_async("face", photo) for _ in range(3)]
            self.assertTrue(c.ping().version)   # the daemon has read all three invokes
            d.proc.send_signal(signal.SIGTERM)
            for p in pending:   # drained: accepted invokes are answered before the close
                self.assertEqual([golden_mismatches(g, w) for g, w in zip(p.result(), photo_out)], [0, 0])
            self.assertEqual(d.wait(), 0)
            with self.assertRaises(arenad.ArenadConnectionError) as cm:
                c.ping()
            self.assertRegex(str(cm.exception), re.escape(d.socket))
            c.close()
        finally:
            d.kill()


class Example(unittest.TestCase):
    """examples/detect_and_classify.py on the astronaut photograph (Debian's python3-imageio): the
    module's daemon has "face" and "hand" loaded; the example uses them and, with --load, loads the
    other model of each pair from --models (and unloads it at the end)."""

    def run_example(self, *args, models=MODELS, photo=None):
        photo = photo or "/usr/lib/python3/dist-packages/imageio/resources/images/astronaut.png"
        if not os.path.exists(photo):
            self.skipTest(f"{photo} missing (python3-imageio)")
        r = subprocess.run([sys.executable, os.path.join(SRC, "examples", "detect_and_classify.py"), "--socket",
                            DAEMON.socket, "--load", "--models", models, *args, photo], capture_output=True, text=True,
                           timeout=300)
        return r

    def test_people_finds_the_face_and_labels_it_a_person(self):
        r = self.run_example()   # --detector face (loaded) --classifier selfie (loaded by the example)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertNotIn("loaded face", out)
        self.assertIn("loaded selfie", out)
        m = re.search(r"detection 1: face score (\d\.\d+), box x (\d+)\.\.(\d+), y (\d+)\.\.(\d+) px", out)
        self.assertIsNotNone(m, out)
        self.assertGreaterEqual(float(m.group(1)), 0.8)   # LiteRT: 0.92 on this photo
        x0, x1, y0, y1 = map(int, m.group(2, 3, 4, 5))
        self.assertTrue(150 <= x0 < x1 <= 300 and 60 <= y0 < y1 <= 200, out)   # the astronaut's face
        self.assertIn("detection 1: label: person", out)
        with arenad.Client(DAEMON.socket) as c:
            names = [m.name for m in c.models()]
        self.assertNotIn("selfie", names)   # unloaded again
        self.assertIn("face", names)        # not the example's to unload

    def test_quant_detects_the_cat_and_classifies_it(self):
        if not os.path.isdir(MODELS_Q):
            self.skipTest(f"{MODELS_Q} absent")
        r = self.run_example("--detector", "ssd_q", "--classifier", "mnv2_q", models=MODELS_Q,
                             photo="/usr/lib/python3/dist-packages/imageio/resources/images/chelsea.png")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"detection 1: cat score 0\.6\d\d", r.stdout)
        m = re.search(r"detection 1: label: (.*)", r.stdout)
        self.assertIsNotNone(m, r.stdout)
        self.assertIn("cat", m.group(1), r.stdout)

    def test_hands_reports_no_palm_and_no_hand(self):
        r = self.run_example("--detector", "palm", "--classifier", "hand")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("palm: 0 palm(s) with score >= 0.5", r.stdout)
        self.assertIn("label: no hand", r.stdout)

    def test_not_a_detector_is_named(self):
        r = self.run_example("--detector", "hand", "--classifier", "face")
        self.assertEqual(r.returncode, 2)
        self.assertIn("model 'hand' (hand_landmark_lite.tflite) is not a detector this example reads", r.stderr)


class ContextManager(unittest.TestCase):
    def test_with_closes_the_connection(self):
        with arenad.Client(DAEMON.socket) as c:
            self.assertTrue(c.ping().version)
        with self.assertRaises(arenad.ArenadConnectionError):
            c.ping()
        c.close()   # idempotent


class _GeneratedModel(unittest.TestCase):
    """A class whose tests share one client and one generated model of INT_DIR (MODEL as NAME),
    loaded once and unloaded after."""
    NAME = MODEL = ""

    @classmethod
    def setUpClass(cls):
        cls.c = arenad.Client(DAEMON.socket, timeout=60)
        cls.info = cls.c.load(cls.NAME, os.path.join(INT_DIR, cls.MODEL))

    @classmethod
    def tearDownClass(cls):
        cls.c.unload(cls.NAME)
        cls.c.close()


class ResizableInput(_GeneratedModel):
    """The resize model (tests/ar_test_model.h: x [1,4,4,3] with shape_signature [-1,4,4,3] ->
    y [batch, 8]): resize_input changes the batch and the model's described shapes; a batch-4
    invoke gives, row by row, what four batch-1 invokes of the same items give; a fixed dim is
    ESHAPE; back at batch 1 the pool's used bytes return."""
    NAME, MODEL = "batch", "batch.tflite"

    def test_resize_input_changes_the_batch(self):
        self.assertEqual(self.info.inputs[0].shape, (1, 4, 4, 3))
        used0 = self.c.stats()["pool"]["used_bytes"]
        rng = np.random.default_rng(5)
        items = rng.uniform(-2, 2, size=(4, 4, 4, 3)).astype(np.float32)
        singles = [self.c.invoke("batch", [items[k:k + 1]])[0] for k in range(4)]
        self.assertEqual(singles[0].shape, (1, 8))
        info = self.c.resize_input("batch", "x", [4, 4, 4, 3])
        self.assertEqual(info.inputs[0].shape, (4, 4, 4, 3))
        self.assertEqual(info.outputs[0].shape, (4, 8))
        self.assertGreater(info.arena_bytes, self.info.arena_bytes)
        y = self.c.invoke("batch", [items])[0]
        self.assertEqual(y.shape, (4, 8))
        for k in range(4):
            np.testing.assert_array_equal(y[k], singles[k][0])
        with self.assertRaises(arenad.ArenadError) as e:
            self.c.resize_input("batch", 0, [4, 5, 4, 3])
        self.assertEqual(e.exception.code, "ESHAPE")
        self.assertIn("dim 1 is 5, but the model fixes it at 4", str(e.exception))
        with self.assertRaises(arenad.ArenadError) as e:
            self.c.resize_input("batch", "nope", [1, 4, 4, 3])
        self.assertEqual(e.exception.code, "EINVAL")
        back = self.c.resize_input("batch", 0, [1, 4, 4, 3])
        self.assertEqual(back.arena_bytes, self.info.arena_bytes)
        self.assertEqual(self.c.stats()["pool"]["used_bytes"], used0)


class IntegerTensors(_GeneratedModel):
    """uint8/int8 (quantized), int32, int64 and bool inputs and outputs: numpy dtypes both ways,
    the quantization the daemon reports, dequantize/quantize, and the daemon's dtype/size checks."""
    NAME, MODEL = "ints", "int_io.tflite"

    def test_descriptions_carry_dtypes_and_quantization(self):
        want = [np.uint8, np.int8, np.int32, np.int64, np.bool_]
        self.assertEqual([t.dtype for t in self.info.inputs], [np.dtype(d) for d in want])
        self.assertEqual([t.dtype for t in self.info.outputs], [np.dtype(d) for d in want])
        q = self.info.inputs[0].quantization
        self.assertEqual((q.scale.tolist(), q.zero_point.tolist()), ([0.5], [10]))
        q = self.info.inputs[1].quantization
        self.assertEqual((q.scale.tolist(), q.zero_point.tolist()), ([0.25], [-3]))
        q = self.info.outputs[1].quantization
        self.assertEqual((q.scale.tolist(), q.zero_point.tolist(), q.axis), ([0.5, 1.0, 2.0], [0, 1, -1], 1))
        self.assertIsNone(self.info.inputs[2].quantization)
        self.assertIsNone(self.info.outputs[4].quantization)

    def test_round_trip_every_dtype_and_dequantize(self):
        ins = {"u8_in": np.array([[0, 10, 11, 255]], np.uint8),
               "i8_in": np.array([[-128, -3, 0, 1, 2, 127]], np.int8),
               "i32_in": np.array([-7, 0, 2147483647], np.int32),
               "i64_in": np.array([-5000000000, 6000000000], np.int64),
               "b_in": np.array([True, False, False, True])}
        r = self.c.invoke("ints", ins)
        self.assertEqual(r.names, ["u8_out", "i8_out", "i32_out", "i64_out", "b_out"])
        for (k, a), got in zip(ins.items(), r):
            self.assertEqual(got.dtype, a.dtype, k)
            np.testing.assert_array_equal(got.reshape(-1), a.reshape(-1))
        self.assertEqual(r[1].shape, (2, 3))
        np.testing.assert_array_equal(r.real("u8_out"), np.array([-5, 0, 0.5, 122.5], np.float32))
        # Per-axis along dim 1: column k has (scale, zero point) (.5, 0), (1, 1), (2, -1).
        np.testing.assert_array_equal(r.real(1), np.array([[-64, -4, 2], [0.5, 1, 256]], np.float32))
        self.assertEqual(r.real("i32_out").dtype, np.int32)
        q = r.quantization("u8_out")
        np.testing.assert_array_equal(q.quantize([-5.0, 0.25, -0.25, 200.0], np.uint8), [0, 11, 9, 255])

    def test_arenactl_invoke_dequantizes_and_prints_top_classes(self):
        arrays = [np.array([[0, 10, 11, 255]], np.uint8), np.array([[-128, -3, 0, 1, 2, 127]], np.int8),
                  np.array([-7, 0, 9], np.int32), np.array([1, 2], np.int64), np.array([1, 0, 0, 1], np.bool_)]
        files = []
        for i, a in enumerate(arrays):
            files.append(os.path.join(INT_DIR, f"in_{i}.bin"))
            a.tofile(files[-1])
        labels = os.path.join(INT_DIR, "labels.txt")
        with open(labels, "w") as f:
            f.write("zero\none\ntwo\nthree")
        out = subprocess.run([*WRAP, ARENACTL, "-s", DAEMON.socket, "invoke", "ints", "--input", *files, "--labels", labels,
                              "--top", "2", "--output-index", "0"], capture_output=True, text=True, timeout=60)
        for f in files + [labels]:
            os.unlink(f)
        self.assertEqual(out.returncode, 0, out.stderr)
        # u8_out: (q - 10) * .5 = -5, 0, .5, 122.5.
        self.assertRegex(out.stdout, r"output 0 u8_out +\[4\] +min -5 +max 122\.5 +mean 29\.5 +\(uint8, scale 0\.5 zero point 10\)")
        self.assertIn("  top 1: class 3 (q 255) 122.5000 three\n  top 2: class 2 (q 11) 0.5000 two\n", out.stdout)

    def test_wrong_dtype_or_size_is_eshape(self):
        good = [np.zeros((1, 4), np.uint8), np.zeros((1, 6), np.int8), np.zeros(3, np.int32),
                np.zeros(2, np.int64), np.zeros(4, np.bool_)]
        for i, bad, text in ((0, np.zeros((1, 4), np.float32), "input 0 (u8_in): dtype FLOAT32 (0), the model wants UINT8"),
                             (3, np.zeros(2, np.int32), "input 3 (i64_in): dtype INT32 (2), the model wants INT64"),
                             (4, np.zeros(4, np.uint8), "input 4 (b_in): dtype UINT8 (3), the model wants BOOL")):
            args = list(good)
            args[i] = bad
            with self.subTest(input=i), self.assertRaises(arenad.ArenadError) as cm:
                self.c.invoke("ints", args)
            self.assertEqual(cm.exception.code, "ESHAPE")
            self.assertIn(text, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
