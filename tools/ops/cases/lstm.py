"""UNIDIRECTIONAL_SEQUENCE_LSTM and LSTM, float32 (kernels/lstm.c), then UNIDIRECTIONAL_SEQUENCE_RNN and
RNN (kernels/rnn.c). LSTM: the variants the LSTM models of
../shared/models_state do not use - CIFG, peephole, projection with and without bias, cell and
projection clips, layer norm (with and without CIFG), time-major and batch-major, cell
activations other than TANH (NONE included: TFLite's quirk of leaving the cell gate in place of
act(cell) is kept). Goldens from native TFLite 2.19 (one invoke from zero state; a sequence of 3
steps carries the state from step to step inside it)."""
from oplib import Case, T

CASES = []

NB, NT, NI, NC = 2, 3, 3, 4


def _w(shape):
    return T('float32', shape, const=True, lo=-0.6, hi=0.6)


def lstm_case(name, seq=True, time_major=True, cifg=False, peephole=False, proj=False, proj_bias=False,
              layer_norm=False, act=4, cell_clip=0.0, proj_clip=0.0, n_output=None):
    no = n_output or (3 if proj else NC)
    ins = [T('float32', ([NT, NB, NI] if time_major else [NB, NT, NI]) if seq else [NB, NI])]
    ins += [None if cifg else _w([NC, NI])] + [_w([NC, NI]) for _ in range(3)]
    ins += [None if cifg else _w([NC, no])] + [_w([NC, no]) for _ in range(3)]
    ins += [None if (cifg or not peephole) else _w([NC])] + [_w([NC]) if peephole else None for _ in range(2)]
    ins += [None if cifg else _w([NC])] + [_w([NC]) for _ in range(3)]
    ins += [_w([no, NC]) if proj else None, _w([no]) if proj_bias else None]
    ins += [T('float32', [NB, no], variable=True), T('float32', [NB, NC], variable=True)]
    if layer_norm:
        ins += [None if cifg else _w([NC])] + [_w([NC]) for _ in range(3)]
    if seq:
        out = [NT, NB, no] if time_major else [NB, NT, no]
        opts = ('UnidirectionalSequenceLSTMOptions', {'fused_activation_function': act, 'cell_clip': cell_clip,
                                                      'proj_clip': proj_clip, 'time_major': time_major})
        op = 'UNIDIRECTIONAL_SEQUENCE_LSTM'
    else:
        out = [NB, no]
        opts = ('LSTMOptions', {'fused_activation_function': act, 'cell_clip': cell_clip, 'proj_clip': proj_clip})
        op = 'LSTM'
    return Case(name, op, ins, [T('float32', out)], options=opts, golden='native')


CASES += [
    lstm_case('uslstm_basic_time_major'),
    lstm_case('uslstm_batch_major', time_major=False),
    lstm_case('uslstm_peephole', peephole=True),
    lstm_case('uslstm_cifg', cifg=True),
    lstm_case('uslstm_cifg_peephole_batch_major', cifg=True, peephole=True, time_major=False),
    lstm_case('uslstm_projection_clips', proj=True, proj_bias=True, cell_clip=0.3, proj_clip=0.2),
    lstm_case('uslstm_projection_no_bias', proj=True),
    lstm_case('uslstm_layer_norm', layer_norm=True),
    lstm_case('uslstm_layer_norm_cifg_peephole', layer_norm=True, cifg=True, peephole=True),
    lstm_case('uslstm_act_relu6', act=3),
    lstm_case('uslstm_act_none', act=0),
    lstm_case('lstm_step_projection_peephole', seq=False, proj=True, proj_bias=True, peephole=True, cell_clip=0.4),
    lstm_case('lstm_step_layer_norm', seq=False, layer_norm=True),
]


# UNIDIRECTIONAL_SEQUENCE_RNN and RNN (kernels/rnn.c): out = act(bias + W x + R h), h = out.
def rnn_case(name, seq=True, time_major=False, act=1, nu=5):
    ins = [T('float32', ([NT, NB, NI] if time_major else [NB, NT, NI]) if seq else [NB, NI]),
           _w([nu, NI]), _w([nu, nu]), _w([nu]), T('float32', [NB, nu], variable=True)]
    if seq:
        out = [NT, NB, nu] if time_major else [NB, NT, nu]
        return Case(name, 'UNIDIRECTIONAL_SEQUENCE_RNN', ins, [T('float32', out)],
                    options=('SequenceRNNOptions', {'time_major': time_major, 'fused_activation_function': act}),
                    golden='native')
    return Case(name, 'RNN', ins, [T('float32', [NB, nu])], options=('RNNOptions', {'fused_activation_function': act}),
                golden='native')


CASES += [
    rnn_case('usrnn_batch_major_relu'),
    rnn_case('usrnn_time_major_tanh', time_major=True, act=4),
    rnn_case('usrnn_batch_major_none', act=0),
    rnn_case('rnn_step_relu6', seq=False, act=3),
]
