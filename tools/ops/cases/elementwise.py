"""Elementwise cases: binary ops with N-d broadcasting, unary activations.

Each entry of CASES is an oplib.Case; helpers below build the usual shapes so a new op is a line.
"""
from oplib import Case, T, bcast_shape

# (shape a, shape b) pairs: equal shapes rank 1-5, broadcasting from scalars up to rank 6,
# and edge sizes 0 and 1.
BCAST = [
    ([7], [7]), ([3, 4], [3, 4]), ([2, 3, 4], [4]), ([2, 1, 4, 3], [5, 1, 3]),
    ([2, 3, 2, 2, 3], [1, 3, 1, 2, 1]), ([2, 1, 2, 1, 2, 3], [2, 1, 2, 1, 3]),
    ([], [2, 3]), ([4, 1], [1, 5]), ([1], [1]), ([0, 3], [3]), ([2, 0, 3], [1, 1, 3]),
]


def shape_tag(shape):
    return 'x'.join(str(d) for d in shape) if shape else 's'


def binary(op, a, b, dtype='float32', out_dtype=None, options=None, name=None, const_b=False,
           lo=None, hi=None, version=1, **kw):
    """A binary op on graph inputs of shapes a and b (b constant with const_b)."""
    out = bcast_shape(a, b)
    name = name or f'{op.lower()}_{shape_tag(a)}_{shape_tag(b)}'
    return Case(name, op, [T(dtype, a, lo=lo, hi=hi), T(dtype, b, const=const_b, lo=lo, hi=hi)],
                [T(out_dtype or dtype, out)], options=options, version=version, **kw)


def unary(op, shape, dtype='float32', options=None, name=None, lo=None, hi=None, version=1, **kw):
    name = name or f'{op.lower()}_{shape_tag(shape)}'
    return Case(name, op, [T(dtype, shape, lo=lo, hi=hi)], [T(dtype, shape)], options=options,
                version=version, **kw)


CASES = []
for a, b in BCAST:
    CASES.append(binary('ADD', a, b, options=('AddOptions', {})))
    CASES.append(binary('MUL', a, b, options=('MulOptions', {})))
CASES += [
    binary('ADD', [2, 3, 4], [3, 4], const_b=True, name='add_const_relu6', lo=-4, hi=4,
           options=('AddOptions', {'fused_activation_function': 3})),
    binary('MUL', [2, 3], [2, 3], name='mul_relu_n1_to_1', lo=-2, hi=2,
           options=('MulOptions', {'fused_activation_function': 2})),
]
for op in ('RELU', 'RELU6', 'LOGISTIC', 'HARD_SWISH'):
    CASES.append(unary(op, [2, 3, 5], lo=-8, hi=8))
