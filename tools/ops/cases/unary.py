"""Cases for kernels/unary.c: float unary ops over ranks 1-5 and edge sizes 0 and 1, their
integer forms (ABS int32, NEG int32/int64), GELU both ways, LEAKY_RELU alpha, and CAST between
float32, int32, int64, uint8 and bool."""
from oplib import Case, T, shape_tag, unary_case

SHAPES = [[5], [2, 3], [2, 3, 4], [1, 2, 3, 2], [2, 1, 2, 3, 2], [1], [0, 3]]
# op -> (input range, options, version)
FLOAT_OPS = {
    'ABS': ((-3, 3), ('AbsOptions', {}), 1),
    'NEG': ((-3, 3), ('NegOptions', {}), 1),
    'SQRT': ((0, 4), None, 1),
    'RSQRT': ((0.1, 4), None, 1),
    'EXP': ((-4, 4), ('ExpOptions', {}), 1),
    'LOG': ((0.01, 10), None, 1),
    'TANH': ((-4, 4), None, 1),
    'GELU': ((-4, 4), ('GeluOptions', {'approximate': False}), 1),
    'LEAKY_RELU': ((-3, 3), ('LeakyReluOptions', {'alpha': 0.2}), 1),
    'ELU': ((-3, 3), None, 1),
    'RELU_N1_TO_1': ((-2, 2), None, 1),
    'RELU_0_TO_1': ((-1, 2), None, 1),
}

CASES = []
for op, ((lo, hi), options, version) in FLOAT_OPS.items():
    for shape in SHAPES:
        CASES.append(unary_case(op, shape, lo=lo, hi=hi, options=options, version=version))
CASES += [
    unary_case('GELU', [2, 3, 4], lo=-4, hi=4, options=('GeluOptions', {'approximate': True}),
               name='gelu_approximate'),
    unary_case('LEAKY_RELU', [2, 3, 4], lo=-3, hi=3, options=('LeakyReluOptions', {'alpha': -1.5}),
               name='leaky_relu_alpha_negative'),
    unary_case('ABS', [2, 3, 4], dtype='int32', lo=-100, hi=100, options=('AbsOptions', {}), version=5,
               name='abs_int32'),
    unary_case('NEG', [2, 3, 4], dtype='int32', lo=-100, hi=100, options=('NegOptions', {}),
               name='neg_int32'),
    # int64 values stay inside int32: the LiteRT form passes them through int32 + CAST.
    unary_case('NEG', [3, 4], dtype='int64', lo=-2 * 10**9, hi=2 * 10**9, options=('NegOptions', {}),
               name='neg_int64'),
]

# CAST: (from, to, input range). Floats stay inside the target's range (C and TFLite leave
# out-of-range float -> integer casts undefined).
CAST = [
    ('float32', 'int32', (-100, 100)), ('float32', 'int64', (-100, 100)), ('float32', 'uint8', (0, 255)),
    ('float32', 'bool', (-1, 1)), ('int32', 'float32', (-1000, 1000)), ('int32', 'int64', (-1000, 1000)),
    ('int32', 'bool', (-2, 2)), ('int32', 'uint8', (0, 255)), ('int64', 'int32', (-1000, 1000)),
    ('int64', 'float32', (-1000, 1000)), ('uint8', 'float32', (0, 255)), ('uint8', 'int32', (0, 255)),
    ('bool', 'float32', (None, None)), ('bool', 'int32', (None, None)), ('bool', 'int64', (None, None)),
    ('int32', 'int32', (-5, 5)),
]
DT = {'float32': 0, 'int32': 2, 'uint8': 3, 'int64': 4, 'bool': 6}
for src, dst, (lo, hi) in CAST:
    CASES.append(Case(f'cast_{src}_{dst}', 'CAST', [T(src, [2, 3, 4], lo=lo, hi=hi)], [T(dst, [2, 3, 4])],
                      options=('CastOptions', {'in_data_type': DT[src], 'out_data_type': DT[dst]})))
CASES += [
    Case('cast_float32_int32_rank5', 'CAST', [T('float32', [2, 1, 2, 3, 2], lo=-9, hi=9)],
         [T('int32', [2, 1, 2, 3, 2])]),
    Case('cast_float32_int32_0x3', 'CAST', [T('float32', [0, 3])], [T('int32', [0, 3])]),
    Case('cast_float32_int32_1', 'CAST', [T('float32', [1], lo=-9, hi=9)], [T('int32', [1])]),
]
