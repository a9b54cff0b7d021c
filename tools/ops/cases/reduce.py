"""Cases for kernels/reduce.c: SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD (keep_dims, negative,
repeated and multiple axes, ranks 1-5, empty reductions) and ARG_MAX / ARG_MIN (int32 and int64
outputs, axis as int32 or int64)."""
from oplib import Case, T, reduce_shape, shape_tag

# (input shape, axes, keep_dims)
REDUCE = [
    ([5], [0], False), ([3, 4], [0, 1], False), ([2, 3, 4], [1], False), ([2, 3, 4], [1], True),
    ([2, 3, 4, 5], [-1, 0], False), ([2, 3, 4, 5], [1, 2], True), ([2, 3, 4, 2, 3], [1, 3], False),
    ([2, 3, 4], [1, -2], False), ([2, 1, 3], [1], False), ([1], [0], True),
]
RANGES = {'SUM': (-1, 1), 'REDUCE_MAX': (-1, 1), 'REDUCE_MIN': (-1, 1), 'REDUCE_PROD': (0.6, 1.4)}


def axes_tag(axes):
    return '_'.join(('m' + str(-a)) if a < 0 else str(a) for a in axes)


def reduce_case(op, shape, axes, keep, dtype='float32', lo=None, hi=None, name=None, **kw):
    lo = RANGES[op][0] if lo is None else lo
    hi = RANGES[op][1] if hi is None else hi
    name = name or f"{op.lower()}_{shape_tag(shape)}_a{axes_tag(axes)}{'_keep' if keep else ''}" + \
        ('' if dtype == 'float32' else '_' + dtype)
    return Case(name, op, [T(dtype, shape, lo=lo, hi=hi), T('int32', [len(axes)], data=axes, const=True)],
                [T(dtype, reduce_shape(shape, axes, keep))], options=('ReducerOptions', {'keep_dims': keep}), **kw)


CASES = []
for op in ('SUM', 'REDUCE_MAX', 'REDUCE_MIN', 'REDUCE_PROD'):
    for shape, axes, keep in REDUCE:
        CASES.append(reduce_case(op, shape, axes, keep))
# Reductions over an empty axis: LiteRT.js cannot feed a 0-element input, the values are TFLite's
# initial values (0, lowest float, highest float, 1).
EMPTY = {'SUM': 0.0, 'REDUCE_MAX': -3.4028234663852886e38, 'REDUCE_MIN': 3.4028234663852886e38, 'REDUCE_PROD': 1.0}
for op, v in EMPTY.items():
    CASES.append(reduce_case(op, [2, 0, 3], [1], False, golden='hand', expect=[[v] * 6],
                             note='empty reduction: TFLite initial value (LiteRT.js cannot pass a 0-element input)'))
CASES += [
    reduce_case('SUM', [2, 3, 4], [2], False, dtype='int32', lo=-100, hi=100),
    reduce_case('SUM', [2, 3, 4], [0, 2], True, dtype='int64', lo=-1000, hi=1000),
    reduce_case('REDUCE_MAX', [2, 3, 4], [1], False, dtype='int32', lo=-100, hi=100),
    reduce_case('REDUCE_MIN', [2, 3, 4], [-1], True, dtype='int32', lo=-100, hi=100),
    reduce_case('REDUCE_MAX', [3, 4], [1], False, dtype='int64', lo=-1000, hi=1000),
    reduce_case('REDUCE_PROD', [2, 3, 3], [2], False, dtype='int32', lo=-4, hi=4),
]


def arg_case(op, shape, axis, out='int32', dtype='float32', axis_dtype='int32', lo=None, hi=None, name=None):
    a = axis % len(shape)
    oshape = [d for i, d in enumerate(shape) if i != a]
    name = name or f"{op.lower()}_{shape_tag(shape)}_a{axis_tag(axis)}_{out}" + ('' if dtype == 'float32' else '_' + dtype)
    opts = 'ArgMaxOptions' if op == 'ARG_MAX' else 'ArgMinOptions'
    return Case(name, op, [T(dtype, shape, lo=lo, hi=hi), T(axis_dtype, [1], data=[axis], const=True)],
                [T(out, oshape)], options=(opts, {'output_type': {'int32': 2, 'int64': 4}[out]}))


def axis_tag(a):
    return ('m' + str(-a)) if a < 0 else str(a)


for op in ('ARG_MAX', 'ARG_MIN'):
    CASES += [
        arg_case(op, [7], 0), arg_case(op, [3, 4], 1), arg_case(op, [2, 3, 4], 1),
        arg_case(op, [2, 3, 4], -1, out='int64'), arg_case(op, [2, 3, 4, 5], 0),
        arg_case(op, [2, 3, 2, 4, 3], 3, axis_dtype='int64', name=f'{op.lower()}_rank5_axis_int64'),
        arg_case(op, [2, 1, 3], 1), arg_case(op, [2, 5, 3], 1, dtype='int32', lo=-2, hi=2),
        arg_case(op, [4, 6], 1, dtype='uint8', lo=0, hi=3),
    ]
