"""Cases for kernels/index_ops.c: TOPK_V2 (ranks 1-5, ties, k = 0 / 1 / the whole row, int32,
uint8 and int64 values), REVERSE_V2 (each axis of ranks 1-5, negative and several axes), SHAPE
(int32 / int64, scalars and 0-size dims), FILL (int32 / int64 dims, each value dtype, a 0 dim),
RANGE (int32 / int64 / float32, negative deltas, a non-integral step), CUMSUM (every axis, exclusive,
reverse, int32 / int64) and ONE_HOT (every axis, out-of-range indices, int64 indices, each value
dtype)."""
from oplib import Case, T, shape_tag


def i32(vals, shape=None):
    return T('int32', [len(vals)] if shape is None else shape, data=list(vals), const=True)


def i64(vals, shape=None):
    return T('int64', [len(vals)] if shape is None else shape, data=list(vals), const=True)


def scalar(dtype, v):
    return T(dtype, [], data=[v], const=True)


CASES = []

# LiteRT.js hands back garbage for an int32 / float32 output that TFLite computes at prepare (SHAPE,
# and RANGE / FILL of constants, which it makes persistent tensors): those goldens are native.
PREPARED = 'output computed at prepare: LiteRT.js reads it wrong'

# ---- TOPK_V2 ----


def topk(shape, k, dtype='float32', name=None, data=None, lo=None, hi=None, version=1):
    out = list(shape[:-1]) + [k]
    return Case(name or f'topk_v2_{shape_tag(shape)}_k{k}' + ('' if dtype == 'float32' else '_' + dtype),
                'TOPK_V2', [T(dtype, shape, data=data, lo=lo, hi=hi), scalar('int32', k)],
                [T(dtype, out), T('int32', out)], options=('TopKV2Options', {}), version=version)


CASES += [
    topk([5], 2), topk([3, 6], 3), topk([2, 3, 7], 1), topk([2, 1, 2, 8], 8), topk([2, 1, 2, 1, 9], 4),
    topk([1], 1), topk([4, 5], 0), topk([0, 5], 2),
    topk([10], 6, name='topk_v2_ties', data=[3, 1, 3, 2, 3, 1, 0, 2, 3, 1]),
    topk([3, 7], 4, dtype='int32', lo=-5, hi=5), topk([2, 9], 3, dtype='uint8', lo=0, hi=10),
    topk([2, 5], 5, dtype='int64', lo=-1000, hi=1000),
    topk([3, 8], 3, dtype='int8', lo=-128, hi=127, version=2), topk([2, 6], 6, dtype='int16', lo=-300, hi=300, version=3),
]

# ---- REVERSE_V2 ----


def rev(shape, axes, dtype='float32', name=None, version=1):
    return Case(name or f'reverse_v2_{shape_tag(shape)}_a{"_".join(str(a).replace("-", "m") for a in axes)}'
                + ('' if dtype == 'float32' else '_' + dtype),
                'REVERSE_V2', [T(dtype, shape), i32(axes)], [T(dtype, shape)],
                options=('ReverseV2Options', {}), version=version)


CASES += [
    rev([7], [0]), rev([3, 4], [0]), rev([3, 4], [1]), rev([2, 3, 4], [1]), rev([2, 3, 4], [-1]),
    rev([2, 3, 2, 3], [2]), rev([2, 1, 3, 2, 2], [0]), rev([2, 1, 3, 2, 2], [3]), rev([1], [0]),
    rev([0, 3], [1]), rev([2, 3, 4], [1, 2]), rev([3, 4], [1], dtype='int32'),
    rev([2, 5], [1], dtype='uint8'), rev([4, 2], [0], dtype='int64'), rev([2, 3], [1], dtype='bool', version=2),
    rev([3, 4], [0], dtype='int8', version=3), rev([2, 3, 2], [2], dtype='int16'),
]

# ---- SHAPE ----
for shape in ([5], [2, 3], [2, 3, 4], [1, 2, 3, 2], [2, 1, 2, 3, 2], [], [0, 3]):
    for out in ('int32', 'int64'):
        # LiteRT.js cannot feed a 0-element input: that golden is the shape itself.
        hand = {'golden': 'hand', 'expect': [list(shape)], 'note': '0-element input'} if 0 in shape else {}
        if out == 'int32' and not hand:
            hand = {'golden': 'native', 'note': PREPARED}
        CASES.append(Case(f'shape_{shape_tag(shape)}_{out}', 'SHAPE', [T('float32', shape)],
                          [T(out, [len(shape)])], options=('ShapeOptions', {'out_type': 2 if out == 'int32' else 4}),
                          **hand))
CASES.append(Case('shape_of_int32', 'SHAPE', [T('int32', [3, 1, 2])], [T('int32', [3])],
                  options=('ShapeOptions', {'out_type': 2}), golden='native', note=PREPARED))

# ---- FILL ----


def fill(dims, value, dtype, idx=i32, name=None, version=1, const=False):
    n = 1
    for d in dims:
        n *= d
    hand = {'golden': 'native', 'note': PREPARED} if const and n else {}
    return Case(name or f'fill_{shape_tag(dims)}_{dtype}', 'FILL', [idx(dims), T(dtype, [], data=[value], const=const)],
                [T(dtype, dims)], options=('FillOptions', {}), version=version, **hand)


CASES += [
    fill([4], 1.5, 'float32'), fill([2, 3], -2.25, 'float32', idx=i64, name='fill_2x3_int64_dims'),
    fill([2, 1, 3], 7, 'int32'), fill([1, 2, 1, 2], 123456789012, 'int64', const=True),
    fill([2, 1, 2, 1, 2], True, 'bool', version=2), fill([1], 0.0, 'float32'), fill([3, 0], 1.0, 'float32'),
    fill([2, 3], -128, 'int8', version=3), fill([3, 2], -32768, 'int16', version=3),
    fill([2, 1, 3], -1.5, 'float16', version=4, const=True, name='fill_f16_2x1x3'),
    fill([4], 65504.0, 'float16', version=4, const=True, name='fill_f16_4_max'),
]

# ---- RANGE ----


def rng(start, limit, delta, dtype, name, expect_n, version=1):
    return Case(name, 'RANGE', [scalar(dtype, start), scalar(dtype, limit), scalar(dtype, delta)],
                [T(dtype, [expect_n])], options=('RangeOptions', {}), version=version,
                golden='native' if expect_n else 'litert', note=PREPARED if expect_n else '')


CASES += [
    rng(0, 10, 3, 'int32', 'range_int32', 4), rng(5, -4, -2, 'int32', 'range_int32_down', 5),
    rng(-3, 4, 1, 'int64', 'range_int64', 7, version=2), rng(0.5, 2.0, 0.1, 'float32', 'range_float', 15),
    rng(3.0, -1.0, -0.75, 'float32', 'range_float_down', 6), rng(2, 2, 1, 'int32', 'range_empty', 0),
    rng(7, 8, 5, 'int32', 'range_one', 1),
]

# ---- CUMSUM ----


def cumsum(shape, axis, dtype='float32', exclusive=False, reverse=False, name=None):
    tag = ('_x' if exclusive else '') + ('_r' if reverse else '')
    return Case(name or f'cumsum_{shape_tag(shape)}_a{str(axis).replace("-", "m")}{tag}'
                + ('' if dtype == 'float32' else '_' + dtype),
                'CUMSUM', [T(dtype, shape), scalar('int32', axis)], [T(dtype, shape)],
                options=('CumsumOptions', {'exclusive': exclusive, 'reverse': reverse}))


CASES += [
    cumsum([7], 0), cumsum([3, 4], 1), cumsum([3, 4], 0), cumsum([2, 3, 4], 1), cumsum([2, 3, 4], -1),
    cumsum([2, 3, 2, 3], 2, exclusive=True), cumsum([2, 1, 3, 2, 2], 2, reverse=True),
    cumsum([2, 1, 3, 2, 2], 4, exclusive=True, reverse=True), cumsum([1], 0), cumsum([0, 3], 1),
    cumsum([3, 5], 1, dtype="int32", reverse=True), cumsum([4, 3], 0, dtype='int64', exclusive=True),
]

# ---- ONE_HOT ----


def one_hot(shape, depth, axis, dtype='float32', on=1.0, off=0.0, idx='int32', name=None, lo=-1, hi=None):
    out = list(shape)
    a = len(shape) if axis == -1 else axis
    out.insert(a, depth)
    return Case(name or f'one_hot_{shape_tag(shape)}_d{depth}_a{str(axis).replace("-", "m")}'
                + ('' if dtype == 'float32' else '_' + dtype) + ('' if idx == 'int32' else '_' + idx),
                'ONE_HOT', [T(idx, shape, lo=lo, hi=depth if hi is None else hi), scalar('int32', depth),
                            scalar(dtype, on), scalar(dtype, off)],
                [T(dtype, out)], options=('OneHotOptions', {'axis': axis}))


CASES += [
    one_hot([5], 4, -1), one_hot([5], 4, 0), one_hot([2, 3], 3, 1), one_hot([2, 3, 2], 5, -1, on=2.5, off=-1.0),
    one_hot([2, 1, 2, 3], 2, 2), one_hot([1], 1, -1), one_hot([0, 2], 3, -1),
    one_hot([3, 4], 3, -1, dtype='int32', on=7, off=-7), one_hot([6], 6, 0, dtype='uint8', on=255, off=3),
    one_hot([2, 3], 4, -1, idx='int64'), one_hot([4], 3, -1, dtype='bool', on=True, off=False),
    one_hot([3], 2, -1, dtype='int64', on=5, off=0),
    one_hot([2, 2], 3, 0, dtype='int8', on=127, off=-128),
]
# int64 indices with every output dtype (issue 28: all forms), out-of-range and negative indices
CASES += [
    one_hot([3, 4], 5, 1, dtype='int32', on=-3, off=9, idx='int64', name='one_hot_i64_3x4_d5_a1_int32', lo=-2, hi=7),
    one_hot([2, 3, 2], 4, -1, dtype='int64', on=1 << 40, off=-5, idx='int64', name='one_hot_i64_2x3x2_d4_am1_int64'),
    one_hot([7], 6, 0, dtype='uint8', on=200, off=17, idx='int64', name='one_hot_i64_7_d6_a0_uint8'),
    one_hot([2, 1, 3], 3, 2, dtype='int8', on=-128, off=127, idx='int64', name='one_hot_i64_2x1x3_d3_a2_int8'),
    one_hot([5], 4, -1, dtype='bool', on=True, off=False, idx='int64', name='one_hot_i64_5_d4_am1_bool'),
    one_hot([2, 2, 1, 2], 3, 0, on=-0.5, off=4.25, idx='int64', name='one_hot_i64_2x2x1x2_d3_a0_float32',
            lo=-1, hi=4),
]

# Integer and bool goldens come from native TFLite's builtin kernels (golden='native'); LiteRT.js
# gives the float ones.
for _c in CASES:
    if _c.golden == 'litert' and any(t is not None and t.dtype != 'float32' for t in _c.inputs + _c.outputs):
        _c.golden = 'native'

