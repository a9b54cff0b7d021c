"""UNIDIRECTIONAL_SEQUENCE_LSTM and LSTM in TFLite's integer 8x8_16 form (kernels/lstm_int.c): int8
input, output and output state, int16 cell state (scale 2^-11 or 2^-12), int8 weights, int32
biases, int16 peephole weights, and the five intermediate tensors whose fifth carries the hidden
state's scale (the first four, the layer-norm gate scales, are unquantized float32 [0] as the
converter writes them without layer norm). The variants the int8 models of ../shared/models_state
do not use: CIFG, peephole, projection with and without bias, cell and projection clips,
batch-major, the one-step LSTM; layer normalization (inputs 20..23 int16 coefficients of scale 2^-10, the gate
biases applied after the norm, intermediates 0..3 int16 carrying the gates' scales before it) plain,
with CIFG, with peephole and with projection. Goldens from native TFLite 2.19 (golden='native', byte for byte;
one invoke from the reset state, the sequence of 3 steps carrying the state inside it). The output
state's zero point is 0 here: the interpreter resets int8 variables to 0, TFLite to the zero
point (the same for 0)."""
from oplib import Case, T

NB, NT, NI, NC = 2, 3, 5, 4
S_IN, S_W, S_OS = 0.05, 0.02, 0.03
# Layer norm: the coefficients' scale, and the gates' scales before the norm (intermediates 0..3).
S_LN = 2.0 ** -10
LN_GATE_SCALES = (0.004, 0.0035, 0.005, 0.003)


def _w(shape, s=S_W):
    return T('int8', shape, const=True, lo=-127, hi=127, quant=(s, 0))


def _bias(n, s, r=3000):
    return T('int32', [n], const=True, lo=-r, hi=r, quant=(s, 0))


def lstmq_case(name, seq=True, time_major=True, cifg=False, peephole=False, proj=False, proj_bias=False,
               cell_clip=0.0, proj_clip=0.0, cell_scale=2.0 ** -11, hidden=(0.007, 0), in_zp=3, ln=False, forget_ws=S_W):
    no = 3 if proj else NC
    inp = ([NT, NB, NI] if time_major else [NB, NT, NI]) if seq else [NB, NI]
    ins = [T('int8', inp, lo=-128, hi=127, quant=(S_IN, in_zp))]
    ins += [None if cifg else _w([NC, NI]), _w([NC, NI], forget_ws)] + [_w([NC, NI]) for _ in range(2)]
    ins += [None if cifg else _w([NC, no]), _w([NC, no], forget_ws)] + [_w([NC, no]) for _ in range(2)]
    pw = T('int16', [NC], const=True, lo=-3000, hi=3000, quant=(2.0 ** -12, 0))
    ins += [None if (cifg or not peephole) else pw] + [pw if peephole else None for _ in range(2)]
    # With layer norm the gate biases are added after the norm, in units of the coefficients' scale / 1024.
    bias = (lambda: _bias(NC, S_LN / 1024, 400000)) if ln else (lambda: _bias(NC, S_IN * S_W))
    ins += [None if cifg else bias()] + [bias() for _ in range(3)]
    ins += [_w([no, NC], 0.04) if proj else None, _bias(no, hidden[0] * 0.04) if proj_bias else None]
    ins += [T('int8', [NB, no], variable=True, quant=(S_OS if proj else hidden[0], 0)),
            T('int16', [NB, NC], variable=True, quant=(cell_scale, 0))]
    if ln:
        lnw = lambda: T('int16', [NC], const=True, lo=600, hi=1500, quant=(S_LN, 0))
        ins += [None if cifg else lnw()] + [lnw() for _ in range(3)]
    else:
        ins += [None, None, None, None]
    out_q = (S_OS, 0) if proj else hidden
    if ln:
        inter = [T('int16', [0], quant=(s, 0)) for s in LN_GATE_SCALES] + [T('int8', [0], quant=hidden)]
    else:
        inter = [T('float32', [0]) for _ in range(4)] + [T('int8', [0], quant=hidden)]
    if seq:
        out = [NT, NB, no] if time_major else [NB, NT, no]
        opts = ('UnidirectionalSequenceLSTMOptions', {'fused_activation_function': 4, 'cell_clip': cell_clip,
                                                      'proj_clip': proj_clip, 'time_major': time_major})
        op = 'UNIDIRECTIONAL_SEQUENCE_LSTM'
    else:
        out = [NB, no]
        opts = ('LSTMOptions', {'fused_activation_function': 4, 'cell_clip': cell_clip, 'proj_clip': proj_clip})
        op = 'LSTM'
    return Case(name, op, ins, [T('int8', out, quant=out_q)], options=opts, golden='native', version=1,
                intermediates=inter)


CASES = [
    lstmq_case('uslstm_int8_time_major'),
    lstmq_case('uslstm_int8_batch_major', time_major=False),
    lstmq_case('uslstm_int8_cifg', cifg=True, in_zp=-128),
    lstmq_case('uslstm_int8_peephole', peephole=True, cell_scale=2.0 ** -12),
    lstmq_case('uslstm_int8_cifg_peephole_clip', cifg=True, peephole=True, cell_clip=0.5),
    lstmq_case('uslstm_int8_projection', proj=True, proj_bias=True, hidden=(0.007, 4)),
    lstmq_case('uslstm_int8_projection_clips', proj=True, cell_clip=0.6, proj_clip=0.05, hidden=(0.007, -3)),
    lstmq_case('lstm_int8_step', seq=False),
    lstmq_case('uslstm_int8_ln', ln=True),
    lstmq_case('uslstm_int8_ln_cifg', ln=True, cifg=True, in_zp=-128),
    lstmq_case('uslstm_int8_ln_peephole', ln=True, peephole=True, cell_scale=2.0 ** -12, cell_clip=0.5),
    lstmq_case('uslstm_int8_ln_projection', ln=True, proj=True, proj_bias=True, hidden=(0.007, 4)),
    lstmq_case('lstm_int8_ln_step', ln=True, seq=False, time_major=False),
    # Forget-gate weights so small that the gate before the norm is -1..1: its variance truncates to
    # 0 and the guard max(1, (int)(10000 * 2^-10)) = 9 stands in for it.
    lstmq_case('uslstm_int8_ln_variance_guard', ln=True, forget_ws=2e-6),
]
