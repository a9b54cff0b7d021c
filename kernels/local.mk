# kernels: rules for this layer (see top Makefile.am).
# Convolution family (conv, depthwise, transpose conv, fully connected) and the shared helpers.
libarkernels_la_SOURCES += kernels/ar_kernel_impl.h kernels/conv_util.h kernels/common.c \
  kernels/ar_parallel.h kernels/parallel.c kernels/gemm.h kernels/gemm.c \
  kernels/ar_isa.h kernels/ar_isa.c kernels/sgemm.h kernels/sgemm.c kernels/sgemm512.h kernels/sgemm512.c \
  kernels/sgemm256.h kernels/sgemm256.c kernels/gemm_f32_neon.h kernels/gemm_f32_8x8_neon.c \
  kernels/ar_quant.h kernels/quant.c \
  kernels/conv.c kernels/depthwise.c kernels/fused_ir.c kernels/qdepthwise.c kernels/transpose_conv.c kernels/fully_connected.c \
  kernels/qconv.h kernels/qconv.c kernels/qgemm.h kernels/qgemm.c \
  kernels/gemm_qs8_neon.h kernels/gemm_qs8_2x16c4_neon.c kernels/gemm_qs8_4x16c4_neondot.c \
  kernels/requant_neon.h \
  kernels/qwide.h kernels/qwide.c \
  kernels/sparse_conv.h kernels/sparse_conv.c \
  kernels/batch_matmul.c
# GCC 12's -O3 set for the vectorized loops, spelled out because the user's CFLAGS (-O2) come
# last on the command line and would override a plain -O3; explicit -f flags survive a later -O2.
# Portable: no -march; the AVX2+FMA clones of the hot loops are picked at run time.
libarkernels_la_CFLAGS += -fvect-cost-model=dynamic -fpeel-loops -funswitch-loops \
  -fpredictive-commoning -fipa-cp-clone -fsplit-loops -fsplit-paths -ftree-partial-pre \
  -fgcse-after-reload -ftree-loop-distribution -fversion-loops-for-strides -floop-interchange \
  -floop-unroll-and-jam
check_PROGRAMS += tests/check_kernels_conv
TESTS += tests/check_kernels_conv
tests_check_kernels_conv_SOURCES = tests/check_kernels_conv.c
tests_check_kernels_conv_CFLAGS = $(TEST_CFLAGS) $(OPENBLAS_CFLAGS)
tests_check_kernels_conv_LDADD = libarkernels.la libarloader.la libarcommon.la $(TEST_LIBS) $(OPENBLAS_LIBS)
# CONV_2D 1x1 / FULLY_CONNECTED on sparse weights as stored: generated TFLite sparse tensors (odd
# sizes, empty rows, blocks) against DENSIFY + a naive product and the dense kernels; every loop ==
# portable; a generated model through the interpreter (covered filter elided, uncovered one dense).
check_PROGRAMS += tests/check_kernels_sparse
TESTS += tests/check_kernels_sparse
tests_check_kernels_sparse_SOURCES = tests/check_kernels_sparse.c
tests_check_kernels_sparse_CFLAGS = $(TEST_CFLAGS)
tests_check_kernels_sparse_LDADD = $(AR_CORE_LIBS) $(TEST_LIBS)
# Quantized depthwise, pooling and MEAN: hand-computed values and SIMD == portable.
check_PROGRAMS += tests/check_kernels_quant_dw
TESTS += tests/check_kernels_quant_dw
tests_check_kernels_quant_dw_SOURCES = tests/check_kernels_quant_dw.c
tests_check_kernels_quant_dw_CFLAGS = $(TEST_CFLAGS)
tests_check_kernels_quant_dw_LDADD = libarkernels.la libarloader.la libarcommon.la $(TEST_LIBS) $(OPENBLAS_LIBS)
# Quantized CONV_2D / FULLY_CONNECTED and the fixed-point helpers (hand-computed values, every
# integer GEMM path the CPU supports against a naive reference).
check_PROGRAMS += tests/check_quant
TESTS += tests/check_quant
tests_check_quant_SOURCES = tests/check_quant.c
tests_check_quant_CFLAGS = $(TEST_CFLAGS)
tests_check_quant_LDADD = libarkernels.la libarloader.la libarcommon.la $(TEST_LIBS) $(OPENBLAS_LIBS)
# bench/qconv: median time and GOP/s of the quantized CONV_2D per integer GEMM path.
noinst_PROGRAMS += bench/qconv
bench_qconv_SOURCES = bench/qconv.c
bench_qconv_CFLAGS = $(AM_CFLAGS)
bench_qconv_LDADD = libarkernels.la libarloader.la libarcommon.la $(OPENBLAS_LIBS) -lm
# bench/qdepthwise: median time and GOP/s of the quantized depthwise loops (MobileNet v1 layers).
noinst_PROGRAMS += bench/qdepthwise
bench_qdepthwise_SOURCES = bench/qdepthwise.c
bench_qdepthwise_CFLAGS = $(AM_CFLAGS)
bench_qdepthwise_LDADD = libarkernels.la libarloader.la libarcommon.la $(OPENBLAS_LIBS) -lm
# bench/sparse: the sparse 1x1 CONV_2D against the dense kernel on a model's sparse layers.
noinst_PROGRAMS += bench/sparse
bench_sparse_SOURCES = bench/sparse.c
bench_sparse_CFLAGS = $(AM_CFLAGS)
bench_sparse_LDADD = libarkernels.la libarloader.la libarcommon.la $(OPENBLAS_LIBS) -lm
# bench/kernels: median time and GFLOP/s of the convolution-family kernels on model shapes.
noinst_PROGRAMS += bench/kernels
bench_kernels_SOURCES = bench/kernels.c
bench_kernels_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
bench_kernels_LDADD = libarkernels.la libarloader.la libarcommon.la $(OPENBLAS_LIBS) -lm
# Everything except convolutions: elementwise, pools, resize, shape ops, MEAN, DEQUANTIZE/DENSIFY,
# and the op -> kernel registry.
libarkernels_la_SOURCES += kernels/ar_kernel_check.h kernels/registry.c kernels/elementwise.c \
  kernels/pool.c kernels/resize.c kernels/shape_ops.c kernels/reduce.c kernels/convert.c
check_PROGRAMS += tests/check_kernels
TESTS += tests/check_kernels
tests_check_kernels_SOURCES = tests/check_kernels.c
tests_check_kernels_CFLAGS = $(TEST_CFLAGS)
tests_check_kernels_LDADD = libarkernels.la libarloader.la libarcommon.la $(TEST_LIBS) $(OPENBLAS_LIBS)
# Shape and index ops (slices, transpose, tile, broadcast, split/pack, squeeze), one strided-copy
# engine under most of them; their hand-computed tests are tests/check_kernels_index.c.
libarkernels_la_SOURCES += kernels/strided.h kernels/strided.c kernels/slice.c kernels/pack.c \
  kernels/gather.c kernels/detection_postprocess.c
check_PROGRAMS += tests/check_kernels_index
TESTS += tests/check_kernels_index
tests_check_kernels_index_SOURCES = tests/check_kernels_index.c
tests_check_kernels_index_CFLAGS = $(TEST_CFLAGS)
tests_check_kernels_index_LDADD = libarkernels.la libarloader.la libarcommon.la $(TEST_LIBS) $(OPENBLAS_LIBS)
check_PROGRAMS += tests/check_kernels_detect
TESTS += tests/check_kernels_detect
tests_check_kernels_detect_SOURCES = tests/check_kernels_detect.c
tests_check_kernels_detect_CFLAGS = $(TEST_CFLAGS)
tests_check_kernels_detect_LDADD = libarkernels.la libarloader.la libarcommon.la $(TEST_LIBS) $(OPENBLAS_LIBS)
# Issue 28's operators by family: boolean ops and SELECT, float functions, index/shape ops.
libarkernels_la_SOURCES += kernels/logical.c kernels/math_ops.c kernels/index_ops.c \
  kernels/qact.c kernels/space_ops.c kernels/segment_ops.c
# Audio front ends: TFLite's RFFT2D / COMPLEX_ABS / REAL / IMAG, TFLite Micro's Signal custom ops.
libarkernels_la_SOURCES += kernels/audio.c kernels/signal.c kernels/signal_kissfft.h kernels/posenet.c
# Their hand-computed tests and the two real models of ../shared/models_more (skipped when absent).
check_PROGRAMS += tests/check_audio
TESTS += tests/check_audio
tests_check_audio_SOURCES = tests/check_audio.c $(AR_TEST_STREAM_SOURCES)
tests_check_audio_CFLAGS = $(TEST_CFLAGS) $(OPENBLAS_CFLAGS)
tests_check_audio_LDADD = $(AR_CORE_LIBS) $(TEST_LIBS)
# Math kernels: broadcasting binary/compare/select, unary and CAST, softmax family (reductions
# live in reduce.c above), the recurrent ops (SVDF, LSTM float and integer, RNN); hand-computed
# tests in tests/check_kernels_math.c.
libarkernels_la_SOURCES += kernels/binary.c kernels/unary.c kernels/softmax.c kernels/svdf.c kernels/variable.c \
  kernels/lstm.h kernels/lstm.c kernels/lstm_int.c kernels/ar_fx16.h kernels/ar_lut16.h kernels/rnn.c
check_PROGRAMS += tests/check_kernels_math
TESTS += tests/check_kernels_math
tests_check_kernels_math_SOURCES = tests/check_kernels_math.c
tests_check_kernels_math_CFLAGS = $(TEST_CFLAGS)
tests_check_kernels_math_LDADD = libarkernels.la libarloader.la libarcommon.la $(TEST_LIBS) $(OPENBLAS_LIBS)
# Single-operator models (tools/ops/golden.py) against LiteRT goldens in tests/golden/ops.
check_PROGRAMS += tests/check_ops_golden
TESTS += tests/check_ops_golden
tests_check_ops_golden_SOURCES = tests/check_ops_golden.c
tests_check_ops_golden_CFLAGS = $(TEST_CFLAGS) $(OPENBLAS_CFLAGS)
tests_check_ops_golden_LDADD = $(AR_CORE_LIBS) $(TEST_LIBS)
# 8-bit forms of the elementwise, shape and activation kernels (issue 9); hand-computed tests.
libarkernels_la_SOURCES += kernels/ar_qparams.h
check_PROGRAMS += tests/check_kernels_quant_elem
TESTS += tests/check_kernels_quant_elem
tests_check_kernels_quant_elem_SOURCES = tests/check_kernels_quant_elem.c
tests_check_kernels_quant_elem_CFLAGS = $(TEST_CFLAGS)
tests_check_kernels_quant_elem_LDADD = libarkernels.la libarloader.la libarcommon.la $(TEST_LIBS) $(OPENBLAS_LIBS)
# kernels/ar_isa.c: OpenBLAS's core replaced when it picked an SSE3-era one (the user's
# OPENBLAS_CORETYPE kept), sgemm/sgemv right on every core the CPU has, the float level switch and
# the report arenactl --version prints.
check_PROGRAMS += tests/check_isa
TESTS += tests/check_isa
tests_check_isa_SOURCES = tests/check_isa.c
tests_check_isa_CFLAGS = $(TEST_CFLAGS) $(OPENBLAS_CFLAGS)
tests_check_isa_LDADD = $(AR_CORE_LIBS) $(TEST_LIBS)
# The kernels' declarative support lists (ar_kernel_t.support) against their prepare.
check_PROGRAMS += tests/check_kernel_forms
TESTS += tests/check_kernel_forms
tests_check_kernel_forms_SOURCES = tests/check_kernel_forms.c
tests_check_kernel_forms_CFLAGS = $(TEST_CFLAGS)
tests_check_kernel_forms_LDADD = libarkernels.la libarloader.la libarcommon.la $(TEST_LIBS) $(OPENBLAS_LIBS) $(JANSSON_LIBS)
