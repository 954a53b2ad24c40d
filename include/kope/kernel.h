/* kope kernel ABI.
 *
 * A candidate, a baseline and a reference are each one source file that
 * exports `kope_kernel`. kope allocates every input and output tensor and
 * owns their memory; the kernel reads its inputs, writes every element of its
 * outputs and returns 0 on success. Any other return value is a failure that
 * kope records as a runtime error.
 *
 * On the CPU `stream` is NULL. On CUDA it is the cudaStream_t that the kernel
 * must launch its work on; work on other streams must be synchronized before
 * the call returns.
 *
 * Inputs must not be modified. Outputs never alias inputs or each other.
 * Shapes and strides are in elements; strides of kope-allocated tensors are
 * contiguous row-major, but a kernel should read them rather than assume it.
 */
#ifndef KOPE_KERNEL_H_
#define KOPE_KERNEL_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kope_dtype {
  KOPE_F32 = 0,
  KOPE_F64 = 1,
  KOPE_F16 = 2,
  KOPE_BF16 = 3,
  KOPE_I32 = 4,
  KOPE_I64 = 5,
  KOPE_BOOL = 6 /* one byte: 0 or 1 */
} kope_dtype;

#define KOPE_MAX_DIMS 8

typedef struct kope_tensor {
  void* data; /* host pointer on the CPU, device pointer on CUDA */
  kope_dtype dtype;
  int32_t ndim;                   /* 0 <= ndim <= KOPE_MAX_DIMS */
  int64_t shape[KOPE_MAX_DIMS];   /* elements along each dimension */
  int64_t strides[KOPE_MAX_DIMS]; /* elements between neighbours along each dimension */
} kope_tensor;

/* The entry point every kernel exports. Returns 0 on success. */
typedef int (*kope_kernel_fn)(const kope_tensor* inputs, int n_inputs, kope_tensor* outputs,
                              int n_outputs, void* stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KOPE_KERNEL_H_ */
