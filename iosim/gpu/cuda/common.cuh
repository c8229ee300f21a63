// iosim GPU kernels: helpers shared by every kernel.
//
// These files are compiled at run time by NVRTC through CuPy (iosim/gpu/build.py
// concatenates common.cuh, generic.cu and mma.cu into one source). They include no
// header at all, so they build the same under NVRTC and under a plain `nvcc -c`:
// fp16 is carried as its raw 16 bits (`iosim_half`) and converted with PTX `cvt`.
//
// Instrumentation: compiled with -DIOSIM_COUNT_BYTES, every global load and store a
// kernel executes adds its bytes to a per-thread counter of the tensor it touches;
// at the end of the kernel the counters are summed across each warp with shuffles and
// added to a small device array with one atomicAdd per warp and tensor. Without the
// macro the counter is an empty struct and the timed kernels carry no counting code.

typedef unsigned short iosim_half;  // IEEE fp16, as bits
typedef unsigned long long iosim_u64;

// With -DIOSIM_STAMPS (benchmarks/drift_probe.py): thread 0 of every block writes its start and end
// (%globaltimer, ns) and its SM to iosim_stamps[3·b ...], b its linear block index. Off, no code.
#ifdef IOSIM_STAMPS
__device__ iosim_u64* iosim_stamps;
__device__ __forceinline__ iosim_u64 iosim_now() {
  iosim_u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#define IOSIM_STAMP_START const iosim_u64 iosim_t0 = iosim_now();
#define IOSIM_STAMP_END                                                                           \
  if (threadIdx.x == 0) {                                                                       \
    unsigned sm;                                                                                \
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));                                             \
    const size_t b = ((size_t)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;    \
    iosim_stamps[3 * b] = iosim_t0;                                                             \
    iosim_stamps[3 * b + 1] = iosim_now();                                                      \
    iosim_stamps[3 * b + 2] = sm;                                                               \
  }
#else
#define IOSIM_STAMP_START
#define IOSIM_STAMP_END
#endif
// The j-th key block fa2_mma walks: upwards from 0, or, with -DIOSIM_DESCENDING (benchmarks/drift_probe.py),
// from the last down as flash-attn 2's forward does.
#ifdef IOSIM_DESCENDING
#define IOSIM_KV(jj) (nb - 1 - (jj))
#else
#define IOSIM_KV(jj) (jj)
#endif

#define IOSIM_NEG_INF (__int_as_float(0xff800000))
#define IOSIM_LN2 0.6931471805599453f

// Slots of the counter array: counters[2*slot] = bytes read, counters[2*slot+1] = bytes
// written. The order is mirrored by iosim/gpu/kernels.py::TENSOR_SLOTS.
enum IosimTensor {
  T_Q = 0, T_K = 1, T_V = 2, T_O = 3, T_S = 4, T_P = 5,
  T_ELL = 6,  // FA1's running row sum ℓ (fp32)
  T_M = 7,    // FA1's running row max m (fp32)
  T_LSE = 8,  // FA2's logsumexp L = m + log ℓ (fp32)
  T_COUNT = 9
};

#ifdef IOSIM_COUNT_BYTES
struct ByteCounter {
  iosim_u64 v[2 * T_COUNT];
  __device__ __forceinline__ ByteCounter() {
#pragma unroll
    for (int k = 0; k < 2 * T_COUNT; ++k) v[k] = 0;
  }
  __device__ __forceinline__ void rd(int slot, int bytes) { v[2 * slot] += (iosim_u64)bytes; }
  __device__ __forceinline__ void wr(int slot, int bytes) { v[2 * slot + 1] += (iosim_u64)bytes; }
  // Every thread of the block must call this (it uses full-warp shuffles).
  __device__ __forceinline__ void flush(iosim_u64* counters) {
#pragma unroll
    for (int k = 0; k < 2 * T_COUNT; ++k) {
      iosim_u64 x = v[k];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) x += __shfl_down_sync(0xffffffffu, x, off);
      if ((threadIdx.x & 31) == 0 && x != 0) atomicAdd(&counters[k], x);
    }
  }
};
#else
struct ByteCounter {
  __device__ __forceinline__ void rd(int, int) {}
  __device__ __forceinline__ void wr(int, int) {}
  __device__ __forceinline__ void flush(iosim_u64*) {}
};
#endif

// ---- element conversions ---------------------------------------------------------------
__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(iosim_half h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ iosim_half from_f<iosim_half>(float x) {
  iosim_half h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
// Two floats to one f16x2 register; `lo` lands in the low half (the lower column).
__device__ __forceinline__ unsigned pack_half2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// ---- warp / block reductions -------------------------------------------------------------
__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

// ---- shared-memory addresses and asynchronous copies (sm_80+) ------------------------------
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  unsigned r;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}
// 16-byte global→shared copy that bypasses L1; src_bytes = 0 writes zeros and reads nothing.
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }
