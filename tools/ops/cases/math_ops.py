"""Cases for kernels/math_ops.c: SQUARE, SIN, COS, FLOOR, CEIL, ROUND over ranks 1-5 and sizes 0
and 1 (ROUND also on exact halves, which go to the even neighbour), ZEROS_LIKE for float32, int32
and int64."""
from oplib import Case, T, shape_tag, unary_case

SHAPES = [[5], [2, 3], [2, 3, 4], [1, 2, 3, 2], [2, 1, 2, 3, 2], [1], [0, 3]]
OPS = {
    'SQUARE': ((-3, 3), ('SquareOptions', {})),
    'SIN': ((-7, 7), None),
    'COS': ((-7, 7), ('CosOptions', {})),
    'FLOOR': ((-5, 5), None),
    'CEIL': ((-5, 5), None),
    'ROUND': ((-5, 5), None),
}

CASES = []
for op, ((lo, hi), options) in OPS.items():
    for shape in SHAPES:
        CASES.append(unary_case(op, shape, lo=lo, hi=hi, options=options))

HALVES = [-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.0, 0.0, 2.4999998, -2.5000002, 1e7 + 0.5, 8388609.0]
CASES += [
    Case('round_halves', 'ROUND', [T('float32', [len(HALVES)], data=HALVES)], [T('float32', [len(HALVES)])]),
    Case('floor_ceil_edges', 'FLOOR', [T('float32', [6], data=[-0.0, 0.0, -1e-30, 1e-30, -7.0, 1e20])],
         [T('float32', [6])]),
    Case('ceil_edges', 'CEIL', [T('float32', [6], data=[-0.0, 0.0, -1e-30, 1e-30, -7.0, 1e20])],
         [T('float32', [6])]),
]
for dtype in ('float32', 'int32', 'int64'):
    for shape in ([2, 3, 4], [1], [0, 2]):
        CASES.append(unary_case('ZEROS_LIKE', shape, dtype=dtype, options=('ZerosLikeOptions', {}),
                                name=f'zeros_like_{shape_tag(shape)}_{dtype}'))
CASES.append(unary_case('ZEROS_LIKE', [2, 1, 2, 3, 2], options=('ZerosLikeOptions', {})))

# Integer and bool goldens come from native TFLite's builtin kernels (golden='native'); LiteRT.js
# gives the float ones.
for _c in CASES:
    if _c.golden == 'litert' and any(t is not None and t.dtype != 'float32' for t in _c.inputs + _c.outputs):
        _c.golden = 'native'

