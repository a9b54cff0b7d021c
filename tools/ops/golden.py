#!/usr/bin/python3
"""golden.py - write the single-operator test models and their LiteRT goldens.

    tools/ops/golden.py [--only REGEX] [--ref DIR] [--native PATH] [--out DIR] [--list] [--no-ref]

For every case in tools/ops/cases/*.py (each module exports CASES, a list of oplib.Case) it writes
<out>/<case>/model.tflite (the model arenad runs), input_<i>.bin (raw little-endian, one per graph
input, in the model's input order) and output_<j>.bin (the golden, in the model's output dtype),
then rewrites <out>/INDEX.tsv (one row per case). Goldens come from LiteRT.js (bench/ref's
run_ref.mjs, set up with `npm ci` in a temporary folder unless --ref names a ready one) run on the
case's LiteRT form (oplib.ref_model_bytes: CASTs around int64/bool graph inputs and outputs);
cases marked golden='native' run model.tflite itself through native TFLite 2.19's builtin kernels
(--native, default ../shared/ref/native/tflite_run beside the repository; x86-64) - the reference
for integer kernels, whose rounding LiteRT.js's XNNPACK does not match; cases marked golden='hand' take their outputs from the case table instead. The output shape and
dtype LiteRT reports must equal the ones the case declares (the model stores them).

--only REGEX regenerates the matching cases and keeps the others' files and INDEX rows.
--no-ref writes models and inputs only (golden files of 'litert' cases are left as they are).
Default --out: tests/golden/ops. Needs python3-flatbuffers; node + npm for the goldens.
"""
import argparse
import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import oplib  # noqa: E402

INDEX_HEADER = ('# Single-operator models: one folder per case with model.tflite, input_<i>.bin, '
                'output_<j>.bin.\n'
                '# Written by tools/ops/golden.py from tools/ops/cases/*.py; do not edit by hand.\n'
                '# golden: litert = LiteRT.js (@litertjs/core, bench/ref) output; native = native '
                'TFLite 2.19 builtin kernels (tflite_run); hand = values from the case table.\n'
                '# case\top\tversion\tgolden\tinputs\toutputs\tnote\n')


def load_cases():
    cases = []
    for path in sorted(glob.glob(os.path.join(HERE, 'cases', '*.py'))):
        spec = importlib.util.spec_from_file_location('cases_' + os.path.basename(path)[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        cases.extend(mod.CASES)
    seen = set()
    for c in cases:
        if c.name in seen:
            sys.exit(f'golden.py: case {c.name} defined twice')
        seen.add(c.name)
    return cases


def setup_ref(ref_src):
    scratch = tempfile.mkdtemp(prefix='ar-ops-ref-')
    dst = os.path.join(scratch, 'ref')
    shutil.copytree(ref_src, dst)
    subprocess.run(['npm', 'ci', '--no-audit', '--no-fund', '--silent'], cwd=dst, check=True,
                   stdout=subprocess.DEVNULL)
    return dst, scratch


def index_row(c):
    ins = ' '.join(t.desc() if t is not None else '-' for t in c.inputs)
    outs = ' '.join(t.desc() for t in c.outputs)
    return '\t'.join([c.name, c.op, str(c.version), c.golden, ins, outs, c.note]) + '\n'


def run_litert(c, values, ref_dir, work):
    """Run the case's LiteRT form; returns the outputs as lists of values in the case's dtypes."""
    os.makedirs(work, exist_ok=True)
    ref_model = os.path.join(work, 'ref.tflite')
    with open(ref_model, 'wb') as f:
        f.write(oplib.ref_model_bytes(c, values))
    args = ['node', os.path.join(ref_dir, 'run_ref.mjs'), ref_model, '--out', work,
            '--runs', '1', '--warmup', '0', '--quiet']
    for i in c.graph_inputs():
        t = c.inputs[i]
        js = t.dtype if t.dtype in oplib.JS_DTYPES else 'int32'
        p = os.path.join(work, f'ref_input_{i}.bin')
        if js != t.dtype and any(not -2**31 <= int(v) < 2**31 for v in values[i]):
            raise RuntimeError(f'{c.name}: input {i} ({t.dtype}) has values outside int32, which the '
                               'LiteRT form passes through an int32 input + CAST')
        with open(p, 'wb') as f:
            f.write(oplib.pack(js, [int(v) for v in values[i]] if js == 'int32' else values[i]))
        args += ['--input', p]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f'LiteRT failed on {c.name}: {r.stderr.strip()[-600:]}')
    summary = json.loads(r.stdout)
    outs = []
    for j, t in enumerate(c.outputs):
        info = summary['outputs'][j]
        js = t.dtype if t.dtype in oplib.JS_DTYPES else 'int32'
        if info['shape'] != t.shape or info['dtype'] != js:
            raise RuntimeError(f"{c.name}: output {j}: LiteRT gives {info['dtype']}{info['shape']}, "
                               f'the case declares {js}{t.shape}')
        with open(os.path.join(work, f'output_{j}.bin'), 'rb') as f:
            vals = oplib.unpack(js, f.read())
        if t.dtype == 'bool':
            vals = [v != 0 for v in vals]
        outs.append(vals)
    return outs


NATIVE_DTYPES = {'FLOAT32': 'float32', 'INT32': 'int32', 'INT64': 'int64', 'UINT8': 'uint8',
                 'INT8': 'int8', 'INT16': 'int16', 'BOOL': 'bool', 'FLOAT16': 'float16'}


def run_native(c, d, runner, work):
    """Run <d>/model.tflite (the case's own model) through tflite_run; returns the outputs as lists
    of values. The output dtypes and shapes it reports must be the declared ones."""
    os.makedirs(work, exist_ok=True)
    model = os.path.join(d, 'model.tflite')
    r = subprocess.run([runner, model, '--info'], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f'native TFLite cannot load {c.name}: {(r.stderr or r.stdout).strip()[-600:]}')
    info = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    outs_info = {e['output']: e for e in info if 'output' in e}
    args = [runner, model, '--outdir', work]
    for k in range(len(c.graph_inputs())):
        args += ['--input', os.path.join(d, f'input_{k}.bin')]
    if not c.graph_inputs():
        args += ['--zero']
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f'native TFLite failed on {c.name} (exit {r.returncode}): '
                           f'{(r.stderr or r.stdout).strip()[-600:]}')
    outs = []
    for j, t in enumerate(c.outputs):
        e = outs_info.get(j)
        got = NATIVE_DTYPES.get(e['dtype'], e['dtype']) if e else None
        if e is None or got != t.dtype or (not c.shapeless_outputs and e['shape'] != t.shape):
            raise RuntimeError(f"{c.name}: output {j}: native TFLite gives {got}{e['shape'] if e else ''}, "
                               f'the case declares {t.dtype}{t.shape}')
        with open(os.path.join(work, f'output_{j}.bin'), 'rb') as f:
            vals = oplib.unpack(t.dtype, f.read())
        if t.dtype == 'bool':
            vals = [v != 0 for v in vals]
        outs.append(vals)
    return outs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--only', help='regenerate only cases whose name matches this regex')
    ap.add_argument('--ref', help='a ready reference runner folder (run_ref.mjs + node_modules)')
    ap.add_argument('--native', default=os.path.join(os.path.dirname(oplib.ROOT), 'shared', 'ref', 'native',
                                                      'tflite_run'),
                    help='native TFLite runner for golden=\'native\' cases')
    ap.add_argument('--out', default=os.path.join(oplib.ROOT, 'tests', 'golden', 'ops'))
    ap.add_argument('--list', action='store_true', help='print the cases and exit')
    ap.add_argument('--no-ref', action='store_true', help='models and inputs only')
    a = ap.parse_args()

    cases = load_cases()
    if a.list:
        for c in cases:
            sys.stdout.write(index_row(c))
        return 0
    todo = [c for c in cases if not a.only or re.search(a.only, c.name)]
    ref_dir, scratch = a.ref, None
    if not a.no_ref and not ref_dir and any(c.golden == 'litert' for c in todo):
        ref_dir, scratch = setup_ref(os.path.join(oplib.ROOT, 'bench', 'ref'))
    work_root = tempfile.mkdtemp(prefix='ar-ops-work-')
    failed = []
    try:
        for c in todo:
            values = c.input_values()
            d = os.path.join(a.out, c.name)
            if os.path.isdir(d):
                shutil.rmtree(d) if not a.no_ref else None
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, 'model.tflite'), 'wb') as f:
                f.write(oplib.model_bytes(c, values))
            for k, i in enumerate(c.graph_inputs()):
                with open(os.path.join(d, f'input_{k}.bin'), 'wb') as f:
                    f.write(oplib.pack(c.inputs[i].dtype, values[i]))
            if c.golden == 'hand':
                outs = c.expect
            elif a.no_ref:
                continue
            else:
                try:
                    if c.golden == 'native':
                        outs = run_native(c, d, a.native, os.path.join(work_root, c.name))
                    else:
                        outs = run_litert(c, values, ref_dir, os.path.join(work_root, c.name))
                except RuntimeError as e:
                    failed.append(str(e))
                    shutil.rmtree(d)
                    continue
            for j, t in enumerate(c.outputs):
                assert len(outs[j]) == t.count(), f'{c.name}: output {j} has {len(outs[j])} values'
                with open(os.path.join(d, f'output_{j}.bin'), 'wb') as f:
                    f.write(oplib.pack(t.dtype, outs[j]))
            print(f'{c.name}: {c.op} {c.golden}')
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)

    # INDEX: every case whose folder exists, in table order.
    with open(os.path.join(a.out, 'INDEX.tsv'), 'w') as f:
        f.write(INDEX_HEADER)
        for c in cases:
            if os.path.isfile(os.path.join(a.out, c.name, 'model.tflite')):
                f.write(index_row(c))
    known = {c.name for c in cases}
    stale = [n for n in os.listdir(a.out) if os.path.isdir(os.path.join(a.out, n)) and n not in known]
    for n in stale:
        print(f'golden.py: {a.out}/{n} belongs to no case (remove it with git rm -r)', file=sys.stderr)
    for e in failed:
        print(f'golden.py: {e}', file=sys.stderr)
    if failed:
        print('golden.py: mark such cases golden="hand" with expect= values and say why in note=',
              file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
