#!/usr/bin/python3
"""tflite_versions.py - which versions of each BuiltinOperator code TFLite's BuiltinOpResolver
registers, measured on the native runner (../shared/ref/native/tflite_run, TFLite 2.19): for every
code and version 1..15 a one-operator model (float32 [1] -> [1]) is written and resolved with
`tflite_run MODEL --info`; "Didn't find op for builtin opcode" means the version is not registered
(resolution comes before any Prepare, so the dtypes do not matter). Prints "code: [versions]" lines;
the versions column of data/tflite_ops.tsv is these ranges.

    /usr/bin/python3 tools/ops/tflite_versions.py [--runner PATH] [--max-code N]
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oplib  # noqa: E402


def registered(runner, path, code, version):
    name = 'CODE_%d' % code
    oplib.BUILTIN[name] = code
    model = oplib.build_model([(name, False, version)],
                              [('x', 'float32', [1], None), ('y', 'float32', [1], None)],
                              [(0, [0], [1], None, None)], [0], [1], 'version probe')
    with open(path, 'wb') as f:
        f.write(model)
    r = subprocess.run([runner, path, '--info'], capture_output=True, text=True)
    return "Didn't find op for builtin opcode" not in r.stdout + r.stderr


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser()
    ap.add_argument('--runner', default=os.path.join(os.path.dirname(root), 'shared', 'ref', 'native', 'tflite_run'))
    ap.add_argument('--max-code', type=int, default=209)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'probe.tflite')
        for code in range(args.max_code + 1):
            if code == oplib.BUILTIN['CUSTOM']:
                continue
            print('%d: %s' % (code, [v for v in range(1, 16) if registered(args.runner, path, code, v)]), flush=True)


if __name__ == '__main__':
    main()
