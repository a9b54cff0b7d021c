"""SVDF's integer and hybrid forms (kernels/svdf.c), golden from native TFLite's builtin kernels
(golden='native': byte-exact for the int8 output). One invoke from the reset state; the streams
of several invokes are tests/golden/streams/svdf_* (check_stream). Inputs: x [batch, input_size],
weights_feature [filters, input_size], weights_time [filters, memory], bias [filters / rank]
(optional), state [batch, memory * filters] a variable tensor."""
from oplib import Case, T


def _int8(name, batch, inp, filters, memory, rank, bias=True, in_q=(0.05, 3), out_q=(0.2, -20), act=1):
    """TFLite's full-integer SVDF: int8 input and weights_feature, int16 weights_time and state."""
    s_in = in_q[0]
    ins = [T('int8', [batch, inp], quant=in_q, lo=-128, hi=127),
           T('int8', [filters, inp], quant=(0.01, 0), const=True, lo=-127, hi=127),
           T('int16', [filters, memory], quant=(1.0 / 8192, 0), const=True, lo=-8192, hi=8192),
           T('int32', [filters // rank], quant=(s_in * 0.01, 0), const=True, lo=-20000, hi=20000)
           if bias else None,
           T('int16', [batch, memory * filters], quant=(0.001, 0), variable=True)]
    return Case(name, 'SVDF', inputs=ins, outputs=[T('int8', [batch, filters // rank], quant=out_q)],
                options=('SVDFOptions', {'rank': rank, 'fused_activation_function': act}), version=3,
                golden='native')


def _hybrid(name, batch, inp, filters, memory, rank, asym):
    """The hybrid form: float input, bias, state and output, int8 weights."""
    ins = [T('float32', [batch, inp]),
           T('int8', [filters, inp], quant=(0.01, 0), const=True, lo=-127, hi=127),
           T('int8', [filters, memory], quant=(0.006, 0), const=True, lo=-127, hi=127),
           T('float32', [filters // rank], const=True, lo=-0.2, hi=0.2),
           T('float32', [batch, memory * filters], variable=True)]
    return Case(name, 'SVDF', inputs=ins, outputs=[T('float32', [batch, filters // rank])],
                options=('SVDFOptions', {'rank': rank, 'fused_activation_function': 0,
                                         'asymmetric_quantize_inputs': asym}),
                version=4 if asym else 2, golden='native')


CASES = [
    _int8('svdf_int8_b1_i16_f8_m4_r1', 1, 16, 8, 4, 1),
    _int8('svdf_int8_b2_i5_f8_m3_r2', 2, 5, 8, 3, 2),
    _int8('svdf_int8_b3_i7_f6_m10_r3_nobias', 3, 7, 6, 10, 3, bias=False, in_q=(0.1, -128),
          out_q=(0.05, -128)),
    _hybrid('svdf_hybrid_b2_i6_f8_m3_r2', 2, 6, 8, 3, 2, False),
    _hybrid('svdf_hybrid_asym_b2_i6_f8_m3_r2', 2, 6, 8, 3, 2, True),
]
