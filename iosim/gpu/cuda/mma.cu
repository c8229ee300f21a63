// iosim GPU kernels, tensor-core path: fp16 storage, fp32 accumulation, mma.sync.m16n8k16.
//
// Shapes: D ∈ {32, 64, 128}; BR ∈ {16, 32, 64, 128} (one warp per 16 query rows, so BR/16
// warps); BC ∈ {16, 32, 64, 128}. Tiles are staged in shared memory at BR×D (Q_i) and BC×D
// (K_j, V_j) halves, rows padded by 8 halves (16 bytes) so that the eight row addresses of
// one ldmatrix fall in distinct bank groups.
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16"), with g = lane/4, t = lane%4:
//   A 16×16 (row):  a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..]
//   B 16×8  (col):  b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g]
//   C 16×8  (f32):  c0,c1 = C[g][2t..2t+1], c2,c3 = C[g+8][2t..2t+1]
// For S = Q Kᵀ, B[k][n] = K[n][k], so rows of K in shared memory are B's columns: plain ldmatrix.
// For O = P V, B[k][n] = V[k][n] is row-major in shared memory: ldmatrix.trans.
// The S accumulators of two adjacent n-tiles have exactly the layout of one A fragment, so P̃
// goes from the first product to the second in registers (the FA2 trick) without touching
// shared memory.

#define MMA_PAD 8

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
// c += A·B on one 16×8×16 tile.
__device__ __forceinline__ void mma_16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Issue cp.async copies of rows [0, valid) of a ROWS×D fp16 tile (global row stride D) into
// shared memory (row stride D+MMA_PAD); rows >= valid are zero-filled and read nothing.
template <int ROWS, int D, int NT>
__device__ __forceinline__ void mma_load_tile(iosim_half* s, const iosim_half* g, int valid, ByteCounter& cnt,
                                              int slot) {
  constexpr int CH = D / 8;  // 16-byte chunks per row
#pragma unroll
  for (int it = 0; it < (ROWS * CH + NT - 1) / NT; ++it) {
    const int e = threadIdx.x + it * NT;
    if (ROWS * CH % NT != 0 && e >= ROWS * CH) break;
    const int r = e / CH, c = e % CH;
    const bool ok = r < valid;
    cp_async16(smem_addr(s + r * (D + MMA_PAD) + c * 8), ok ? g + (size_t)r * D + c * 8 : g, ok ? 16 : 0);
    if (ok) cnt.rd(slot, 16);
  }
}

// One warp: s[BC/8][4] = Q_w K_jᵀ for its 16 rows (raw dot products, unscaled).
template <int D, int BC>
__device__ __forceinline__ void mma_qk(float (&s)[BC / 8][4], const iosim_half* sQw, const iosim_half* sK, int lane) {
  constexpr int SD = D + MMA_PAD;
#pragma unroll
  for (int n = 0; n < BC / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll 1
  for (int kk = 0; kk < D / 16; ++kk) {
    unsigned a[4];
    ldmatrix_x4(a, smem_addr(sQw + (lane % 16) * SD + kk * 16 + (lane / 16) * 8));
#pragma unroll
    for (int nn = 0; nn < BC / 16; ++nn) {
      unsigned b[4];
      ldmatrix_x4(b, smem_addr(sK + (nn * 16 + (lane / 16) * 8 + lane % 8) * SD + kk * 16 + ((lane / 8) % 2) * 8));
      mma_16816(s[2 * nn], a, b[0], b[1]);
      mma_16816(s[2 * nn + 1], a, b[2], b[3]);
    }
  }
}

// One warp: o[D/8][4] += A · V_j, A given as BC/16 fragments (k = key index).
template <int D, int BC>
__device__ __forceinline__ void mma_pv(float (&o)[D / 8][4], const unsigned (&a)[BC / 16][4], const iosim_half* sV,
                                       int lane) {
  constexpr int SD = D + MMA_PAD;
#pragma unroll
  for (int kk = 0; kk < BC / 16; ++kk) {
#pragma unroll
    for (int dn = 0; dn < D / 16; ++dn) {
      unsigned b[4];
      ldmatrix_x4_trans(b, smem_addr(sV + (kk * 16 + lane % 16) * SD + dn * 16 + (lane / 16) * 8));
      mma_16816(o[2 * dn], a[kk], b[0], b[1]);
      mma_16816(o[2 * dn + 1], a[kk], b[2], b[3]);
    }
  }
}

// Store a warp's 16×D fp32 accumulator tile (times inv[h] for row half h) as fp16 rows of O.
template <int D>
__device__ __forceinline__ void mma_store_o(iosim_half* Oh, const float (&o)[D / 8][4], const float (&inv)[2],
                                            int row_w, int ri, int lane, ByteCounter& cnt) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = row_w + g + 8 * h;
    if (r < ri) {
#pragma unroll
      for (int dn = 0; dn < D / 8; ++dn) {
        *reinterpret_cast<unsigned*>(Oh + (size_t)r * D + dn * 8 + 2 * t) =
            pack_half2(o[dn][2 * h] * inv[h], o[dn][2 * h + 1] * inv[h]);
        cnt.wr(T_O, 4);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// FA2 forward, tensor cores. Grid (T_r, B·H), BR/16 warps. Per block: Q_i loaded once (line 4);
// for each active j, K_j and V_j loaded once (line 7), V_j's copy overlapping S = Q_i K_jᵀ and
// K_{j+1}'s copy overlapping P̃ V_j; m_i, ℓ_i and O_i stay in registers (lines 8-10); O_i and
// L_i written once (lines 12-15). Scores are kept in log2 units: x = s · scale · log2(e).
template <int D, int BR, int BC>
__global__ void __launch_bounds__(BR * 2)
    fa2_mma(const iosim_half* __restrict__ Q, const iosim_half* __restrict__ K, const iosim_half* __restrict__ V,
            iosim_half* __restrict__ O, float* __restrict__ Lse, int N, float scale_log2, int causal,
            iosim_u64* counters) {
  constexpr int NT = BR * 2, SD = D + MMA_PAD;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  iosim_half* sQ = reinterpret_cast<iosim_half*>(smem_raw);  // BR × SD
  iosim_half* sK = sQ + BR * SD;                              // BC × SD
  iosim_half* sV = sK + BC * SD;                              // BC × SD

  IOSIM_STAMP_START
  ByteCounter cnt;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int i = blockIdx.x;
  const size_t bh = blockIdx.y;
  const int q0 = i * BR, ri = min(BR, N - q0), row_w = warp * 16;
  const size_t base = bh * N * D;
  const int tc = (N + BC - 1) / BC;
  const int nb = causal ? min(tc, (min(q0 + BR, N) - 1) / BC + 1) : tc;

  mma_load_tile<BR, D, NT>(sQ, Q + base + (size_t)q0 * D, ri, cnt, T_Q);
  mma_load_tile<BC, D, NT>(sK, K + base + (size_t)IOSIM_KV(0) * BC * D, min(BC, N - IOSIM_KV(0) * BC), cnt, T_K);
  cp_async_commit();

  float o[D / 8][4];
#pragma unroll
  for (int dn = 0; dn < D / 8; ++dn) o[dn][0] = o[dn][1] = o[dn][2] = o[dn][3] = 0.f;
  float m_r[2] = {IOSIM_NEG_INF, IOSIM_NEG_INF};  // rows g and g+8 of this warp
  float l_r[2] = {0.f, 0.f};                      // this thread's partial row sums

  for (int jj = 0; jj < nb; ++jj) {
    const int j = IOSIM_KV(jj), k0 = j * BC;
    cp_async_wait_all();
    __syncthreads();  // K_j (and Q_i) have landed; every warp is done with V_{j-1}
    mma_load_tile<BC, D, NT>(sV, V + base + (size_t)k0 * D, min(BC, N - k0), cnt, T_V);
    cp_async_commit();

    float s[BC / 8][4];
    mma_qk<D, BC>(s, sQ + row_w * SD, sK, lane);

    // Mask padding columns (k >= N) and, for causal, keys after the query.
    if (k0 + BC > N || (causal && k0 + BC - 1 > q0 + row_w)) {
#pragma unroll
      for (int n = 0; n < BC / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = k0 + n * 8 + 2 * t + (e & 1), row = q0 + row_w + g + 8 * (e >> 1);
          if (col >= N || (causal && col > row)) s[n][e] = IOSIM_NEG_INF;
        }
    }
    // Online softmax (line 9) and the rescale of O_i (line 10).
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = IOSIM_NEG_INF;
#pragma unroll
      for (int n = 0; n < BC / 8; ++n) mx = fmaxf(mx, fmaxf(s[n][2 * h], s[n][2 * h + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m_r[h], mx * scale_log2);
      const float mb = m_new == IOSIM_NEG_INF ? 0.f : m_new;
      const float alpha = fast_exp2(m_r[h] - mb);
      m_r[h] = m_new;
      float sum = 0.f;
#pragma unroll
      for (int n = 0; n < BC / 8; ++n) {
        s[n][2 * h] = fast_exp2(s[n][2 * h] * scale_log2 - mb);
        s[n][2 * h + 1] = fast_exp2(s[n][2 * h + 1] * scale_log2 - mb);
        sum += s[n][2 * h] + s[n][2 * h + 1];
      }
      l_r[h] = l_r[h] * alpha + sum;
#pragma unroll
      for (int dn = 0; dn < D / 8; ++dn) {
        o[dn][2 * h] *= alpha;
        o[dn][2 * h + 1] *= alpha;
      }
    }
    unsigned a[BC / 16][4];
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
      a[kk][0] = pack_half2(s[2 * kk][0], s[2 * kk][1]);
      a[kk][1] = pack_half2(s[2 * kk][2], s[2 * kk][3]);
      a[kk][2] = pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      a[kk][3] = pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
    }
    cp_async_wait_all();
    __syncthreads();  // V_j has landed; every warp is done with K_j
    if (jj + 1 < nb) {
      const int kn = IOSIM_KV(jj + 1) * BC;
      mma_load_tile<BC, D, NT>(sK, K + base + (size_t)kn * D, min(BC, N - kn), cnt, T_K);
      cp_async_commit();
    }
    mma_pv<D, BC>(o, a, sV, lane);
  }

  // Lines 12-15: finish the row sums across the quad, normalise, write O_i and L_i once.
  float inv[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = l_r[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    l_r[h] = l;
    inv[h] = l > 0.f ? 1.f / l : 0.f;
  }
  mma_store_o<D>(O + base + (size_t)q0 * D, o, inv, row_w, ri, lane, cnt);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = row_w + g + 8 * h;
    if (t == 0 && r < ri) {
      Lse[bh * N + q0 + r] = m_r[h] * IOSIM_LN2 + logf(l_r[h]);
      cnt.wr(T_LSE, 4);
    }
  }
  IOSIM_STAMP_END
  cnt.flush(counters);
}

// ---------------------------------------------------------------------------------------------
// Standard attention kernel 1 on tensor cores: S_ij = scale · Q_i K_jᵀ for one BR×BC tile.
// Grid (T_c, T_r, B·H). The tile is staged through shared memory so that S is written with
// 16-byte stores when N % 8 == 0 (element stores otherwise).
template <int D, int BR, int BC>
__global__ void __launch_bounds__(BR * 2)
    std_qk_mma(const iosim_half* __restrict__ Q, const iosim_half* __restrict__ K, iosim_half* __restrict__ S, int N,
               float scale, iosim_u64* counters) {
  constexpr int NT = BR * 2, SD = D + MMA_PAD, SS = BC + MMA_PAD;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  iosim_half* sQ = reinterpret_cast<iosim_half*>(smem_raw);  // BR × SD
  iosim_half* sK = sQ + BR * SD;                              // BC × SD
  iosim_half* sS = sK + BC * SD;                              // BR × SS
  ByteCounter cnt;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int j = blockIdx.x, i = blockIdx.y;
  const size_t bh = blockIdx.z;
  const int q0 = i * BR, ri = min(BR, N - q0), k0 = j * BC, cj = min(BC, N - k0), row_w = warp * 16;
  mma_load_tile<BR, D, NT>(sQ, Q + bh * N * D + (size_t)q0 * D, ri, cnt, T_Q);
  mma_load_tile<BC, D, NT>(sK, K + bh * N * D + (size_t)k0 * D, cj, cnt, T_K);
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();
  float s[BC / 8][4];
  mma_qk<D, BC>(s, sQ + row_w * SD, sK, lane);
#pragma unroll
  for (int n = 0; n < BC / 8; ++n)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      *reinterpret_cast<unsigned*>(sS + (row_w + g + 8 * h) * SS + n * 8 + 2 * t) =
          pack_half2(s[n][2 * h] * scale, s[n][2 * h + 1] * scale);
  __syncthreads();
  iosim_half* Sh = S + bh * N * N + (size_t)q0 * N + k0;
  if ((N & 7) == 0) {  // then cj is a multiple of 8 and every row start is 16-byte aligned
    for (int e = tid; e < BR * (BC / 8); e += NT) {
      const int r = e / (BC / 8), c = (e % (BC / 8)) * 8;
      if (r < ri && c < cj) {
        *reinterpret_cast<uint4*>(Sh + (size_t)r * N + c) = *reinterpret_cast<const uint4*>(sS + r * SS + c);
        cnt.wr(T_S, 16);
      }
    }
  } else {
    for (int e = tid; e < BR * BC; e += NT) {
      const int r = e / BC, c = e % BC;
      if (r < ri && c < cj) {
        Sh[(size_t)r * N + c] = sS[r * SS + c];
        cnt.wr(T_S, 2);
      }
    }
  }
  cnt.flush(counters);
}

// Standard attention kernel 3 on tensor cores: O_i = Σ_j P_ij V_j. Grid (T_r, B·H). For each
// key block j the block loads P_ij (ri × cj, zero-filled to BR × BC) and V_j into shared
// memory; O_i stays in registers and is written once.
template <int D, int BR, int BC>
__global__ void __launch_bounds__(BR * 2)
    std_pv_mma(const iosim_half* __restrict__ P, const iosim_half* __restrict__ V, iosim_half* __restrict__ O, int N,
               iosim_u64* counters) {
  constexpr int NT = BR * 2, SP = BC + MMA_PAD;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  iosim_half* sP = reinterpret_cast<iosim_half*>(smem_raw);  // BR × SP
  iosim_half* sV = sP + BR * SP;                              // BC × SD
  ByteCounter cnt;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int i = blockIdx.x;
  const size_t bh = blockIdx.y;
  const int q0 = i * BR, ri = min(BR, N - q0), row_w = warp * 16, tc = (N + BC - 1) / BC;
  const iosim_half* Ph = P + bh * N * N + (size_t)q0 * N;
  float o[D / 8][4];
#pragma unroll
  for (int dn = 0; dn < D / 8; ++dn) o[dn][0] = o[dn][1] = o[dn][2] = o[dn][3] = 0.f;
  for (int j = 0; j < tc; ++j) {
    const int k0 = j * BC, cj = min(BC, N - k0);
    __syncthreads();  // every warp is done with P_{i,j-1} and V_{j-1}
    if ((N & 7) == 0) {
      for (int e = tid; e < BR * (BC / 8); e += NT) {
        const int r = e / (BC / 8), c = (e % (BC / 8)) * 8;
        const bool ok = r < ri && c < cj;
        cp_async16(smem_addr(sP + r * SP + c), ok ? Ph + (size_t)r * N + k0 + c : Ph, ok ? 16 : 0);
        if (ok) cnt.rd(T_P, 16);
      }
    } else {
      for (int e = tid; e < BR * BC; e += NT) {
        const int r = e / BC, c = e % BC;
        iosim_half x = 0;
        if (r < ri && c < cj) {
          x = Ph[(size_t)r * N + k0 + c];
          cnt.rd(T_P, 2);
        }
        sP[r * SP + c] = x;
      }
    }
    mma_load_tile<BC, D, NT>(sV, V + bh * N * D + (size_t)k0 * D, cj, cnt, T_V);
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();
    unsigned a[BC / 16][4];
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk)
      ldmatrix_x4(a[kk], smem_addr(sP + (row_w + lane % 16) * SP + kk * 16 + (lane / 16) * 8));
    mma_pv<D, BC>(o, a, sV, lane);
  }
  const float one[2] = {1.f, 1.f};
  mma_store_o<D>(O + bh * N * D + (size_t)q0 * D, o, one, row_w, ri, lane, cnt);
  cnt.flush(counters);
}
