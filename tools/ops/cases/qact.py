"""Cases for kernels/qact.c (the uint8 / int8 LEAKY_RELU and HARD_SWISH tables) and the int8
DEPTH_TO_SPACE (version 2), golden from native TFLite's builtin kernels: every code of the input
range over ranks 1-5, sizes 0 and 1, extreme zero points, and HARD_SWISH input scales that take
the relu-ish multiplier's left-shift and right-shift paths."""
from oplib import Case, T, shape_tag

SHAPES = [[5], [2, 3], [2, 3, 4], [1, 2, 3, 2], [2, 1, 2, 3, 2], [1], [0, 3]]
RANGE = {'int8': (-128, 127), 'uint8': (0, 255)}


def act(op, shape, dtype, qin, qout, options=None, name=None, data=None):
    lo, hi = RANGE[dtype]
    return Case(name or f'{op.lower()}_{shape_tag(shape)}_{dtype}_native', op,
                [T(dtype, shape, quant=qin, lo=lo, hi=hi, data=data)], [T(dtype, shape, quant=qout)],
                options=options, golden='native')


LEAKY = ('LeakyReluOptions', {'alpha': 0.2})
CASES = []
for shape in SHAPES:
    CASES.append(act('LEAKY_RELU', shape, 'int8', (0.05, -10), (0.03, 5), LEAKY))
    CASES.append(act('HARD_SWISH', shape, 'int8', (0.04, -3), (0.02, -100), ('HardSwishOptions', {})))
ALL_I8 = list(range(-128, 128))
ALL_U8 = list(range(256))
CASES += [
    # Every input code, uint8 and int8, extreme zero points.
    act('LEAKY_RELU', [256], 'uint8', (0.1, 128), (0.08, 100), LEAKY, name='leaky_relu_all_uint8_native', data=ALL_U8),
    act('LEAKY_RELU', [256], 'int8', (0.02, -128), (0.01, 127), ('LeakyReluOptions', {'alpha': 1.7}),
        name='leaky_relu_all_int8_extreme_native', data=ALL_I8),
    act('LEAKY_RELU', [256], 'int8', (0.05, 0), (0.05, 0), ('LeakyReluOptions', {'alpha': 0.0}),
        name='leaky_relu_alpha0_int8_native', data=ALL_I8),
    act('HARD_SWISH', [256], 'uint8', (0.05, 128), (0.03, 40), ('HardSwishOptions', {}),
        name='hard_swish_all_uint8_native', data=ALL_U8),
    act('HARD_SWISH', [256], 'int8', (0.5, 0), (0.5, -128), ('HardSwishOptions', {}),
        name='hard_swish_all_int8_wide_native', data=ALL_I8),
    act('HARD_SWISH', [256], 'int8', (0.001, 127), (0.0007, -128), ('HardSwishOptions', {}),
        name='hard_swish_all_int8_narrow_native', data=ALL_I8),
    act('HARD_SWISH', [256], 'int8', (0.0235, -13), (0.0178, -90), ('HardSwishOptions', {}),
        name='hard_swish_all_int8_mobilenet_native', data=ALL_I8),
]
# DEPTH_TO_SPACE int8 is version 2 (it was refused at load as above the highest version 1).
CASES += [
    Case('depth_to_space_int8_native', 'DEPTH_TO_SPACE', [T('int8', [1, 2, 3, 8], quant=(0.1, -5), lo=-128, hi=127)],
         [T('int8', [1, 4, 6, 2], quant=(0.1, -5))], options=('DepthToSpaceOptions', {'block_size': 2}),
         version=2, golden='native'),
    Case('depth_to_space_uint8_native', 'DEPTH_TO_SPACE', [T('uint8', [2, 1, 2, 9], quant=(0.2, 128), lo=0, hi=255)],
         [T('uint8', [2, 3, 6, 1], quant=(0.2, 128))], options=('DepthToSpaceOptions', {'block_size': 3}),
         golden='native'),
]

# PRELU uint8 / int8: alpha a per-channel constant (the converters' form), of the input's shape,
# and broadcast from [1, 1, C]; extreme zero points.
def prelu(name, shape, ashape, dtype, qin, qa, qout):
    lo, hi = RANGE[dtype]
    return Case(name, 'PRELU', [T(dtype, shape, quant=qin, lo=lo, hi=hi), T(dtype, ashape, quant=qa, const=True, lo=lo, hi=hi)],
                [T(dtype, shape, quant=qout)], golden='native')


CASES += [
    prelu('prelu_int8_1x4x4x3_c_native', [1, 4, 4, 3], [3], 'int8', (0.05, -3), (0.004, -20), (0.04, 7)),
    prelu('prelu_int8_2x3x5_same_native', [2, 3, 5], [2, 3, 5], 'int8', (0.1, 0), (0.01, 0), (0.09, -128)),
    prelu('prelu_int8_2x2x3x4_11c_native', [2, 2, 3, 4], [1, 1, 4], 'int8', (0.02, 127), (0.02, -128), (0.03, -128)),
    prelu('prelu_uint8_1x3x3x2_c_native', [1, 3, 3, 2], [2], 'uint8', (0.05, 128), (0.005, 100), (0.04, 120)),
    prelu('prelu_int8_1_native', [1], [1], 'int8', (0.05, 10), (0.01, 0), (0.05, 10)),
    prelu('prelu_int8_0x3_native', [0, 3], [3], 'int8', (0.05, 10), (0.01, 0), (0.05, 10)),
]
