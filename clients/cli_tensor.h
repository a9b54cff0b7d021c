/* cli_tensor.h - arenactl's tensor helpers shared by `invoke` (through the daemon) and `run`
 * (offline): an image as a model input of any image dtype (float32, uint8, int8), a classifier's
 * top K classes and a TFLite_Detection_PostProcess output as label / score / box rows, with labels
 * read from a text file (one label per line).
 *
 * Both commands describe tensors with ar_cli_tensor_t, a view that does not own its data: the
 * daemon's reply (ar_client_tensor_t) or the interpreter's tensor (ar_tview_t).
 */
#ifndef AR_CLI_TENSOR_H
#define AR_CLI_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clients/image.h"

#define AR_CLI_MAX_RANK 8

/* A tensor view: TFLite TensorType `dtype`, shape, raw little-endian data, and its per-tensor
 * quantization (has_quant false: none; per-axis tensors are read with their first pair). */
typedef struct ar_cli_tensor {
  const char *name;
  int32_t dtype;
  int32_t rank;
  int64_t dims[AR_CLI_MAX_RANK];
  const void *data;
  uint64_t bytes;
  bool has_quant;
  float scale;
  int64_t zero_point;
} ar_cli_tensor_t;

/* Number of elements of `t` (bytes / element size; 0 for an unknown dtype). */
uint64_t ar_cli_elements(const ar_cli_tensor_t *t);

/* Element i as a real value: float32 as is, quantized integers (float(q) - zero_point) * scale,
 * other integers and bool converted; NAN for an index out of range or another dtype. */
float ar_cli_value(const ar_cli_tensor_t *t, uint64_t i);

/* --image options: the photo, how it is fitted, an optional crop, an optional value range. */
typedef struct ar_cli_image_opts {
  const char *path;
  ar_image_fit_t fit;
  bool has_crop;
  ar_image_rect_t crop;
  bool has_range;                /* --range given; float inputs default to 0,1 */
  float lo, hi;
  int border;                    /* --border: pixel value 0..255 of the letterbox border (default 0,
                                  * black; Ultralytics' YOLO letterbox uses 114) */
} ar_cli_image_opts_t;

/* Where the photo went: its size, the crop used, and the rectangle of the tensor it fills (so a
 * normalised box of the tensor maps back to photo pixels). */
typedef struct ar_cli_image_geom {
  uint32_t img_w, img_h;
  ar_image_rect_t crop;          /* in the photo */
  ar_image_rect_t placed;        /* in the tensor */
  uint32_t tensor_w, tensor_h;
} ar_cli_image_geom_t;

/* Build the input tensor for `desc` (its dtype, shape [1,H,W,3] or [1,H,W,1] and quantization)
 * from the photo (a one-channel input gets Pillow's convert("L") luma, ar_image_to_gray, before
 * the resize): float32 as clients/image.h scales it (range default 0,1), uint8/int8 coded as
 * ar_image_code_pixels describes (pixels as codes without --range). *data (malloc'd, caller frees)
 * holds *bytes bytes. Errors: AR_EINVAL (not a [1,H,W,3|1] input of those dtypes, bad crop),
 * the image errors of ar_image_load, AR_ENOMEM; msg says which. */
int ar_cli_image_input(const ar_cli_image_opts_t *o, const ar_cli_tensor_t *desc, void **data, uint64_t *bytes,
                       ar_cli_image_geom_t *geom, char *msg, size_t msg_bytes);

/* Labels: one per line (trailing newline optional, "\r\n" accepted). */
typedef struct ar_cli_labels {
  char **line;
  size_t n;
  char *text;
} ar_cli_labels_t;

/* Read `path`. Errors: AR_ENOENT/AR_EIO, AR_ENOMEM, AR_EINVAL (empty or larger than 16 MiB). */
int ar_cli_labels_load(const char *path, ar_cli_labels_t *l, char *msg, size_t msg_bytes);
void ar_cli_labels_free(ar_cli_labels_t *l);
/* Label of class c: line c + offset, or "" when out of range or there are no labels. */
const char *ar_cli_label(const ar_cli_labels_t *l, int64_t c, int offset);

/* Print the top k classes of a classifier output (the last dimension holds the classes; a batch
 * of 1): "  top 1: class 286 (q 213) 0.832 Egyptian cat" per line (the q part for quantized
 * outputs), highest first, the lower index first among equal scores. Labels: line class + offset.
 * Returns 0, or AR_EINVAL when the output is empty or not real-valued. */
int ar_cli_print_top(FILE *f, const ar_cli_tensor_t *t, int k, const ar_cli_labels_t *l, int offset);

/* Print the detections of a TFLite_Detection_PostProcess output (outs: boxes [1,N,4] ymin, xmin,
 * ymax, xmax normalised to the input; classes [1,N]; scores [1,N]; count [1]) with score >=
 * min_score, one row each:
 *   "  det 0: class 0 score 0.641 box y 0.023..0.991 x 0.181..0.742 crop 93,12,380,508 person"
 * where crop (L,T,R,B photo pixels, the form --crop takes) appears when geom is not NULL. Labels:
 * line class + offset (1 for SSD label maps, whose line 0 is "???"). Returns 0, or AR_EINVAL when
 * the outputs do not have those shapes. */
int ar_cli_print_detections(FILE *f, const ar_cli_tensor_t outs[4], float min_score, const ar_cli_labels_t *l,
                            int offset, const ar_cli_image_geom_t *geom);

/* The options `invoke` and `run` share. Image: --image FILE, --range LO,HI, --fit stretch|letterbox,
 * --crop L,T,R,B, --border PIXEL. Results: --labels FILE, --top K, --detections, --min-score S, --label-offset N. */
typedef struct ar_cli_result_opts {
  const char *labels_path;
  int top;                       /* 0: none (5 when only --labels is given) */
  bool detections;
  float min_score;               /* default 0.5 */
  int label_offset;              /* -1: default (1 for --detections, 0 for --top) */
  int output_index;              /* --output-index J: the output --top ranks; -1: chosen (see ar_cli_top_output) */
} ar_cli_result_opts_t;

#define AR_CLI_LONGOPTS                                                                         \
  {"image", required_argument, NULL, 'I'}, {"range", required_argument, NULL, 'r'},            \
      {"fit", required_argument, NULL, 'f'}, {"crop", required_argument, NULL, 'c'},            \
      {"labels", required_argument, NULL, 'L'}, {"top", required_argument, NULL, 'k'},          \
      {"detections", no_argument, NULL, 'D'}, {"min-score", required_argument, NULL, 'm'},      \
      {"label-offset", required_argument, NULL, 'O'}, {"border", required_argument, NULL, 'B'},   \
      {"output-index", required_argument, NULL, 'X'}
#define AR_CLI_SHORTOPTS "I:r:f:c:L:k:Dm:O:B:"
#define AR_CLI_USAGE                                                                            \
  "IMAGE:   --image FILE.png|jpg [--range LO,HI] [--fit stretch|letterbox] [--crop L,T,R,B]"      \
  " [--border PIXEL]\n"                                                                        \
  "RESULTS: [--labels FILE] [--top K] [--output-index J] | --detections [--labels FILE]"        \
  " [--min-score S] [--label-offset N]\n"

/* Defaults of both option sets. */
void ar_cli_opts_init(ar_cli_image_opts_t *io, ar_cli_result_opts_t *ro);

/* Take getopt's option `o` with argument `arg` if it is one of the shared ones: returns 1 when
 * taken, 0 when it is not a shared option, -1 for a bad value (the message, naming `cmd`, is on
 * stderr). */
int ar_cli_parse_opt(const char *cmd, int o, const char *arg, ar_cli_image_opts_t *io, ar_cli_result_opts_t *ro);

/* After parsing: check the combination (--top with --detections) and apply the defaults. Returns
 * 0, or -1 (message on stderr). */
int ar_cli_opts_finish(const char *cmd, ar_cli_result_opts_t *ro);

/* The output --top ranks among the n outputs: `index` when >= 0 (--output-index; AR_EINVAL when
 * out of range), the only output, else the one output of a classifier's shape (real values,
 * every dimension but the last 1: [1,C]). Four outputs of TFLite_Detection_PostProcess's shapes are
 * refused (use --detections), and so are several or no classifier-shaped outputs: msg lists the
 * outputs (index, name, shape) and names --output-index. Returns the index or AR_EINVAL. */
int ar_cli_top_output(const ar_cli_tensor_t *outs, int n, int index, char *msg, size_t msg_bytes);

/* Print what the result options ask for from the n outputs: top K of one output (ar_cli_top_output), or the detection
 * rows of outputs 0..3 (geom: the --image geometry, or NULL). Returns 0, or 1 after a message on
 * stderr (labels unreadable, outputs of the wrong kind). */
int ar_cli_print_results(const char *cmd, const ar_cli_result_opts_t *ro, const ar_cli_tensor_t *outs, int n,
                         const ar_cli_image_geom_t *geom);

#endif /* AR_CLI_TENSOR_H */
