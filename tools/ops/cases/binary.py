"""Cases for kernels/binary.c: SUB, DIV, FLOOR_DIV, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, POW over
every broadcast shape pair (float32), their integer forms, integer ADD/MUL, the comparisons (bool
outputs) and SELECT_V2."""
import random

from oplib import BCAST_SHAPES, Case, T, bcast_shape, binary_case, shape_tag

OPTS = {
    'SUB': 'SubOptions', 'DIV': 'DivOptions', 'FLOOR_DIV': 'FloorDivOptions',
    'MAXIMUM': 'MaximumMinimumOptions', 'MINIMUM': 'MaximumMinimumOptions',
    'SQUARED_DIFFERENCE': 'SquaredDifferenceOptions', 'POW': 'PowOptions',
    'EQUAL': 'EqualOptions', 'NOT_EQUAL': 'NotEqualOptions', 'LESS': 'LessOptions',
    'LESS_EQUAL': 'LessEqualOptions', 'GREATER': 'GreaterOptions',
    'GREATER_EQUAL': 'GreaterEqualOptions', 'ADD': 'AddOptions', 'MUL': 'MulOptions',
}
# Input ranges that keep each op well-conditioned: (x lo, x hi, y lo, y hi).
RANGES = {
    'SUB': (-1, 1, -1, 1), 'DIV': (-2, 2, 0.5, 2), 'FLOOR_DIV': (-5, 5, 0.5, 2),
    'MAXIMUM': (-1, 1, -1, 1), 'MINIMUM': (-1, 1, -1, 1), 'SQUARED_DIFFERENCE': (-2, 2, -2, 2),
    'POW': (0.1, 2, -2, 2),
}


def version(op, a, b, dtype='float32'):
    """The version TFLite's converter writes (op_version.cc) for these operands."""
    bcast = list(a) != list(b)
    big = max(len(a), len(b)) > 4
    if op == 'SUB':
        return 4 if dtype == 'int64' else 3 if bcast and big else 1
    if op == 'DIV':
        return 2 if bcast and big else 1
    if op in ('MAXIMUM', 'MINIMUM'):
        return 3 if bcast and big else 1
    if op == 'FLOOR_DIV':
        return 2 if dtype == 'float32' else 1
    if op == 'ADD':
        return 4 if dtype == 'int64' else 1
    if op == 'MUL':
        return 5 if dtype == 'int64' else 1
    return 1


def bin2(op, a, b, dtype='float32', ranges=None, name=None, out_dtype=None, options=None, **kw):
    xlo, xhi, ylo, yhi = ranges or RANGES.get(op, (-1, 1, -1, 1))
    return Case(name or f'{op.lower()}_{shape_tag(a)}_{shape_tag(b)}' + ('' if dtype == 'float32' else '_' + dtype),
                op, [T(dtype, a, lo=xlo, hi=xhi), T(dtype, b, lo=ylo, hi=yhi)],
                [T(out_dtype or dtype, bcast_shape(a, b))], options=options or (OPTS[op], {}),
                version=version(op, a, b, dtype), **kw)


CASES = []
for op in ('SUB', 'DIV', 'FLOOR_DIV', 'MAXIMUM', 'MINIMUM', 'SQUARED_DIFFERENCE', 'POW'):
    for a, b in BCAST_SHAPES:
        CASES.append(bin2(op, a, b))

# Negative divisors, fused activations, constant operands.
CASES += [
    bin2('DIV', [2, 5], [2, 5], ranges=(-2, 2, -2, -0.5), name='div_negative_divisor'),
    bin2('FLOOR_DIV', [3, 4], [4], ranges=(-5, 5, -2, -0.5), name='floor_div_negative_divisor'),
    bin2('SUB', [2, 3, 4], [4], name='sub_relu', options=('SubOptions', {'fused_activation_function': 1})),
    bin2('SUB', [2, 3], [2, 3], name='sub_relu_n1_to_1', ranges=(-2, 2, -2, 2),
         options=('SubOptions', {'fused_activation_function': 2})),
    bin2('DIV', [2, 3, 4], [3, 1], name='div_relu6', ranges=(-8, 8, 0.5, 2),
         options=('DivOptions', {'fused_activation_function': 3})),
    Case('sub_const_lhs', 'SUB', [T('float32', [3], const=True), T('float32', [2, 3])],
         [T('float32', [2, 3])], options=('SubOptions', {})),
    Case('maximum_const_scalar', 'MAXIMUM', [T('float32', [2, 3, 4]), T('float32', [], data=[0.25], const=True)],
         [T('float32', [2, 3, 4])], options=('MaximumMinimumOptions', {})),
]

# Integer forms (TFLite: SUB/ADD/MUL int32+int64, DIV/FLOOR_DIV/SQUARED_DIFFERENCE/POW int32,
# MAXIMUM/MINIMUM int32/int64/uint8).
CASES += [
    bin2('SUB', [2, 3, 4], [3, 4], dtype='int32', ranges=(-100, 100, -100, 100)),
    bin2('SUB', [2, 3], [3], dtype='int64', ranges=(-1000, 1000, -1000, 1000)),
    bin2('SUB', [2, 1, 2, 1, 3], [2, 1, 2, 3], dtype='int32', ranges=(-9, 9, -9, 9)),
    bin2('ADD', [2, 3, 4], [4], dtype='int32', ranges=(-100, 100, -100, 100)),
    bin2('ADD', [3, 1], [1, 4], dtype='int64', ranges=(-1000, 1000, -1000, 1000)),
    bin2('ADD', [2, 3], [2, 3], dtype='int32', ranges=(-10, 10, -10, 10), name='add_int32_relu6',
         options=('AddOptions', {'fused_activation_function': 3})),
    bin2('MUL', [2, 3, 4], [3, 1], dtype='int32', ranges=(-30, 30, -30, 30)),
    bin2('MUL', [5], [5], dtype='int64', ranges=(-1000, 1000, -1000, 1000)),
    bin2('DIV', [2, 3, 4], [4], dtype='int32', ranges=(-50, 50, 1, 7)),
    bin2('DIV', [3, 4], [3, 4], dtype='int32', ranges=(-50, 50, -7, -1), name='div_int32_negative'),
    bin2('FLOOR_DIV', [2, 3, 4], [4], dtype='int32', ranges=(-50, 50, 1, 7)),
    bin2('FLOOR_DIV', [3, 4], [3, 4], dtype='int32', ranges=(-50, 50, -7, -1), name='floor_div_int32_negative'),
    bin2('MAXIMUM', [2, 3, 4], [4], dtype='int32', ranges=(-9, 9, -9, 9)),
    bin2('MINIMUM', [2, 3, 4], [3, 1], dtype='int64', ranges=(-9, 9, -9, 9)),
    bin2('MAXIMUM', [2, 3], [3], dtype='uint8', ranges=(0, 255, 0, 255)),
    bin2('SQUARED_DIFFERENCE', [2, 3, 4], [4], dtype='int32', ranges=(-100, 100, -100, 100)),
    bin2('POW', [2, 3, 4], [4], dtype='int32', ranges=(-3, 3, 0, 4)),
]


def ties(dtype, shape, seed, lo=-2, hi=2):
    """Small integer values (as floats for float32), so comparisons see equal elements."""
    rng = random.Random(seed)
    n = 1
    for d in shape:
        n *= d
    if dtype == 'bool':
        return [rng.random() < 0.5 for _ in range(n)]
    return [rng.randint(lo, hi) * (1.0 if dtype == 'float32' else 1) for _ in range(n)]


CMP_SHAPES = [([7], [7]), ([2, 3, 4], [4]), ([2, 1, 4, 3], [5, 1, 3]), ([2, 1, 2, 1, 2, 3], [2, 1, 2, 1, 3]),
              ([], [2, 3]), ([0, 3], [3]), ([1], [1])]
for op in ('EQUAL', 'NOT_EQUAL', 'LESS', 'LESS_EQUAL', 'GREATER', 'GREATER_EQUAL'):
    for k, (a, b) in enumerate(CMP_SHAPES):
        CASES.append(Case(f'{op.lower()}_{shape_tag(a)}_{shape_tag(b)}', op,
                          [T('float32', a, data=ties('float32', a, k)), T('float32', b, data=ties('float32', b, k + 50))],
                          [T('bool', bcast_shape(a, b))], options=(OPTS[op], {})))
    # (uint8 comparisons are quantized-only in TFLite: LiteRT aborts without quantization.)
    for dtype in ('int32', 'int64'):
        a, b = [2, 3, 4], [3, 1]
        lo = 0 if dtype == 'uint8' else -2
        CASES.append(Case(f'{op.lower()}_{dtype}', op,
                          [T(dtype, a, data=ties(dtype, a, 7, lo, lo + 4)), T(dtype, b, data=ties(dtype, b, 8, lo, lo + 4))],
                          [T('bool', bcast_shape(a, b))], options=(OPTS[op], {})))
for op in ('EQUAL', 'NOT_EQUAL'):
    a, b = [2, 3, 4], [4]
    CASES.append(Case(f'{op.lower()}_bool', op,
                      [T('bool', a, data=ties('bool', a, 9)), T('bool', b, data=ties('bool', b, 10))],
                      [T('bool', bcast_shape(a, b))], options=(OPTS[op], {})))


# SELECT_V2: condition, x and y broadcast together.
def select(c, x, y, dtype='float32', name=None, **kw):
    out = bcast_shape(bcast_shape(c, x), y)
    lo, hi = (-100, 100) if dtype in ('int32', 'int64') else (None, None)
    return Case(name or f'select_v2_{shape_tag(c)}_{shape_tag(x)}_{shape_tag(y)}' + ('' if dtype == 'float32' else '_' + dtype),
                'SELECT_V2', [T('bool', c), T(dtype, x, lo=lo, hi=hi), T(dtype, y, lo=lo, hi=hi)],
                [T(dtype, out)], options=('SelectV2Options', {}), **kw)


CASES += [
    select([7], [7], [7]), select([2, 3, 4], [4], [2, 3, 4]), select([3, 1], [1, 4], [3, 4]),
    select([2, 1, 3, 1, 2], [1, 2, 1, 4, 1], [2]), select([2, 1, 2, 1, 2, 3], [2, 1, 2, 3], [3]),
    select([], [2, 3], [2, 3]), select([1], [1], [1]), select([0, 3], [3], [0, 3]),
    select([2, 3], [2, 3], [3], dtype='int32'), select([2, 3], [3], [2, 3], dtype='int64'),
    select([4], [2, 4], [4], dtype='bool'),
]
