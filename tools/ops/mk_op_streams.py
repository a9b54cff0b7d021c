#!/usr/bin/env python3
"""Stream goldens for stateful single-operator cases (tests/check_lstm variant_streams_carry_the_state):
tests/golden/streams/op_<case>/{meta.json, steps/<k>/input_0.bin, steps/<k>/output_0.bin} from native
TFLite 2.19 (../shared/ref/native/tflite_run --steps: one interpreter, the variable tensors carried
from invoke to invoke, ResetVariableTensors() before each step in reset_at). The models are the
cases' own tests/golden/ops/<case>/model.tflite (run tools/ops/golden.py first). Inputs are float32
uniform [-1, 1), seeded by the case name, so a rerun writes the same bytes."""
import json
import os
import random
import shutil
import struct
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(os.path.dirname(ROOT), 'shared', 'ref', 'native', 'tflite_run')
STREAMS = [('usrnn_batch_major_relu', 6, [3]), ('uslstm_layer_norm_cifg_peephole', 6, [3]),
           ('lstm_step_projection_peephole', 6, [4])]

for case, steps, resets in STREAMS:
    model = os.path.join(ROOT, 'tests', 'golden', 'ops', case, 'model.tflite')
    d = os.path.join(ROOT, 'tests', 'golden', 'streams', 'op_' + case)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, 'steps'))
    info = [json.loads(l) for l in subprocess.run([RUNNER, model, '--info'], capture_output=True, text=True,
                                                  check=True).stdout.splitlines() if l.strip()]
    rng = random.Random(case)
    for k in range(steps):
        os.makedirs(os.path.join(d, 'steps', str(k)))
        for e in (e for e in info if 'input' in e):
            n = 1
            for x in e['shape']:
                n *= x
            with open(os.path.join(d, 'steps', str(k), f"input_{e['input']}.bin"), 'wb') as f:
                f.write(struct.pack(f'<{n}f', *[rng.uniform(-1, 1) for _ in range(n)]))
    cmd = [RUNNER, model, '--steps', str(steps), '--indir', os.path.join(d, 'steps'), '--outdir', os.path.join(d, 'steps')]
    for r in resets:
        cmd += ['--reset-at', str(r)]
    subprocess.run(cmd, check=True, capture_output=True)
    with open(os.path.join(d, 'meta.json'), 'w') as f:
        json.dump({'model': f'tests/golden/ops/{case}/model.tflite', 'steps': steps, 'reset_at': resets,
                   'reference': 'native TFLite 2.19.0 builtin kernels: ../shared/ref/native/tflite_run MODEL --steps '
                                '6 --indir steps --outdir steps --reset-at K (one interpreter, ResetVariableTensors() '
                                'before the steps in reset_at); inputs float32 uniform [-1,1) seeded by the case name '
                                '(tools/ops/mk_op_streams.py)'}, f, indent=1)
    print(f'{case}: {steps} steps, reset at {resets}')
