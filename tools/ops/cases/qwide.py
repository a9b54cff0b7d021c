"""int16x8 and hybrid (dynamic-range) CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED against native
TFLite's builtin kernels (golden='native'; kernels/qwide.h): int16 activations with int8 weights
and an int64 bias, byte-exact; float activations with int8 weights quantized on the fly, float
outputs within the float rule. Per-tensor and per-channel weight scales, strides, dilation, SAME
and VALID padding, depth multipliers, batches, fused activations, extreme scales."""
import random

from oplib import Case, T

SAME, VALID = 0, 1


def _scales(n, seed, lo=0.002, hi=0.05):
    r = random.Random(seed)
    return [r.uniform(lo, hi) for _ in range(n)]


def _f32(x):
    import struct
    return struct.unpack('<f', struct.pack('<f', x))[0]


def _conv_out(size, k, stride, dil, pad):
    eff = (k - 1) * dil + 1
    return (size + stride - 1) // stride if pad == SAME else (size - eff + stride) // stride


def conv16(name, in_shape, co, kh, kw, stride=(1, 1), dil=(1, 1), pad=SAME, act=0, per_channel=True,
           bias=True, s_in=0.01, s_out=0.02, dw_mult=None, seed=1):
    """int16x8 CONV_2D (dw_mult None) or DEPTHWISE_CONV_2D (dw_mult = depth multiplier)."""
    n, h, w, ci = in_shape
    dw = dw_mult is not None
    oc = ci * dw_mult if dw else co
    f_shape = [1, kh, kw, oc] if dw else [oc, kh, kw, ci]
    axis = 3 if dw else 0
    ws = _scales(oc if per_channel else 1, seed)
    wq = (ws, [0] * len(ws), axis) if per_channel else (ws[0], 0)
    bs = [_f32(_f32(s_in) * _f32(ws[c if per_channel else 0])) for c in range(oc)]
    oh, ow = _conv_out(h, kh, stride[0], dil[0], pad), _conv_out(w, kw, stride[1], dil[1], pad)
    ins = [T('int16', in_shape, quant=(s_in, 0), lo=-32768, hi=32767),
           T('int8', f_shape, quant=wq, const=True, lo=-127, hi=127)]
    ins.append(T('int64', [oc], quant=(bs, [0] * oc, 0) if per_channel else (bs[0], 0), const=True, lo=-200000, hi=200000)
               if bias else None)
    if not bias:
        ins.pop()
    out = T('int16', [n, oh, ow, oc], quant=(s_out, 0))
    if dw:
        return Case(name, 'DEPTHWISE_CONV_2D', inputs=ins, outputs=[out], version=5, golden='native',
                    options=('DepthwiseConv2DOptions', {'padding': pad, 'stride_w': stride[1],
                             'stride_h': stride[0], 'depth_multiplier': dw_mult,
                             'fused_activation_function': act, 'dilation_w_factor': dil[1],
                             'dilation_h_factor': dil[0]}))
    return Case(name, 'CONV_2D', inputs=ins, outputs=[out], version=4, golden='native',
                options=('Conv2DOptions', {'padding': pad, 'stride_w': stride[1], 'stride_h': stride[0],
                         'fused_activation_function': act, 'dilation_w_factor': dil[1],
                         'dilation_h_factor': dil[0]}))


def fc16(name, batch, depth, units, per_channel=False, bias=True, act=0, s_in=0.01, s_out=0.02, seed=2):
    ws = _scales(units if per_channel else 1, seed)
    wq = (ws, [0] * units, 0) if per_channel else (ws[0], 0)
    bs = [_f32(_f32(s_in) * _f32(ws[c if per_channel else 0])) for c in range(units)]
    ins = [T('int16', [batch, depth], quant=(s_in, 0), lo=-32768, hi=32767),
           T('int8', [units, depth], quant=wq, const=True, lo=-127, hi=127)]
    if bias:
        ins.append(T('int64', [units], quant=(bs, [0] * units, 0) if per_channel else (bs[0], 0), const=True, lo=-200000, hi=200000))
    return Case(name, 'FULLY_CONNECTED', inputs=ins, outputs=[T('int16', [batch, units], quant=(s_out, 0))],
                options=('FullyConnectedOptions', {'fused_activation_function': act}), version=7,
                golden='native')


def conv_hyb(name, in_shape, co, kh, kw, stride=(1, 1), dil=(1, 1), pad=SAME, act=0, per_channel=True,
             bias=True, dw_mult=None, lo=-1.0, hi=1.0, seed=3):
    n, h, w, ci = in_shape
    dw = dw_mult is not None
    oc = ci * dw_mult if dw else co
    f_shape = [1, kh, kw, oc] if dw else [oc, kh, kw, ci]
    axis = 3 if dw else 0
    ws = _scales(oc if per_channel else 1, seed)
    wq = (ws, [0] * len(ws), axis) if per_channel else (ws[0], 0)
    oh, ow = _conv_out(h, kh, stride[0], dil[0], pad), _conv_out(w, kw, stride[1], dil[1], pad)
    ins = [T('float32', in_shape, lo=lo, hi=hi), T('int8', f_shape, quant=wq, const=True, lo=-127, hi=127)]
    if bias:
        ins.append(T('float32', [oc], const=True))
    out = T('float32', [n, oh, ow, oc])
    if dw:
        return Case(name, 'DEPTHWISE_CONV_2D', inputs=ins, outputs=[out], version=6 if per_channel else 4,
                    golden='native',
                    options=('DepthwiseConv2DOptions', {'padding': pad, 'stride_w': stride[1],
                             'stride_h': stride[0], 'depth_multiplier': dw_mult,
                             'fused_activation_function': act, 'dilation_w_factor': dil[1],
                             'dilation_h_factor': dil[0]}))
    return Case(name, 'CONV_2D', inputs=ins, outputs=[out], version=5 if per_channel else 2,
                golden='native',
                options=('Conv2DOptions', {'padding': pad, 'stride_w': stride[1], 'stride_h': stride[0],
                         'fused_activation_function': act, 'dilation_w_factor': dil[1],
                         'dilation_h_factor': dil[0]}))


def fc_hyb(name, batch, depth, units, per_channel=False, asym=False, bias=True, act=0, lo=-1.0, hi=1.0,
           data=None, seed=4):
    ws = _scales(units if per_channel else 1, seed)
    wq = (ws, [0] * units, 0) if per_channel else (ws[0], 0)
    ins = [T('float32', [batch, depth], lo=lo, hi=hi, data=data),
           T('int8', [units, depth], quant=wq, const=True, lo=-127, hi=127)]
    if bias:
        ins.append(T('float32', [units], const=True))
    return Case(name, 'FULLY_CONNECTED', inputs=ins, outputs=[T('float32', [batch, units])],
                options=('FullyConnectedOptions', {'fused_activation_function': act,
                                                   'asymmetric_quantize_inputs': asym}),
                version=9 if asym else 3, golden='native')


CASES = [
    # int16x8
    conv16('conv_q16_1x5x5x3_pc_same', [1, 5, 5, 3], 4, 3, 3),
    conv16('conv_q16_2x7x6x2_pt_valid_s2_d2_relu', [2, 7, 6, 2], 3, 2, 2, stride=(2, 2), dil=(2, 2),
           pad=VALID, act=1, per_channel=False, seed=5),
    conv16('conv_q16_1x4x4x5_1x1_relu6', [1, 4, 4, 5], 6, 1, 1, act=3, s_in=0.001, s_out=0.0005, seed=6),
    conv16('conv_q16_1x6x5x2_s21_big_scale', [1, 6, 5, 2], 3, 3, 2, stride=(2, 1), s_in=0.2, s_out=0.0001,
           seed=7),
    conv16('dw_q16_1x6x6x4_m2_pc_same_s2', [1, 6, 6, 4], None, 3, 3, stride=(2, 2), dw_mult=2, seed=8),
    conv16('dw_q16_2x7x7x3_pt_valid_d2_relu', [2, 7, 7, 3], None, 3, 3, dil=(2, 2), pad=VALID, act=1,
           per_channel=False, dw_mult=1, seed=9),
    fc16('fc_q16_3x10_5', 3, 10, 5),
    fc16('fc_q16_2x17_7_pc_relu', 2, 17, 7, per_channel=True, act=1, seed=10),
    fc16('fc_q16_1x9_4_nobias', 1, 9, 4, bias=False, s_in=0.05, s_out=0.001, seed=11),
    # hybrid
    conv_hyb('conv_hyb_1x5x5x3_pt_same', [1, 5, 5, 3], 4, 3, 3, per_channel=False),
    conv_hyb('conv_hyb_2x7x6x4_pc_valid_s2_relu', [2, 7, 6, 4], 5, 3, 3, stride=(2, 2), pad=VALID, act=1,
             seed=12),
    conv_hyb('conv_hyb_1x6x6x2_pc_same_d2_pos', [1, 6, 6, 2], 3, 3, 3, dil=(2, 2), lo=0.1, hi=3.0, seed=13),
    conv_hyb('conv_hyb_1x4x4x8_1x1_pc_neg', [1, 4, 4, 8], 4, 1, 1, lo=-5.0, hi=-0.5, seed=14),
    conv_hyb('dw_hyb_1x6x6x4_pc_same', [1, 6, 6, 4], None, 3, 3, dw_mult=1, seed=15),
    conv_hyb('dw_hyb_2x7x7x3_m2_valid_s2_relu6', [2, 7, 7, 3], None, 3, 3, stride=(2, 2), pad=VALID, act=3,
             dw_mult=2, lo=-4.0, hi=4.0, seed=16),
    fc_hyb('fc_hyb_3x10_5_pt', 3, 10, 5),
    fc_hyb('fc_hyb_2x33_8_pc_asym', 2, 33, 8, per_channel=True, asym=True, seed=17),
    fc_hyb('fc_hyb_4x16_6_pt_asym_relu', 4, 16, 6, asym=True, act=1, lo=-0.2, hi=2.0, seed=18),
    fc_hyb('fc_hyb_2x7_3_pc_sym', 2, 7, 3, per_channel=True, seed=19),
    fc_hyb('fc_hyb_2x5_3_zero_row', 2, 5, 3, asym=True, data=[0.0] * 5 + [0.5, -1.0, 0.25, 2.0, -0.75], seed=20),
]

# QUANTIZE / DEQUANTIZE of the int16x8 models: float32 -> int16 at the input, int16 -> float32 at
# the output, and the requantizations between int8 and int16 (native TFLite 2.19 refuses int8 ->
# int32; int16 -> int32 is not implemented).
CASES += [
    Case('quantize_f32_int16_3x7', 'QUANTIZE', inputs=[T('float32', [3, 7], lo=-40.0, hi=40.0)],
         outputs=[T('int16', [3, 7], quant=(0.001, 0))], golden='native'),
    Case('quantize_f32_int16_ties', 'QUANTIZE',
         inputs=[T('float32', [8], data=[0.5, -0.5, 1.5, -2.5, 40000.0, -40000.0, 0.25, 3.75])],
         outputs=[T('int16', [8], quant=(0.5, 0))], golden='native'),
    Case('quantize_int16_int8_2x9', 'QUANTIZE', inputs=[T('int16', [2, 9], quant=(0.002, 0), lo=-32768, hi=32767)],
         outputs=[T('int8', [2, 9], quant=(0.3, -5))], golden='native'),
    Case('quantize_int8_int16_11', 'QUANTIZE', inputs=[T('int8', [11], quant=(0.05, 7), lo=-128, hi=127)],
         outputs=[T('int16', [11], quant=(0.0007, 0))], golden='native'),
    Case('quantize_int16_int16_13', 'QUANTIZE', inputs=[T('int16', [13], quant=(0.003, 0), lo=-32768, hi=32767)],
         outputs=[T('int16', [13], quant=(0.007, 0))], golden='native'),
    Case('dequantize_int16_4x5', 'DEQUANTIZE', inputs=[T('int16', [4, 5], quant=(0.00123, 0), lo=-32768, hi=32767)],
         outputs=[T('float32', [4, 5])], version=3, golden='native'),
]

# int16 ADD / SUB / MUL of the int16x8 models: symmetric int16, the general path
# (pot_scale_int16 false, as the converter writes it), broadcasting, fused activations.
_I16 = dict(lo=-32768, hi=32767)
CASES += [
    Case('add_int16_3x5_general', 'ADD',
         inputs=[T('int16', [3, 5], quant=(0.0003, 0), **_I16), T('int16', [3, 5], quant=(0.0007, 0), **_I16)],
         outputs=[T('int16', [3, 5], quant=(0.0009, 0))],
         options=('AddOptions', {'fused_activation_function': 0, 'pot_scale_int16': False}), version=3,
         golden='native'),
    Case('add_int16_2x3x4_4_bcast_relu', 'ADD',
         inputs=[T('int16', [2, 3, 4], quant=(0.001, 0), **_I16), T('int16', [4], quant=(0.0005, 0), const=True, **_I16)],
         outputs=[T('int16', [2, 3, 4], quant=(0.0011, 0))],
         options=('AddOptions', {'fused_activation_function': 1, 'pot_scale_int16': False}), version=3,
         golden='native'),
    Case('sub_int16_4x6_general', 'SUB',
         inputs=[T('int16', [4, 6], quant=(0.002, 0), **_I16), T('int16', [4, 6], quant=(0.0015, 0), **_I16)],
         outputs=[T('int16', [4, 6], quant=(0.003, 0))],
         options=('SubOptions', {'fused_activation_function': 0, 'pot_scale_int16': False}), version=3,
         golden='native'),
    Case('mul_int16_3x7', 'MUL',
         inputs=[T('int16', [3, 7], quant=(0.001, 0), **_I16), T('int16', [3, 7], quant=(0.002, 0), **_I16)],
         outputs=[T('int16', [3, 7], quant=(0.05, 0))],
         options=('MulOptions', {'fused_activation_function': 0}), version=4, golden='native'),
    Case('mul_int16_2x5_5_bcast_relu6', 'MUL',
         inputs=[T('int16', [2, 5], quant=(0.0002, 0), **_I16), T('int16', [5], quant=(0.0003, 0), const=True, **_I16)],
         outputs=[T('int16', [2, 5], quant=(0.0004, 0))],
         options=('MulOptions', {'fused_activation_function': 3}), version=4, golden='native'),
]

# int16 RELU / RELU6 (TFLite's ReluX: rescale from the input to the output scale, then clamp).
CASES += [
    Case('relu_int16_4x9', 'RELU', inputs=[T('int16', [4, 9], quant=(0.001, 0), **_I16)],
         outputs=[T('int16', [4, 9], quant=(0.0007, 0))], version=3, golden='native'),
    Case('relu6_int16_3x8', 'RELU6', inputs=[T('int16', [3, 8], quant=(0.0004, 0), **_I16)],
         outputs=[T('int16', [3, 8], quant=(0.0002, 0))], version=1, golden='native'),
]
