"""Operators with more inputs or outputs than the 16 arenad once accepted (issue 27: "no fixed
limit on operator inputs/outputs"): CONCATENATION of 40 inputs, SPLIT into 128, UNPACK into 32,
PACK of 24. The ops only move values, so the inputs are hand-made (distinct values, each telling
where it came from) and the goldens computed here."""
from oplib import Case, T

CASES = []


def _concat_many(n, rows, cols):
    # input k holds k*1000 + r*cols + c; concatenated along axis 1
    ins = [[k * 1000.0 + r * cols + c for r in range(rows) for c in range(cols)] for k in range(n)]
    out = [ins[k][r * cols + c] for r in range(rows) for k in range(n) for c in range(cols)]
    return Case(f'concat_{n}_inputs_axis1', 'CONCATENATION',
                [T('float32', [rows, cols], data=ins[k]) for k in range(n)],
                [T('float32', [rows, n * cols])], options=('ConcatenationOptions', {'axis': 1}),
                golden='hand', expect=[out], note='more than 16 inputs; values only move')


def _split_many(n, rows, each):
    cols = n * each
    x = [float(r * cols + c) for r in range(rows) for c in range(cols)]
    outs = [[x[r * cols + k * each + e] for r in range(rows) for e in range(each)] for k in range(n)]
    return Case(f'split_{n}_outputs_axis1', 'SPLIT',
                [T('int32', [], data=[1], const=True), T('float32', [rows, cols], data=x)],
                [T('float32', [rows, each])] * n, options=('SplitOptions', {'num_splits': n}),
                golden='hand', expect=outs, note='more than 16 outputs; values only move')


def _unpack_many(n, inner):
    x = [float(k * 10 + e) for k in range(n) for e in range(inner)]
    outs = [x[k * inner:(k + 1) * inner] for k in range(n)]
    return Case(f'unpack_{n}_outputs_axis0', 'UNPACK', [T('float32', [n, inner], data=x)],
                [T('float32', [inner])] * n, options=('UnpackOptions', {'num': n, 'axis': 0}),
                golden='hand', expect=outs, note='more than 16 outputs; values only move')


def _pack_many(n, inner):
    ins = [[float(k * 10 + e) for e in range(inner)] for k in range(n)]
    out = [ins[k][e] for e in range(inner) for k in range(n)]   # axis 1: [inner, n]
    return Case(f'pack_{n}_inputs_axis1', 'PACK', [T('float32', [inner], data=ins[k]) for k in range(n)],
                [T('float32', [inner, n])], options=('PackOptions', {'values_count': n, 'axis': 1}),
                golden='hand', expect=[out], note='more than 16 inputs; values only move')


CASES += [_concat_many(40, 2, 3), _split_many(128, 2, 2), _unpack_many(32, 3), _pack_many(24, 2)]
