/* variable.c - TFLite resource variables: VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE.
 *
 * A RESOURCE tensor (VAR_HANDLE's output) has no bytes of its own: the interpreter points its view
 * at the variable's bytes in the persistent region (one variable per (container, shared_name)
 * across every subgraph, sized at load from the ASSIGN_VARIABLE values writing it, and every
 * READ_VARIABLE output and ASSIGN_VARIABLE value checked there to have the variable's dtype and
 * byte size: interp/ar_interp.c). So VAR_HANDLE does nothing at invoke, READ_VARIABLE copies the
 * variable into its output and ASSIGN_VARIABLE copies its value into the variable (TFLite's
 * kernels/read_variable.cc, assign_variable.cc: the variable takes the value's shape).
 */
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"

static int var_handle_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  if (node->n_inputs != 0 || node->n_outputs != 1 || !node->outputs[0])
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "%d inputs and %d outputs (0 and 1 expected)",
                    (int)node->n_inputs, (int)node->n_outputs);
  if (node->outputs[0]->dtype != AR_DTYPE_RESOURCE)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "output 0 has dtype %s (RESOURCE expected)",
                    ar_dtype_name(node->outputs[0]->dtype));
  return 0;
}
static void var_handle_eval(const ar_node_t *node) { (void)node; }

static int read_variable_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  if (node->n_inputs != 1 || node->n_outputs != 1 || !node->inputs[0] || !node->outputs[0])
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "%d inputs and %d outputs (1 and 1 expected)",
                    (int)node->n_inputs, (int)node->n_outputs);
  if (node->inputs[0]->dtype != AR_DTYPE_RESOURCE || node->outputs[0]->dtype == AR_DTYPE_RESOURCE)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "input 0 has dtype %s, output 0 %s (RESOURCE and a "
                    "value expected)", ar_dtype_name(node->inputs[0]->dtype), ar_dtype_name(node->outputs[0]->dtype));
  return 0;
}
static void read_variable_eval(const ar_node_t *node) {
  if (node->outputs[0]->data != node->inputs[0]->data)
    memcpy(node->outputs[0]->data, node->inputs[0]->data, (size_t)node->outputs[0]->bytes);
}

static int assign_variable_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  if (node->n_inputs != 2 || node->n_outputs != 0 || !node->inputs[0] || !node->inputs[1])
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "%d inputs and %d outputs (2 and 0 expected)",
                    (int)node->n_inputs, (int)node->n_outputs);
  if (node->inputs[0]->dtype != AR_DTYPE_RESOURCE || node->inputs[1]->dtype == AR_DTYPE_RESOURCE)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "input 0 has dtype %s, input 1 %s (RESOURCE and a "
                    "value expected)", ar_dtype_name(node->inputs[0]->dtype), ar_dtype_name(node->inputs[1]->dtype));
  return 0;
}
static void assign_variable_eval(const ar_node_t *node) {
  if (node->inputs[0]->data != node->inputs[1]->data)
    memcpy(node->inputs[0]->data, node->inputs[1]->data, (size_t)node->inputs[1]->bytes);
}

static const ar_kernel_form_t var_handle_forms[] = {
  {1, 1, AR_KF_SAME, AR_KF_SAME, (int8_t)AR_DTYPE_RESOURCE},
};
const ar_kernel_t ar_kernel_var_handle = {"VAR_HANDLE", var_handle_prepare, NULL, var_handle_eval,
  AR_KSUPPORT(var_handle_forms, -1, -1) };
static const ar_kernel_form_t read_variable_forms[] = {
  AR_KF(1, 1, RESOURCE, FLOAT32),
  AR_KF(1, 1, RESOURCE, INT32),
  AR_KF(1, 1, RESOURCE, INT64),
  AR_KF(1, 1, RESOURCE, UINT8),
  AR_KF(1, 1, RESOURCE, INT8),
  AR_KF(1, 1, RESOURCE, INT16),
  AR_KF(1, 1, RESOURCE, BOOL),
};
const ar_kernel_t ar_kernel_read_variable = {"READ_VARIABLE", read_variable_prepare, NULL, read_variable_eval,
  AR_KSUPPORT(read_variable_forms, 0, -1) };
static const ar_kernel_form_t assign_variable_forms[] = {
  {1, 1, (int8_t)AR_DTYPE_FLOAT32, AR_KF_SAME, AR_KF_SAME},
  {1, 1, (int8_t)AR_DTYPE_INT32, AR_KF_SAME, AR_KF_SAME},
  {1, 1, (int8_t)AR_DTYPE_INT64, AR_KF_SAME, AR_KF_SAME},
  {1, 1, (int8_t)AR_DTYPE_UINT8, AR_KF_SAME, AR_KF_SAME},
  {1, 1, (int8_t)AR_DTYPE_INT8, AR_KF_SAME, AR_KF_SAME},
  {1, 1, (int8_t)AR_DTYPE_INT16, AR_KF_SAME, AR_KF_SAME},
  {1, 1, (int8_t)AR_DTYPE_BOOL, AR_KF_SAME, AR_KF_SAME},
};
const ar_kernel_t ar_kernel_assign_variable = {"ASSIGN_VARIABLE", assign_variable_prepare, NULL,
                                               assign_variable_eval,
  AR_KSUPPORT(assign_variable_forms, 1, -1) };
