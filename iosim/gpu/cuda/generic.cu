// iosim GPU kernels, generic path: any B_r <= 128, any B_c, fp32 or fp16 storage, fp32 math.
//
// Paper symbols → code: N = N, d = D, B_r = BR, B_c = BC, T_r = ceil(N/BR), T_c = ceil(N/BC),
// i = query block, j = key/value block, r_i = ri, c_j = cj, m = running row max, ℓ = running
// row sum (`ell`), L = logsumexp. Tensors live in global memory as [B·H, N, D] (Q, K, V, O),
// [B·H, N, N] (S, P) and [B·H, N] (ℓ, m, L).
//
// Tiles are staged in shared memory as fp32 whatever the storage type, with rows padded to
// D+1 floats so that threads walking along B_c read distinct banks. The output tile O_i lives
// in registers: thread t owns elements t, t+256, ... of the B_r×D tile (at most 128·D/256).
// 256 threads per block. These kernels are correct and simple; the fast fp16 path is mma.cu.
//
// Causal mask (square N): key k is visible to query q iff k <= q; block (i, j) is skipped
// iff it has no visible entry, i.e. iff j·BC > min((i+1)·BR, N) − 1 (docs/spec/algorithms.md §5).

#define GEN_THREADS 256
#define GEN_MAX_BR 128

// Load rows [0, valid) of a rows×D tile of T into shared floats (stride D+1); zero the rest.
template <typename T, int D>
__device__ __forceinline__ void gen_load_rows(float* s, const T* __restrict__ g, int rows, int valid,
                                              ByteCounter& cnt, int slot) {
  for (int e = threadIdx.x; e < rows * D; e += GEN_THREADS) {
    const int r = e / D, c = e % D;
    float x = 0.f;
    if (r < valid) {
      x = to_f(g[(size_t)r * D + c]);
      cnt.rd(slot, sizeof(T));
    }
    s[r * (D + 1) + c] = x;
  }
}

// S tile = scale · Q_i K_jᵀ with masked entries set to −inf (padding columns, and the causal
// upper triangle). Element e of the BR×BC tile goes to thread e mod 256.
template <int D>
__device__ __forceinline__ void gen_scores(float* sS, const float* sQ, const float* sK, int BR, int BC,
                                           int q0, int k0, int cj, float scale, int causal) {
  for (int e = threadIdx.x; e < BR * BC; e += GEN_THREADS) {
    const int r = e / BC, c = e % BC;
    const float* qr = sQ + r * (D + 1);
    const float* kc = sK + c * (D + 1);
    float acc = 0.f;
#pragma unroll 8
    for (int k = 0; k < D; ++k) acc += qr[k] * kc[k];
    const bool masked = c >= cj || (causal && k0 + c > q0 + r);
    sS[e] = masked ? IOSIM_NEG_INF : acc * scale;
  }
}

// ---------------------------------------------------------------------------------------------
// FA2 forward (FA2 Algorithm 1): one block per (query block i, head). Q_i is loaded once; each
// active K_j, V_j once; O_i, m_i, ℓ_i stay on chip; O_i and L_i are written once.
template <typename T, int D>
__global__ void __launch_bounds__(GEN_THREADS)
    fa2_generic(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V,
                T* __restrict__ O, float* __restrict__ Lse, int N, int BR, int BC, float scale,
                int causal, iosim_u64* counters) {
  constexpr int DP = D + 1, MAXO = GEN_MAX_BR * D / GEN_THREADS;
  extern __shared__ float smem[];
  float* sQ = smem;             // BR × DP   Q_i, resident for the whole block
  float* sKV = sQ + BR * DP;    // BC × DP   K_j, then V_j (same buffer)
  float* sS = sKV + BC * DP;    // BR × BC   S_ij, then P̃_ij
  float* sM = sS + BR * BC;     // BR        m_i
  float* sL = sM + BR;          // BR        ℓ_i
  float* sA = sL + BR;          // BR        e^{m_old − m_new}, the rescale of O_i

  ByteCounter cnt;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int i = blockIdx.x;
  const size_t bh = blockIdx.y;
  const int q0 = i * BR, ri = min(BR, N - q0);
  const T* Qh = Q + bh * N * D;
  const T* Kh = K + bh * N * D;
  const T* Vh = V + bh * N * D;

  gen_load_rows<T, D>(sQ, Qh + (size_t)q0 * D, BR, ri, cnt, T_Q);  // line 4
  for (int r = tid; r < BR; r += GEN_THREADS) { sM[r] = IOSIM_NEG_INF; sL[r] = 0.f; }
  float acc[MAXO];
#pragma unroll
  for (int k = 0; k < MAXO; ++k) acc[k] = 0.f;

  const int tc = (N + BC - 1) / BC;
  const int nb = causal ? min(tc, (min(q0 + BR, N) - 1) / BC + 1) : tc;
  for (int j = 0; j < nb; ++j) {
    const int k0 = j * BC, cj = min(BC, N - k0);
    __syncthreads();  // the previous step is done with sKV (V_{j-1})
    gen_load_rows<T, D>(sKV, Kh + (size_t)k0 * D, BC, cj, cnt, T_K);  // line 7 (K_j)
    __syncthreads();
    gen_scores<D>(sS, sQ, sKV, BR, BC, q0, k0, cj, scale, causal);  // line 8
    __syncthreads();
    // line 9: online softmax, one warp per row
    for (int r = warp; r < BR; r += GEN_THREADS / 32) {
      float mx = IOSIM_NEG_INF;
      for (int c = lane; c < BC; c += 32) mx = fmaxf(mx, sS[r * BC + c]);
      mx = warp_max(mx);
      const float m_old = sM[r], m_new = fmaxf(m_old, mx);
      const float base = m_new == IOSIM_NEG_INF ? 0.f : m_new;
      float sum = 0.f;
      for (int c = lane; c < BC; c += 32) {
        const float p = expf(sS[r * BC + c] - base);
        sS[r * BC + c] = p;
        sum += p;
      }
      sum = warp_sum(sum);
      __syncwarp();  // every lane has read sM[r] before lane 0 overwrites it
      if (lane == 0) {
        const float alpha = expf(m_old - base);
        sL[r] = sL[r] * alpha + sum;
        sM[r] = m_new;
        sA[r] = alpha;
      }
    }
    gen_load_rows<T, D>(sKV, Vh + (size_t)k0 * D, BC, cj, cnt, T_V);  // line 7 (V_j)
    __syncthreads();
    // line 10: O_i = diag(alpha) O_i + P̃ V_j
#pragma unroll
    for (int k = 0; k < MAXO; ++k) {
      const int e = tid + k * GEN_THREADS;
      if (e < BR * D) {
        const int r = e / D, c = e % D;
        float a = acc[k] * sA[r];
        for (int cc = 0; cc < BC; ++cc) a += sS[r * BC + cc] * sKV[cc * DP + c];
        acc[k] = a;
      }
    }
  }
  // lines 12-15: normalise, write O_i and L_i once
#pragma unroll
  for (int k = 0; k < MAXO; ++k) {
    const int e = tid + k * GEN_THREADS;
    if (e < BR * D) {
      const int r = e / D, c = e % D;
      if (r < ri) {
        O[bh * N * D + (size_t)(q0 + r) * D + c] = from_f<T>(acc[k] / sL[r]);
        cnt.wr(T_O, sizeof(T));
      }
    }
  }
  for (int r = tid; r < ri; r += GEN_THREADS) {
    Lse[bh * N + q0 + r] = sM[r] + logf(sL[r]);
    cnt.wr(T_LSE, 4);
  }
  cnt.flush(counters);
}

// ---------------------------------------------------------------------------------------------
// FA1 forward (FA1 Algorithm 1): one block per head walks key blocks j (outer) and active query
// blocks i (inner), as the v1 CUDA kernel does, so K_j and V_j are read once and no two blocks
// race on O_i. Every inner step reads Q_i, O_i, ℓ_i, m_i from global memory (also at j = 0,
// convention C6) and writes O_i, ℓ_i, m_i back. The caller initialises O = 0, ℓ = 0, m = −inf
// beforehand (line 2; not counted, convention C5).
template <typename T, int D>
__global__ void __launch_bounds__(GEN_THREADS)
    fa1_generic(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V,
                T* __restrict__ O, float* __restrict__ Ell, float* __restrict__ Mx, int N, int BR,
                int BC, float scale, int causal, iosim_u64* counters) {
  constexpr int DP = D + 1, MAXO = GEN_MAX_BR * D / GEN_THREADS;
  extern __shared__ float smem[];
  float* sK = smem;            // BC × DP   K_j, resident for the inner loop
  float* sV = sK + BC * DP;    // BC × DP   V_j, resident for the inner loop
  float* sQ = sV + BC * DP;    // BR × DP   Q_i
  float* sS = sQ + BR * DP;    // BR × BC   S_ij, then P̃_ij
  float* sM = sS + BR * BC;    // BR        m_i as loaded
  float* sL = sM + BR;         // BR        ℓ_i as loaded
  float* sCa = sL + BR;        // BR        coefficient of the old O_i
  float* sCb = sCa + BR;       // BR        coefficient of P̃_ij V_j

  ByteCounter cnt;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const size_t bh = blockIdx.x;
  const T* Qh = Q + bh * N * D;
  const T* Kh = K + bh * N * D;
  const T* Vh = V + bh * N * D;
  T* Oh = O + bh * N * D;
  float* Ellh = Ell + bh * N;
  float* Mh = Mx + bh * N;
  const int tc = (N + BC - 1) / BC, tr = (N + BR - 1) / BR;

  for (int j = 0; j < tc; ++j) {
    const int k0 = j * BC, cj = min(BC, N - k0);
    __syncthreads();
    gen_load_rows<T, D>(sK, Kh + (size_t)k0 * D, BC, cj, cnt, T_K);  // line 6
    gen_load_rows<T, D>(sV, Vh + (size_t)k0 * D, BC, cj, cnt, T_V);
    // Causal: query block i is active for key block j iff i >= floor(j·BC / BR).
    const int i_lo = causal ? k0 / BR : 0;
    for (int i = i_lo; i < tr; ++i) {
      const int q0 = i * BR, ri = min(BR, N - q0);
      __syncthreads();  // the previous inner step is done with sQ, sS, sM, sL
      gen_load_rows<T, D>(sQ, Qh + (size_t)q0 * D, BR, ri, cnt, T_Q);  // line 8
      float acc[MAXO];
#pragma unroll
      for (int k = 0; k < MAXO; ++k) {
        const int e = tid + k * GEN_THREADS;
        acc[k] = 0.f;
        if (e < ri * D) {
          acc[k] = to_f(Oh[(size_t)q0 * D + e]);
          cnt.rd(T_O, sizeof(T));
        }
      }
      for (int r = tid; r < ri; r += GEN_THREADS) {
        sL[r] = Ellh[q0 + r];
        sM[r] = Mh[q0 + r];
        cnt.rd(T_ELL, 4);
        cnt.rd(T_M, 4);
      }
      __syncthreads();
      gen_scores<D>(sS, sQ, sK, BR, BC, q0, k0, cj, scale, causal);  // line 9
      __syncthreads();
      // lines 10-11, 13: block row max/sum, new statistics, written back to HBM
      for (int r = warp; r < ri; r += GEN_THREADS / 32) {
        float mt = IOSIM_NEG_INF;
        for (int c = lane; c < BC; c += 32) mt = fmaxf(mt, sS[r * BC + c]);
        mt = warp_max(mt);
        const float base = mt == IOSIM_NEG_INF ? 0.f : mt;
        float lt = 0.f;
        for (int c = lane; c < BC; c += 32) {
          const float p = expf(sS[r * BC + c] - base);
          sS[r * BC + c] = p;
          lt += p;
        }
        lt = warp_sum(lt);
        if (lane == 0) {
          const float m_old = sM[r], l_old = sL[r];
          const float m_new = fmaxf(m_old, mt);
          const float em = m_old == IOSIM_NEG_INF ? 0.f : expf(m_old - m_new);
          const float et = mt == IOSIM_NEG_INF ? 0.f : expf(mt - m_new);
          const float l_new = em * l_old + et * lt;
          const float inv = l_new > 0.f ? 1.f / l_new : 0.f;
          sCa[r] = l_old * em * inv;
          sCb[r] = et * inv;
          Ellh[q0 + r] = l_new;
          Mh[q0 + r] = m_new;
          cnt.wr(T_ELL, 4);
          cnt.wr(T_M, 4);
        }
      }
      __syncthreads();
      // line 12: O_i ← diag(ℓ_new)⁻¹ (diag(ℓ_i) e^{m_i − m_new} O_i + e^{m̃ − m_new} P̃_ij V_j)
#pragma unroll
      for (int k = 0; k < MAXO; ++k) {
        const int e = tid + k * GEN_THREADS;
        if (e < ri * D) {
          const int r = e / D, c = e % D;
          float pv = 0.f;
          for (int cc = 0; cc < BC; ++cc) pv += sS[r * BC + cc] * sV[cc * DP + c];
          Oh[(size_t)q0 * D + e] = from_f<T>(sCa[r] * acc[k] + sCb[r] * pv);
          cnt.wr(T_O, sizeof(T));
        }
      }
    }
  }
  cnt.flush(counters);
}

// ---------------------------------------------------------------------------------------------
// Standard attention (FA1 Algorithm 0) as three tiled kernels.
// Kernel 1: S = scale · Q Kᵀ, one block per BR×BC output tile (j, i, head); each tile loads
// its Q_i and K_j once and writes S_ij. S is the full N×N matrix (no causal skipping).
template <typename T, int D>
__global__ void __launch_bounds__(GEN_THREADS)
    std_qk_generic(const T* __restrict__ Q, const T* __restrict__ K, T* __restrict__ S, int N, int BR,
                   int BC, float scale, iosim_u64* counters) {
  constexpr int DP = D + 1;
  extern __shared__ float smem[];
  float* sQ = smem;
  float* sK = sQ + BR * DP;
  ByteCounter cnt;
  const int j = blockIdx.x, i = blockIdx.y;
  const size_t bh = blockIdx.z;
  const int q0 = i * BR, ri = min(BR, N - q0), k0 = j * BC, cj = min(BC, N - k0);
  gen_load_rows<T, D>(sQ, Q + bh * N * D + (size_t)q0 * D, BR, ri, cnt, T_Q);
  gen_load_rows<T, D>(sK, K + bh * N * D + (size_t)k0 * D, BC, cj, cnt, T_K);
  __syncthreads();
  T* Sh = S + bh * N * N;
  for (int e = threadIdx.x; e < BR * BC; e += GEN_THREADS) {
    const int r = e / BC, c = e % BC;
    if (r < ri && c < cj) {
      const float* qr = sQ + r * DP;
      const float* kc = sK + c * DP;
      float acc = 0.f;
#pragma unroll 8
      for (int k = 0; k < D; ++k) acc += qr[k] * kc[k];
      Sh[(size_t)(q0 + r) * N + k0 + c] = from_f<T>(acc * scale);
      cnt.wr(T_S, sizeof(T));
    }
  }
  cnt.flush(counters);
}

__device__ __forceinline__ float block_reduce(float x, float* red, bool is_max) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
  x = is_max ? warp_max(x) : warp_sum(x);
  __syncthreads();  // red may still be read by a previous reduction
  if (lane == 0) red[warp] = x;
  __syncthreads();
  x = lane < nw ? red[lane] : (is_max ? IOSIM_NEG_INF : 0.f);
  return is_max ? warp_max(x) : warp_sum(x);
}

// Kernel 2: P = softmax(S) by rows, one block per (row, head). The row is read once into shared
// memory (N floats), the causal mask is applied here, and P is written once.
template <typename T>
__global__ void __launch_bounds__(GEN_THREADS)
    std_softmax(const T* __restrict__ S, T* __restrict__ P, int N, int causal, iosim_u64* counters) {
  extern __shared__ float smem[];
  __shared__ float red[32];
  ByteCounter cnt;
  const int row = blockIdx.x;
  const size_t off = ((size_t)blockIdx.y * N + row) * N;
  float mx = IOSIM_NEG_INF;
  for (int c = threadIdx.x; c < N; c += blockDim.x) {
    float x = to_f(S[off + c]);
    cnt.rd(T_S, sizeof(T));
    if (causal && c > row) x = IOSIM_NEG_INF;
    smem[c] = x;
    mx = fmaxf(mx, x);
  }
  mx = block_reduce(mx, red, true);
  float sum = 0.f;
  for (int c = threadIdx.x; c < N; c += blockDim.x) {  // each thread revisits only its own c
    const float p = expf(smem[c] - mx);
    smem[c] = p;
    sum += p;
  }
  const float inv = 1.f / block_reduce(sum, red, false);
  for (int c = threadIdx.x; c < N; c += blockDim.x) {
    P[off + c] = from_f<T>(smem[c] * inv);
    cnt.wr(T_P, sizeof(T));
  }
  cnt.flush(counters);
}

// Kernel 3: O = P V, one block per (query block i, head); for every key block j it loads P_ij
// (ri × cj) and V_j, and it writes O_i once. No causal skipping: P is dense (zeros included).
template <typename T, int D>
__global__ void __launch_bounds__(GEN_THREADS)
    std_pv_generic(const T* __restrict__ P, const T* __restrict__ V, T* __restrict__ O, int N, int BR,
                   int BC, iosim_u64* counters) {
  constexpr int DP = D + 1, MAXO = GEN_MAX_BR * D / GEN_THREADS;
  extern __shared__ float smem[];
  float* sP = smem;           // BR × BC
  float* sV = sP + BR * BC;   // BC × DP
  ByteCounter cnt;
  const int tid = threadIdx.x, i = blockIdx.x;
  const size_t bh = blockIdx.y;
  const int q0 = i * BR, ri = min(BR, N - q0), tc = (N + BC - 1) / BC;
  const T* Ph = P + bh * N * N;
  float acc[MAXO];
#pragma unroll
  for (int k = 0; k < MAXO; ++k) acc[k] = 0.f;
  for (int j = 0; j < tc; ++j) {
    const int k0 = j * BC, cj = min(BC, N - k0);
    __syncthreads();
    for (int e = tid; e < BR * BC; e += GEN_THREADS) {
      const int r = e / BC, c = e % BC;
      float x = 0.f;
      if (r < ri && c < cj) {
        x = to_f(Ph[(size_t)(q0 + r) * N + k0 + c]);
        cnt.rd(T_P, sizeof(T));
      }
      sP[e] = x;
    }
    gen_load_rows<T, D>(sV, V + bh * N * D + (size_t)k0 * D, BC, cj, cnt, T_V);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < MAXO; ++k) {
      const int e = tid + k * GEN_THREADS;
      if (e < BR * D) {
        const int r = e / D, c = e % D;
        float a = acc[k];
        for (int cc = 0; cc < BC; ++cc) a += sP[r * BC + cc] * sV[cc * DP + c];
        acc[k] = a;
      }
    }
  }
#pragma unroll
  for (int k = 0; k < MAXO; ++k) {
    const int e = tid + k * GEN_THREADS;
    if (e < ri * D) {
      O[bh * N * D + (size_t)q0 * D + e] = from_f<T>(acc[k]);
      cnt.wr(T_O, sizeof(T));
    }
  }
  cnt.flush(counters);
}
