#!/usr/bin/python3
"""bench/py_invoke.py - what the Python client (clients/python/arenad) costs per invoke, next to
libarenaclient (bench/ipc).

One model (default face_detection_short_range) on its golden photo input, three ways in alternating
blocks of 10 invokes on one connection (so all see the same machine state):
  bytes       c.invoke(model, x): the input's bytes in the request, the outputs in the reply (the
              result's arrays are views of the reply's frame);
  bytes+copy  the same with copy=True (arrays that own their memory: one copy more per output);
  shm         the input and the outputs in a registered SharedBuffer (no tensor bytes on the socket).
Per invoke the overhead is the round trip (perf_counter around the call) minus the daemon's
invoke_us, as bench/ipc measures it; printed: invokes/s (invokes over the summed round trips) and the
overhead's median and p99 in microseconds. Then bench/ipc --only off (client busy poll 0, as here)
measures the C client against the same daemon, and the difference of the medians is printed.

Starts its own arenad ($AR_BUILDDIR/arenad, else build/) with the defaults unless --socket names a
running one (which must allow loading from the models folder). Run it under `/work/notes/cpu bench`.

  PYTHONPATH=clients/python:build/clients/python bench/py_invoke.py [--invokes N] [--model STEM]
      [--socket PATH] [--no-c] [--json]
"""
import argparse
import inspect
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
from ardaemon import BUILD, Daemon, golden, model_path  # noqa: E402

import arenad  # noqa: E402


def stats(rts, ovs):
    ovs = np.sort(np.asarray(ovs))
    return {"invokes_per_s": len(rts) / (sum(rts) / 1e6), "overhead_us_median": float(np.median(ovs)),
            "overhead_us_p99": float(ovs[min(len(ovs) - 1, int(0.99 * len(ovs)))]),
            "round_trip_us_median": float(np.median(rts))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--invokes", type=int, default=2000, help="per way (default 2000)")
    ap.add_argument("--model", default="face_detection_short_range")
    ap.add_argument("--socket")
    ap.add_argument("--no-c", action="store_true", help="skip bench/ipc")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    daemon = None if a.socket else Daemon(pool_bytes="64M")
    sock = a.socket or daemon.socket
    try:
        _, _, inputs, _ = golden(a.model, "photo")
        x = np.ascontiguousarray(inputs[0])
        c = arenad.Client(sock, timeout=60, busy_poll_us=0)
        info = c.load("pybench", model_path(a.model))
        has_copy = "copy" in inspect.signature(c.invoke).parameters   # an older client has no copy=
        nbytes = [int(np.prod(t.shape)) * t.dtype.itemsize for t in info.outputs]
        buf = c.register_buffer(x.nbytes + sum(-(-n // 64) * 64 for n in nbytes))
        xs = buf.array(0, x.shape, x.dtype)
        xs[...] = x
        outs, off = [], -(-x.nbytes // 64) * 64
        for t, n in zip(info.outputs, nbytes):
            outs.append(buf.array(off, t.shape, t.dtype))
            off += -(-n // 64) * 64
        ways = {"bytes": lambda: c.invoke("pybench", x),
                "shm": lambda: c.invoke("pybench", xs, outputs=outs)}
        if has_copy:
            ways["bytes+copy"] = lambda: c.invoke("pybench", x, copy=True)
        for f in ways.values():   # warm up
            for _ in range(20):
                f()
        rts = {k: [] for k in ways}
        ovs = {k: [] for k in ways}
        clock = time.perf_counter_ns
        for _ in range(-(-a.invokes // 10)):
            for k, f in ways.items():
                for _ in range(10):
                    t0 = clock()
                    r = f()
                    rt = (clock() - t0) / 1000
                    rts[k].append(rt)
                    ovs[k].append(rt - r.invoke_us)
        res = {"model": a.model, "client": os.path.dirname(os.path.dirname(arenad.__file__)),
               "python": {k: stats(rts[k], ovs[k]) for k in ways}}
        buf.release()
        c.unload("pybench")
        c.close()
        if not a.no_c:
            ipc = os.path.join(BUILD, "bench", "ipc")
            p = subprocess.run([ipc, "--socket", sock, "--only", "off", "--model", a.model, "--invokes",
                                str(a.invokes), "--json"], capture_output=True, text=True)
            if p.returncode == 0:
                cj = json.loads(p.stdout[p.stdout.index("{"):])
                res["c"] = {"bytes": {"overhead_us_median": cj["overhead_us_median"],
                                      "overhead_us_p99": cj["overhead_us_p99"]},
                            "shm": {"overhead_us_median": cj["shm_overhead_us_median"],
                                    "overhead_us_p99": cj["shm_overhead_us_p99"]}}
            else:
                print(f"bench/ipc failed ({p.returncode}): {p.stderr.strip()[:300]}", file=sys.stderr)
    finally:
        if daemon is not None:
            daemon.stop()
    if a.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"bench/py_invoke: {a.model}, {a.invokes} invokes per way, client busy poll 0 (client {res['client']})")
    print(f"{'':12} {'invokes/s':>10} {'overhead median':>16} {'p99 (us)':>9} {'C median':>9} {'Python - C':>11}")
    for k, s in res["python"].items():
        cm = res.get("c", {}).get(k.split("+")[0], {}).get("overhead_us_median")
        extra = f" {cm:9.1f} {s['overhead_us_median'] - cm:11.1f}" if cm is not None else ""
        print(f"{k:12} {s['invokes_per_s']:10.0f} {s['overhead_us_median']:16.1f} {s['overhead_us_p99']:9.0f}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
