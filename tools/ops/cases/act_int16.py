"""int16 (int16x8) activations, golden from native TFLite 2.19's builtin kernels (golden='native';
kernels/qact.c, softmax.c, convert.c): every int16 code as input ([65536] = -32768..32767, some in a
rank-4 shape), ranks 1-4, sizes 0 and 1, and input scales that take each of TFLite's paths -
LOGISTIC / TANH on a power-of-two input scale (gemmlowp's fixed-point Q3.12 -> Q0.15; TANH also
with one bit of left shift) and on any other scale (the 256-entry sigmoid table with
interpolation), extreme scales at both ends. Case names start with a16_."""
from oplib import Case, T, bcast_shape, shape_tag

I16 = dict(lo=-32768, hi=32767)
ALL16 = list(range(-32768, 32768))
OUT16 = (1.0 / 32768.0, 0)   # LOGISTIC / TANH int16 output quantization TFLite requires


def act(op, name, shape, qin, qout=OUT16, data=None, options=None, version=None, dtype='int16'):
    lo, hi = {'int16': (-32768, 32767), 'int8': (-128, 127), 'uint8': (0, 255)}[dtype]
    return Case('a16_' + name, op, [T(dtype, shape, quant=qin, lo=lo, hi=hi, data=data)],
                [T(dtype, shape, quant=qout)], options=options, version=version or 1, golden='native')


CASES = []
# Every int16 input at the scales of each path: 2^-12 (Q3.12, fixed point), 2^-11 (TANH: shift 1;
# LOGISTIC: table path), 2^-13 and non-powers of two (table path with a multiplier), a tiny scale
# (multiplier shifted left 30 times) and a wide one (no shift).
# Every code (65536 elements) at the scales of the fixed-point path and one of the table path; the
# other scales on every 13th code (5042 elements: all table entries and interpolation steps).
STRIDE13 = list(range(-32768, 32768, 13))
for op, ver in (('LOGISTIC', 3), ('TANH', 3)):
    o = op.lower()
    for tag, s in (('q312', 2.0 ** -12), ('q411', 2.0 ** -11), ('q213', 2.0 ** -13), ('s1e3', 0.001),
                   ('s3e4', 0.0003), ('s37e4', 0.00037), ('tiny', 1e-7), ('s01', 0.01), ('wide', 0.5)):
        full = tag in ('q312', 's37e4') or (op == 'TANH' and tag == 'q411')
        CASES.append(act(op, f'{o}_{"all" if full else "s13"}_{tag}', [65536 if full else len(STRIDE13)], (s, 0),
                         data=ALL16 if full else STRIDE13, version=ver))
    CASES.append(act(op, f'{o}_s13_4d', [2, 1, 2521, 1], (0.0007, 0), data=STRIDE13, version=ver))
    for shape in ([7], [3, 5], [2, 3, 4], [1, 2, 3, 4], [1], [0, 3]):
        CASES.append(act(op, f'{o}_{shape_tag(shape)}', shape, (0.0011, 0), version=ver))

# TANH uint8 / int8: the float32 table of TFLite's generic optimized kernel, every code.
ALL8 = {'int8': list(range(-128, 128)), 'uint8': list(range(256))}
for dtype, qin, qout in (('int8', (0.03, -5), (1.0 / 128, 0)), ('int8', (0.1, 127), (0.01, -128)),
                         ('uint8', (0.02, 128), (1.0 / 128, 128)), ('uint8', (0.5, 0), (0.008, 3))):
    tag = f'{dtype}_{qin[1]}_{qout[1]}'.replace('-', 'm')
    CASES.append(act('TANH', f'tanh_all_{tag}', [256], qin, qout, data=ALL8[dtype], dtype=dtype, version=2))
CASES.append(act('TANH', 'tanh_int8_2x3x4', [2, 3, 4], (0.05, 3), (1.0 / 128, 0), dtype='int8', version=2))

# LEAKY_RELU int16: TFLite's x86 kernel rescales blocks of 16 elements from the start with its AVX2
# rounding and the rest with MultiplyByQuantizedMultiplier - sizes with and without a tail, scales
# whose multipliers are exact halves (ties), above 1 (left shift) and below.
LEAKY = lambda a: ('LeakyReluOptions', {'alpha': a})
CASES += [
    act('LEAKY_RELU', 'leaky_relu_all_half', [65536], (0.002, 0), (0.004, 0), data=ALL16, options=LEAKY(0.5), version=2),
    act('LEAKY_RELU', 'leaky_relu_s13_up', [5042], (0.003, 0), (0.001, 0), data=STRIDE13, options=LEAKY(0.2), version=2),
    act('LEAKY_RELU', 'leaky_relu_s13_4d', [2, 1, 2521, 1], (0.0007, 0), (0.0011, 0), data=STRIDE13,
        options=LEAKY(1.7), version=2),
    act('LEAKY_RELU', 'leaky_relu_37_half', [37], (0.002, 0), (0.004, 0), data=list(range(-18, 19)),
        options=LEAKY(0.25), version=2),
    act('LEAKY_RELU', 'leaky_relu_7', [7], (0.001, 0), (0.002, 0), options=LEAKY(0.1), version=2),
    act('LEAKY_RELU', 'leaky_relu_3x5x2', [3, 5, 2], (0.0013, 0), (0.0009, 0), options=LEAKY(0.3), version=2),
    act('LEAKY_RELU', 'leaky_relu_2x1x4x5', [2, 1, 4, 5], (0.0005, 0), (0.0005, 0), options=LEAKY(0.0), version=2),
    act('LEAKY_RELU', 'leaky_relu_0x4', [0, 4], (0.001, 0), (0.002, 0), options=LEAKY(0.1), version=2),
]

# SOFTMAX int16 -> int16 (TFLite's two int16 tables) and int8 / uint8 -> int16 (its float table),
# ranks 1-4, rows of 1 element, wide and narrow input scales, beta != 1.
def smx(name, shape, dtype, qin, qout, beta=1.0, data=None, lo=None, hi=None, out='int16'):
    rlo, rhi = {'int16': (-32768, 32767), 'int8': (-128, 127), 'uint8': (0, 255)}[dtype]
    return Case('a16_softmax_' + name, 'SOFTMAX',
                [T(dtype, shape, quant=qin, lo=rlo if lo is None else lo, hi=rhi if hi is None else hi, data=data)],
                [T(out, shape, quant=qout)], options=('SoftmaxOptions', {'beta': beta}), version=3,
                golden='native')


CASES += [
    smx('i16_4x1000', [4, 1000], 'int16', (0.0005, 0), OUT16),
    smx('i16_2x3x64_beta', [2, 3, 64], 'int16', (0.001, 0), OUT16, beta=0.7),
    smx('i16_1x2x3x16_wide', [1, 2, 3, 16], 'int16', (0.01, 0), OUT16),
    smx('i16_8x5_narrow', [8, 5], 'int16', (0.00003, 0), OUT16, lo=-2000, hi=2000),
    smx('i16_33', [33], 'int16', (0.002, 0), OUT16),
    smx('i16_5x1', [5, 1], 'int16', (0.002, 0), OUT16),
    smx('i16_0x4', [0, 4], 'int16', (0.002, 0), OUT16),
    # every code once: 256 rows of 256 consecutive codes
    smx('i16_all', [256, 256], 'int16', (0.0002, 0), OUT16, data=ALL16),
    smx('i16_3x700_far', [3, 700], 'int16', (0.0001, 0), OUT16),
    smx('i8_i16_4x10', [4, 10], 'int8', (0.1, -3), OUT16),
    smx('i8_i16_2x3x17_zp', [2, 3, 17], 'int8', (0.05, 127), (1.0 / 32768, -32768)),
    smx('i8_i16_1x1x2x9_beta', [1, 1, 2, 9], 'int8', (0.2, 0), (1.0 / 65536, 0), beta=0.5),
    smx('i8_i16_all', [1, 256], 'int8', (0.04, 0), OUT16, data=ALL8['int8']),
    smx('u8_i16_3x20', [3, 20], 'uint8', (0.1, 128), OUT16),
]

# QUANTIZE int16 -> int32 (TFLite's Requantize into int32: no clamp to reach, the zero point added
# in int32); every int16 code, multipliers below and above 1, a far zero point. (int8 -> int32 is
# refused by TFLite 2.19's QuantizePrepare: "output->type == kTfLiteUInt8 || ... kTfLiteInt16".)
def q32(name, shape, qin, qout, data=None):
    return Case('a16_quantize_i16_i32_' + name, 'QUANTIZE', [T('int16', shape, quant=qin, data=data, **I16)],
                [T('int32', shape, quant=qout)], golden='native')


CASES += [
    q32('s13_down', [5042], (0.002, 0), (0.0031, 0), data=STRIDE13),
    q32('s13_up', [5042], (0.002, 0), (0.00001, 5), data=STRIDE13),
    q32('2x3x4_zp', [2, 3, 4], (0.0005, 0), (0.0007, -2147483000)),
    q32('1x2x2x3', [1, 2, 2, 3], (0.001, 0), (1e-9, 0)),
    q32('0x2', [0, 2], (0.001, 0), (0.002, 0)),
]

# ABS, EXP, LOG, RSQRT, SQRT on int8 / int16 (TFLite's elementwise.cc / exp.cc: integer ABS and
# int8 RSQRT, float32 LUTPopulate tables for EXP / LOG / int16 RSQRT, float32 SQRT). Every int8
# code; every int16 code or every 13th; RSQRT / SQRT only where TFLite's invoke accepts the input
# (>= the zero point / >= 0: it refuses the invoke otherwise).
def un(op, name, shape, dtype, qin, qout, data=None, lo=None, hi=None, version=2):
    rlo, rhi = {'int16': (-32768, 32767), 'int8': (-128, 127)}[dtype]
    return Case('a16_' + name, op, [T(dtype, shape, quant=qin, data=data, lo=rlo if lo is None else lo,
                                      hi=rhi if hi is None else hi)],
                [T(dtype, shape, quant=qout)], version=version, golden='native')


NONNEG16 = list(range(0, 32768, 7))   # 4682 codes
CASES += [
    un('ABS', 'abs_i8_all_same', [256], 'int8', (0.05, -5), (0.05, -5), data=ALL8['int8']),
    un('ABS', 'abs_i8_all_rescale', [256], 'int8', (0.05, 10), (0.03, -100), data=ALL8['int8']),
    un('ABS', 'abs_i8_2x3x4', [2, 3, 4], 'int8', (0.02, 127), (0.011, -128)),
    un('ABS', 'abs_i16_all_same', [65536], 'int16', (0.001, 0), (0.001, 0), data=ALL16, version=5),
    un('ABS', 'abs_i16_s13_rescale', [2, 2521], 'int16', (0.001, 0), (0.0013, 0), data=STRIDE13, version=5),
    un('ABS', 'abs_i16_1x2x3x4_up', [1, 2, 3, 4], 'int16', (0.002, 0), (0.0005, 0), version=5),
    Case('a16_abs_i16_raw', 'ABS', [T('int16', [5042], data=STRIDE13)], [T('int16', [5042])], version=5,
         golden='native'),
    un('EXP', 'exp_i8_all', [256], 'int8', (0.05, 0), (2.5, -128), data=ALL8['int8']),
    un('EXP', 'exp_i8_all_neg', [256], 'int8', (0.04, 100), (1.0 / 256, -128), data=ALL8['int8']),
    un('EXP', 'exp_i16_all', [65536], 'int16', (0.0002, 0), (1000.0 / 32768, 0), data=ALL16),
    un('EXP', 'exp_i16_s13_neg', [5042], 'int16', (0.0003, 0), (1.0 / 32768, 0), data=[min(v, 0) for v in STRIDE13]),
    un('EXP', 'exp_i16_2x3x4', [2, 3, 4], 'int16', (0.0001, 0), (3.0 / 32768, 0)),
    un('LOG', 'log_i8_all', [256], 'int8', (0.1, -128), (0.03, -10), data=ALL8['int8']),
    un('LOG', 'log_i8_all_zp', [256], 'int8', (0.01, 20), (0.05, 90), data=ALL8['int8']),
    un('LOG', 'log_i16_all', [65536], 'int16', (0.001, 0), (0.0003, 0), data=ALL16),
    un('LOG', 'log_i16_3x5', [3, 5], 'int16', (0.05, 0), (0.0004, 0), lo=1, hi=32767),
    un('RSQRT', 'rsqrt_i8_all', [128], 'int8', (0.05, 0), (0.02, -128), data=list(range(0, 128)), version=2),
    un('RSQRT', 'rsqrt_i8_zp', [228], 'int8', (0.003, -100), (0.1, -128), data=list(range(-100, 128)), version=2),
    un('RSQRT', 'rsqrt_i8_2x3x4', [2, 3, 4], 'int8', (0.5, -20), (0.01, 0), lo=-20, hi=127, version=2),
    un('RSQRT', 'rsqrt_i16_nonneg', [len(NONNEG16)], 'int16', (0.0001, 0), (0.01, 0), data=NONNEG16, version=3),
    un('RSQRT', 'rsqrt_i16_1x2x2x3', [1, 2, 2, 3], 'int16', (0.01, 0), (0.0003, 0), lo=0, hi=32767, version=3),
    un('SQRT', 'sqrt_i8_all', [256], 'int8', (0.1, -128), (0.02, -128), data=ALL8['int8']),
    un('SQRT', 'sqrt_i8_zp', [100], 'int8', (0.5, 27), (0.05, 0), data=list(range(27, 127))),
    un('SQRT', 'sqrt_i16_nonneg', [len(NONNEG16)], 'int16', (0.001, 0), (0.0002, 0), data=NONNEG16),
    un('SQRT', 'sqrt_i16_2x3x4', [2, 3, 4], 'int16', (0.01, 0), (0.0005, 0), lo=0, hi=32767),
    un('ABS', 'abs_i8_0x3', [0, 3], 'int8', (0.05, -5), (0.05, -5)),
    un('EXP', 'exp_i16_1', [1], 'int16', (0.001, 0), (3.0 / 32768, 0)),
]

# MAXIMUM / MINIMUM int16 (the codes compared, no rescale) and SELECT_V2 int16, broadcasting.
def mm(op, name, a, b, const_b=False, version=4):
    out = bcast_shape(a, b)
    return Case('a16_' + name, op, [T('int16', a, quant=(0.001, 0), **I16),
                                    T('int16', b, quant=(0.001, 0), const=const_b, **I16)],
                [T('int16', out, quant=(0.001, 0))], options=('MaximumMinimumOptions', {}), version=version,
                golden='native')


CASES += [
    mm('MAXIMUM', 'maximum_i16_3x5', [3, 5], [3, 5]),
    mm('MAXIMUM', 'maximum_i16_2x3x4_4c', [2, 3, 4], [4], const_b=True),
    mm('MINIMUM', 'minimum_i16_2x1x4x3_3', [2, 1, 4, 3], [3]),
    mm('MINIMUM', 'minimum_i16_1_2x3', [1], [2, 3]),
]


def sel2(name, c, a, b):
    out = bcast_shape(bcast_shape(c, a), b)
    return Case('a16_' + name, 'SELECT_V2', [T('bool', c), T('int16', a, **I16), T('int16', b, **I16)],
                [T('int16', out)], golden='native')


CASES += [
    sel2('select_v2_i16_2x3', [2, 3], [2, 3], [2, 3]),
    sel2('select_v2_i16_bcast', [3, 1], [1, 4], [3, 4]),
]

# ELU int8, GELU uint8 / int8 (exact and tanh forms), RELU_N1_TO_1 / RELU_0_TO_1 uint8 / int8:
# TFLite's byte tables (LUTPopulate, QuantizedReluX), every code.
def act8(op, name, dtype, qin, qout, options=None, version=1):
    return act(op, name, [256], qin, qout, data=ALL8[dtype], options=options, version=version, dtype=dtype)


GELU = lambda a: ('GeluOptions', {'approximate': a})
CASES += [
    act8('ELU', 'elu_i8_all', 'int8', (0.05, 10), (0.04, -30)),
    act8('ELU', 'elu_i8_all_wide', 'int8', (0.3, -128), (0.2, 0)),
    act('ELU', 'elu_i8_2x3x4', [2, 3, 4], (0.1, 0), (0.1, 0), dtype='int8'),
    act8('GELU', 'gelu_i8_all', 'int8', (0.05, 0), (0.04, -100), GELU(False), version=2),
    act8('GELU', 'gelu_i8_all_approx', 'int8', (0.05, 0), (0.04, -100), GELU(True), version=2),
    act8('GELU', 'gelu_u8_all', 'uint8', (0.1, 128), (0.06, 20), GELU(False), version=2),
    act8('GELU', 'gelu_u8_all_approx', 'uint8', (0.1, 128), (0.06, 20), GELU(True), version=2),
    act('GELU', 'gelu_i8_1x2x3x4', [1, 2, 3, 4], (0.02, 5), (0.02, 5), options=GELU(False), dtype='int8', version=2),
    act8('RELU_N1_TO_1', 'relu_n1_to_1_i8_all', 'int8', (0.02, 0), (0.01, 0)),
    act8('RELU_N1_TO_1', 'relu_n1_to_1_u8_all', 'uint8', (0.03, 128), (1.0 / 127, 127)),
    act8('RELU_0_TO_1', 'relu_0_to_1_i8_all', 'int8', (0.02, -20), (1.0 / 255, -128)),
    act8('RELU_0_TO_1', 'relu_0_to_1_u8_all', 'uint8', (0.01, 100), (0.005, 3)),
    act('RELU_N1_TO_1', 'relu_n1_to_1_i8_3x5', [3, 5], (0.05, 3), (0.02, -1), dtype='int8'),
]

# Comparisons on uint8 / int8 (TFLite's ComparisonWithScaling: both inputs offset, shifted left 8
# and rescaled by their own scales, then compared) and int16 (LESS / GREATER...: the codes
# compared whatever the scales; EQUAL / NOT_EQUAL: rescaled), broadcasting.
def cmpc(op, name, a, b, dtype, qa, qb, const_b=False, version=None, data_a=None, data_b=None):
    lo, hi = {'int16': (-32768, 32767), 'int8': (-128, 127), 'uint8': (0, 255)}[dtype]
    return Case('a16_' + name, op, [T(dtype, a, quant=qa, lo=lo, hi=hi, data=data_a),
                                    T(dtype, b, quant=qb, const=const_b, lo=lo, hi=hi, data=data_b)],
                [T('bool', bcast_shape(a, b))], version=version or 2, golden='native')


for op in ('LESS', 'LESS_EQUAL', 'GREATER', 'GREATER_EQUAL', 'EQUAL', 'NOT_EQUAL'):
    o = op.lower()
    CASES += [
        cmpc(op, f'{o}_i8_3x7', [3, 7], [3, 7], 'int8', (0.05, 3), (0.1, -7)),
        cmpc(op, f'{o}_u8_2x3x4_4', [2, 3, 4], [4], 'uint8', (0.02, 128), (0.02, 120), const_b=True),
        # every pair of int8 codes on one scale: equal scaled values where the codes are equal
        cmpc(op, f'{o}_i8_all_pairs', [256, 1], [256], 'int8', (0.01, 0), (0.01, 0),
             data_a=ALL8['int8'], data_b=ALL8['int8']),
        cmpc(op, f'{o}_i16_4x5', [4, 5], [4, 5], 'int16', (0.001, 0), (0.001, 0)),
        # different scales: TFLite 2.19 compares the int16 codes as they are, except in EQUAL and
        # NOT_EQUAL, which rescale them as the 8-bit ones (left shift 8)
        cmpc(op, f'{o}_i16_6_scales', [6], [6], 'int16', (0.001, 0), (0.01, 0), data_a=[1, 5, -3, 100, 0, 7],
             data_b=[2, 5, -30, 10, 0, -7]),
        cmpc(op, f'{o}_i16_2x1x3_3', [2, 1, 3], [3], 'int16', (0.001, 0), (0.001, 0), data_b=[-5, 0, 7],
             data_a=[-5, 3, 7, 0, 0, -32768]),
        cmpc(op, f'{o}_i16_600_tenfold', [600], [600], 'int16', (0.001, 0), (0.01, 0),
             data_a=[10 * k + (k % 3 == 0) for k in range(-300, 300)], data_b=list(range(-300, 300))),
    ]
