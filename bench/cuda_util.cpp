// SPDX-License-Identifier: LGPL-2.1-or-later
// Random frames for the bench's CUDA memory.
#include "cuda_util.h"

#include "bench.h"

namespace bench {

void fill_random_cuda(void *memory, size_t bytes, uint64_t seed) {
  const PageableFrames host(1, bytes, seed);
  CHECK_CUDA(cudaMemcpy(memory, host.at(0), bytes, cudaMemcpyDefault));
}

}  // namespace bench
