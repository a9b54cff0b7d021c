"""FULLY_CONNECTED with uint8 input and weights and an int16 output (kernels/fully_connected.c,
issue 28), golden from native TFLite 2.19: with and without bias, extreme zero points, a rescale
above 1 that saturates, RELU / RELU6 clamps on the int16 range, a batch of rows from a rank-3 input,
keep_num_dims."""
import struct

from oplib import Case, T


def _f32(x):
    return struct.unpack('<f', struct.pack('<f', x))[0]


def fcu16(name, in_shape, units, qin, qw, s_out, bias=True, act=0, keep=False, version=1):
    depth = in_shape[-1]
    batch = 1
    for d in in_shape[:-1]:
        batch *= d
    ins = [T('uint8', in_shape, quant=qin, lo=0, hi=255), T('uint8', [units, depth], quant=qw, const=True, lo=0, hi=255)]
    if bias:
        ins.append(T('int32', [units], quant=(_f32(_f32(qin[0]) * _f32(qw[0])), 0), const=True, lo=-30000, hi=30000))
    out = list(in_shape[:-1]) + [units] if keep else [batch, units]
    return Case('fc_u8i16_' + name, 'FULLY_CONNECTED', inputs=ins, outputs=[T('int16', out, quant=(s_out, 0))],
                options=('FullyConnectedOptions', {'fused_activation_function': act, 'keep_num_dims': keep}),
                version=version, golden='native')


CASES = [
    fcu16('1x16_8', [1, 16], 8, (0.02, 128), (0.01, 120), 0.0005),
    fcu16('3x10_5_nobias', [3, 10], 5, (0.05, 128), (0.03, 127), 0.02, bias=False),
    fcu16('2x3x7_4_keep', [2, 3, 7], 4, (0.1, 200), (0.02, 130), 0.02, keep=True),
    fcu16('4x9_6_relu', [4, 9], 6, (0.01, 100), (0.05, 130), 0.0004, act=1),
    fcu16('2x12_3_relu6', [2, 12], 3, (0.03, 128), (0.04, 120), 0.0003, act=3),
    fcu16('5x33_7', [5, 33], 7, (0.004, 0), (0.006, 128), 0.0005),
    fcu16('1x40_64', [1, 40], 64, (0.02, 128), (0.01, 128), 0.000667),
    fcu16('1x10_3', [1, 10], 3, (0.02, 128), (0.01, 128), 0.000444),
    fcu16('1x30_3', [1, 30], 3, (0.02, 128), (0.01, 128), 0.000571),
    fcu16('1x31_2', [1, 31], 2, (0.02, 128), (0.01, 128), 0.000601),
    fcu16('1x29_1', [1, 29], 1, (0.02, 128), (0.01, 128), 0.000523),
    fcu16('1x28_5', [1, 28], 5, (0.02, 128), (0.01, 128), 0.000587),
    fcu16('1x6_16', [1, 6], 16, (0.02, 128), (0.01, 128), 0.000571),
    fcu16('1x8_16', [1, 8], 16, (0.02, 128), (0.01, 128), 0.000571),
    fcu16('1x7_16', [1, 7], 16, (0.02, 128), (0.01, 128), 0.000571),
    fcu16('1x20_4', [1, 20], 4, (0.02, 128), (0.01, 128), 0.000571),
    fcu16('1x21_4', [1, 21], 4, (0.02, 128), (0.01, 128), 0.000571),
    fcu16('6x24_20', [6, 24], 20, (0.02, 128), (0.01, 128), 0.000571),
    fcu16('2x20_4_saturate', [2, 20], 4, (0.5, 128), (0.5, 128), 0.001),
]
