#!/usr/bin/env python3
"""mk_stream_goldens.py - stream goldens of the synthetic recurrent models (issue 27).

    tools/mk_stream_goldens.py BUILD_DIR [NAME ...]

Writes the models with BUILD_DIR/tests/mk_stream_models into a temporary folder, gives each a
seeded input stream (float32 uniform [-1, 1), int8/uint8 full range, int16 +-4096: the rules of
../shared/golden_state), runs native TFLite's builtin kernels on ONE interpreter over it
(../shared/ref/native/tflite_run --steps, ResetVariableTensors() before the reset_at steps) and
keeps tests/golden/streams/<name>/{meta.json, steps/<k>/input_<i>.bin, steps/<k>/output_<j>.bin},
the layout tests/ar_test_stream.h reads. The model bytes are rebuilt by the suites, never stored.
"""
import json, os, random, shutil, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
RUNNER = os.path.join(SRC, "..", "shared", "ref", "native", "tflite_run")
STEPS, RESET_AT = 6, [3]

def values(dtype, n, rnd):
    if dtype == "FLOAT32":
        return struct.pack("<%df" % n, *[rnd.uniform(-1, 1) for _ in range(n)])
    if dtype == "INT8":
        return struct.pack("<%db" % n, *[rnd.randint(-128, 127) for _ in range(n)])
    if dtype == "UINT8":
        return bytes(rnd.randint(0, 255) for _ in range(n))
    if dtype == "INT16":
        return struct.pack("<%dh" % n, *[rnd.randint(-4096, 4096) for _ in range(n)])
    raise SystemExit("no input rule for dtype " + dtype)

def main():
    build = sys.argv[1]
    only = set(sys.argv[2:])
    tmp = tempfile.mkdtemp()
    try:
        subprocess.run([os.path.join(build, "tests", "mk_stream_models"), tmp], check=True, stdout=subprocess.DEVNULL)
        for f in sorted(os.listdir(tmp)):
            name = f[:-len(".tflite")]
            if only and name not in only:
                continue
            model = os.path.join(tmp, f)
            info = [json.loads(l) for l in subprocess.run([RUNNER, model, "--info"], check=True,
                                                          capture_output=True, text=True).stdout.splitlines()]
            ins = [d for d in info if "input" in d]
            outs = [d for d in info if "output" in d]
            out = os.path.join(SRC, "tests", "golden", "streams", name)
            shutil.rmtree(out, ignore_errors=True)
            steps = os.path.join(out, "steps")
            rnd = random.Random(name)
            for k in range(STEPS):
                os.makedirs(os.path.join(steps, str(k)))
                for d in ins:
                    n = d["bytes"] // {"FLOAT32": 4, "INT16": 2}.get(d["dtype"], 1)
                    with open(os.path.join(steps, str(k), "input_%d.bin" % d["input"]), "wb") as fh:
                        fh.write(values(d["dtype"], n, rnd))
            cmd = [RUNNER, model, "--steps", str(STEPS), "--indir", steps, "--outdir", steps]
            for r in RESET_AT:
                cmd += ["--reset-at", str(r)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            meta = {"model": f, "steps": STEPS, "reset_at": RESET_AT,
                    "reference": "native TFLite 2.19.0 builtin kernels (tflite_run --steps), one interpreter, "
                                 "ResetVariableTensors() before the steps in reset_at",
                    "inputs": ins, "outputs": outs}
            with open(os.path.join(out, "meta.json"), "w") as fh:
                json.dump(meta, fh, indent=1)
                fh.write("\n")
            print(name, STEPS, "steps")
    finally:
        shutil.rmtree(tmp)

main()
