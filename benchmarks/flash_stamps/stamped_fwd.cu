// flash-attn 2's forward kernel, built from its own source, with each thread block's start
// and end stamped (docs/validation/2026-12-05-flash-stamps.md).
//
// PyTorch's flash-attn 2 forward cannot be timed block by block. This program compiles the same
// kernel (csrc/flash_attn/src/flash_fwd_kernel.h, compute_attn) from flash-attention's source for
// one instantiation, chosen at build time:
//
//   -DHDIM=128 -DBLOCK_M=128 -DBLOCK_N=64 -DNWARPS=4 -DCAUSAL=1 -DEVEN_MN=1 -DEVEN_K=1 [-DBF16] [-DSTAMPS]
//
// (the traits flash_fwd_launch_template.h picks on sm90 for that head dim: benchmarks/flash_stamps.py
// has the table and builds them). It launches the kernel on the grid run_flash_fwd gives it,
// (ceil(N / kBlockM), B, H), with (B, H, N, d) inputs and output, as PyTorch's SDPA passes them.
// Built with -DSTAMPS, thread 0 of each block writes %globaltimer when the block starts and when
// its warp leaves compute_attn, and %smid; the stamps are calls, which keep the kernel's registers
// as they were (see stamp). Without -DSTAMPS the kernel is flash's, for comparing its registers,
// code size, time and DRAM bytes with PyTorch's build.
//
//   stamped_fwd B H H_KV N D REPEATS OUT.bin
//
// runs the kernel REPEATS times (after one warm-up; 256 MB written before each launch) and writes,
// per run, uint64s: the launch's time (ns, CUDA events), then every block's start and end (ns,
// %globaltimer) and smid in launch order (blockIdx.x fastest, then y, then z).

#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#include "namespace_config.h"
#include "flash.h"
#include "flash_fwd_kernel.h"

#ifdef BF16
using Element = cutlass::bfloat16_t;
#else
using Element = cutlass::half_t;
#endif

using Traits = Flash_fwd_kernel_traits<  // kernel_traits.h: global namespace
    HDIM, BLOCK_M, BLOCK_N, NWARPS, false, false, Element>;

__device__ unsigned long long *g_stamps;

// the block's three words, its place in launch order read from the special registers where it is
// needed, so that nothing is held in a register across the kernel
__device__ __forceinline__ unsigned long long *stamp_of_block() {
  return g_stamps + 3 * (blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * (size_t)blockIdx.z));
}

// Out of line, the stamps leave the kernel's register allocation as it was: inlined, a start and
// an end stamp put its spill frame at 192-256 bytes a thread at kHeadDim 128 (104 unstamped); a
// call at each end keeps it at 104 (72 at kHeadDim 64). `which`: 0 the start, 1 the end.
__device__ __noinline__ void stamp(int which) {
  if (threadIdx.x == 0) {
    unsigned long long t;
    unsigned int sm;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    __stcg(stamp_of_block() + which, t);
    __stcg(stamp_of_block() + 2, (unsigned long long)sm);
  }
}

__global__ void stamped_fwd(const __grid_constant__ FLASH_NAMESPACE::Flash_fwd_params params) {
#ifdef STAMPS
  stamp(0);
#endif
  FLASH_NAMESPACE::compute_attn<Traits, false, CAUSAL, false, false, EVEN_MN, EVEN_K, false, false>(params);
#ifdef STAMPS
  stamp(1);  // when thread 0's warp leaves compute_attn
#endif
}

#define CHECK(x)                                                                         \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "stamped_fwd: %s: %s\n", #x, cudaGetErrorString(e_));             \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

static int round_up(int x, int m) { return (x + m - 1) / m * m; }

static void *filled(size_t elems, unsigned seed) {
  std::vector<Element> host(elems);
  unsigned s = seed;
  for (size_t i = 0; i < elems; ++i) {
    s = s * 1664525u + 1013904223u;
    host[i] = Element(float((s >> 9) & 0xffff) / 65536.0f - 0.5f);
  }
  void *dev;
  CHECK(cudaMalloc(&dev, elems * sizeof(Element)));
  CHECK(cudaMemcpy(dev, host.data(), elems * sizeof(Element), cudaMemcpyHostToDevice));
  return dev;
}

int main(int argc, char **argv) {
  if (argc != 8) {
    fprintf(stderr, "usage: %s B H H_KV N D REPEATS OUT.bin\n", argv[0]);
    return 2;
  }
  const int b = atoi(argv[1]), h = atoi(argv[2]), h_k = atoi(argv[3]), n = atoi(argv[4]), d = atoi(argv[5]);
  const int repeats = atoi(argv[6]);
  // run_flash_fwd's choice: even MN only with even K and kHeadDim <= 128
  const bool even_k = d == HDIM, even_mn = n % BLOCK_M == 0 && n % BLOCK_N == 0 && even_k && HDIM <= 128;
  if (b < 1 || h < 1 || h_k < 1 || h % h_k || n < 1 || d < 1 || d > HDIM || d % 8 || repeats < 1 ||
      even_k != bool(EVEN_K) || even_mn != bool(EVEN_MN)) {
    fprintf(stderr, "stamped_fwd: this build is kHeadDim %d, even MN %d, even K %d; it cannot run B=%d H=%d "
            "H_KV=%d N=%d d=%d\n", HDIM, EVEN_MN, EVEN_K, b, h, h_k, n, d);
    return 2;
  }
  FLASH_NAMESPACE::Flash_fwd_params p = {};
  const size_t q_elems = size_t(b) * h * n * d, kv_elems = size_t(b) * h_k * n * d;
  p.q_ptr = filled(q_elems, 1);
  p.k_ptr = filled(kv_elems, 2);
  p.v_ptr = filled(kv_elems, 3);
  void *o, *lse;
  CHECK(cudaMalloc(&o, q_elems * sizeof(Element)));
  CHECK(cudaMalloc(&lse, size_t(b) * h * n * sizeof(float)));
  p.o_ptr = o;
  p.softmax_lse_ptr = lse;
  // (B, H, N, d) tensors seen as (B, N, H, d), as PyTorch's SDPA hands them to flash-attn
  p.q_row_stride = p.o_row_stride = d;
  p.k_row_stride = p.v_row_stride = d;
  p.q_head_stride = p.o_head_stride = size_t(n) * d;
  p.k_head_stride = p.v_head_stride = size_t(n) * d;
  p.q_batch_stride = p.o_batch_stride = size_t(h) * n * d;
  p.k_batch_stride = p.v_batch_stride = size_t(h_k) * n * d;
  p.b = b, p.h = h, p.h_k = h_k, p.h_h_k_ratio = h / h_k;
  p.seqlen_q = p.seqlen_k = n;
  p.seqlen_q_rounded = p.seqlen_k_rounded = round_up(n, 128);
  p.d = d;
  p.d_rounded = d <= 128 ? round_up(d, 32) : round_up(d, 64);
  const float scale = 1.0f / sqrtf(float(d));
  p.scale_softmax = scale;
  p.scale_softmax_log2 = scale * float(M_LOG2E);
  p.p_dropout = 1.0f;
  p.p_dropout_in_uint8_t = 255;
  p.rp_dropout = 1.0f;
  p.scale_softmax_rp_dropout = scale;
  p.is_causal = CAUSAL;
  p.window_size_left = CAUSAL ? n : -1;
  p.window_size_right = CAUSAL ? 0 : -1;
  p.is_seqlens_k_cumulative = true;
  p.is_bf16 = std::is_same<Element, cutlass::bfloat16_t>::value;

  const dim3 grid((n + BLOCK_M - 1) / BLOCK_M, b, h);
  const size_t blocks = size_t(grid.x) * grid.y * grid.z;
  unsigned long long *stamps;
  CHECK(cudaMalloc(&stamps, blocks * 3 * sizeof(unsigned long long)));
  CHECK(cudaMemcpyToSymbol(g_stamps, &stamps, sizeof(stamps)));
  const int smem = Traits::kSmemSize;
  if (smem >= 48 * 1024) CHECK(cudaFuncSetAttribute(stamped_fwd, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));

  FILE *out = fopen(argv[7], "wb");
  if (!out) {
    fprintf(stderr, "stamped_fwd: cannot write %s\n", argv[7]);
    return 2;
  }
  void *scratch;  // 256 MB written before each launch, so that each starts with its inputs out of the L2
  const size_t scratch_bytes = size_t(256) << 20;
  CHECK(cudaMalloc(&scratch, scratch_bytes));
  cudaEvent_t before, after;
  CHECK(cudaEventCreate(&before));
  CHECK(cudaEventCreate(&after));
  std::vector<unsigned long long> host(blocks * 3 + 1);
  for (int r = -1; r < repeats; ++r) {
    CHECK(cudaMemset(stamps, 0, blocks * 3 * sizeof(unsigned long long)));
    CHECK(cudaMemset(scratch, r & 0xff, scratch_bytes));
    CHECK(cudaEventRecord(before));
    stamped_fwd<<<grid, Traits::kNThreads, smem>>>(p);
    CHECK(cudaEventRecord(after));
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    if (r < 0) continue;
    float ms;
    CHECK(cudaEventElapsedTime(&ms, before, after));
    host[0] = (unsigned long long)(ms * 1e6);  // the launch's time, ns, then each block's (start, end, smid)
    CHECK(cudaMemcpy(host.data() + 1, stamps, blocks * 3 * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    fwrite(host.data(), sizeof(unsigned long long), host.size(), out);
  }
  fclose(out);
  printf("grid %u %u %u threads %d smem %d blocks %zu\n", grid.x, grid.y, grid.z, Traits::kNThreads, smem, blocks);
  return 0;
}
