// FlashAttention-3's inner loop on sm_90a, small enough to read: one warpgroup (128 threads) per
// CTA holds a 64-row query tile; every iteration it issues an SS wgmma group S = Q K^T for the
// NEXT key block and an RS wgmma group O += P V for this one (P: the f16 register fragments of
// the previous softmax), then `wgmma.wait_group WAIT_PENDING`, the softmax of the next block,
// then `wgmma.wait_group 0`. With WAIT_PENDING 1 (the `overlap` arm) the softmax needs only
// the first group, so it can run while the second computes; WAIT_PENDING 0 (the `serialized`
// arm) waits for both first. Between the second group's issue and wait_group 0 nothing touches
// O or P: the softmax reads S of the next block only (FA3's intra-warpgroup pipelining).
//
// Sizes: head dimension D = 64, key blocks of BN = 64, KV_TILES key blocks resident in shared
// memory, iteration i using block i % KV_TILES (the work is the loop, not the loads).
// Shared memory is in wgmma's no-swizzle layout: 8x8 core matrices of 128 contiguous bytes,
// LBO = 128 bytes between core matrices along K, SBO = 1024 between them along M/N.
#include <stdint.h>

// f16 values as their bits: the kernel only copies them and packs P with cvt (no cuda_fp16.h,
// which needs CCCL beside the pinned nvcc).
typedef uint16_t f16;

#ifndef WAIT_PENDING
#define WAIT_PENDING 1
#endif

constexpr int M = 64, D = 64, BN = 64, KV_TILES = 2;

struct __align__(128) Smem {
    f16 q[M * D];
    f16 k[KV_TILES][BN * D];   // rows: keys (N), columns: d (K)
    f16 vt[KV_TILES][D * BN];  // V transposed, rows: d (N), columns: keys (K)
};

// Element (r, c) of a 64 x 64 tile in the core-matrix layout (elements, not bytes).
__device__ __forceinline__ int core(int r, int c) {
    return ((r >> 3) * 8 + (c >> 3)) * 64 + (r & 7) * 8 + (c & 7);
}

__device__ __forceinline__ uint64_t desc(const f16* p) {
    uint64_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
    return ((addr & 0x3FFFF) >> 4) | (uint64_t(128 >> 4) << 16) | (uint64_t(1024 >> 4) << 32);
}

// A register "redefined" here for the compiler: no arithmetic on it moves across (CUTLASS's
// warpgroup_fence_operand), so the softmax stays between the two waits.
__device__ __forceinline__ void fence(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void fence(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }

__device__ __forceinline__ float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

#define ACC32(a) \
    "+f"(a[0]), "+f"(a[1]), "+f"(a[2]), "+f"(a[3]), "+f"(a[4]), "+f"(a[5]), "+f"(a[6]), \
    "+f"(a[7]), "+f"(a[8]), "+f"(a[9]), "+f"(a[10]), "+f"(a[11]), "+f"(a[12]), "+f"(a[13]), \
    "+f"(a[14]), "+f"(a[15]), "+f"(a[16]), "+f"(a[17]), "+f"(a[18]), "+f"(a[19]), "+f"(a[20]), \
    "+f"(a[21]), "+f"(a[22]), "+f"(a[23]), "+f"(a[24]), "+f"(a[25]), "+f"(a[26]), "+f"(a[27]), \
    "+f"(a[28]), "+f"(a[29]), "+f"(a[30]), "+f"(a[31])
#define D32 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, " \
    "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"

// S (64 x 64, f32) = A (smem, 64 x 16) * B (smem, 16 x 64), or S += with accumulate.
__device__ __forceinline__ void wgmma_ss(float (&s)[32], uint64_t a, uint64_t b, int accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " D32 ", %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : ACC32(s) : "l"(a), "l"(b), "r"(accumulate));
}

// O (64 x 64, f32) += P (registers, 64 x 16 f16) * B (smem, 16 x 64).
__device__ __forceinline__ void wgmma_rs(float (&o)[32], const uint32_t* p, uint64_t b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " D32
                 ", {%32, %33, %34, %35}, %36, 1, 1, 1, 0;\n"
                 : ACC32(o) : "r"(p[0]), "r"(p[1]), "r"(p[2]), "r"(p[3]), "l"(b));
}

__device__ __forceinline__ void arrive() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// S = Q K_t^T: four k16 slices of D = 64, one group (committed by the caller).
__device__ __forceinline__ void issue_qk(float (&s)[32], const Smem& sm, int t) {
    for (int kk = 0; kk < D / 16; ++kk)  // a k16 slice is two core matrices along K: 256 bytes
        wgmma_ss(s, desc(sm.q + kk * 16 * 8), desc(sm.k[t] + kk * 16 * 8), kk > 0);
}

// O += P V_t: four k16 slices of the 64 keys; P's slice kk is S's columns 16kk .. 16kk + 15.
__device__ __forceinline__ void issue_pv(float (&o)[32], const uint32_t (&p)[16], const Smem& sm, int t) {
    for (int kk = 0; kk < BN / 16; ++kk)
        wgmma_rs(o, p + 4 * kk, desc(sm.vt[t] + kk * 16 * 8));
}

// Online softmax of one key block. A thread holds rows g and g + 8 of its warp's 16 (s[i] is
// row (i >> 1) & 1, column 8 (i >> 2) + 2 (lane & 3) + (i & 1)); four lanes share a row.
// m: running max (log2 units), l: this thread's part of the running sum, alpha: O's rescale.
__device__ __forceinline__ void softmax(float (&s)[32], float (&m)[2], float (&l)[2],
                                        float (&alpha)[2], float scale_log2) {
    for (int r = 0; r < 2; ++r) {
        float mx = -INFINITY;
        for (int j = 0; j < 8; ++j)
            mx = fmaxf(mx, fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 2));
        float m_new = fmaxf(m[r], mx * scale_log2);
        alpha[r] = ex2(m[r] - m_new);
        m[r] = m_new;
        float sum = 0.f;
        for (int j = 0; j < 8; ++j)
            for (int c = 0; c < 2; ++c) {
                float e = ex2(fmaf(s[4 * j + 2 * r + c], scale_log2, -m_new));
                s[4 * j + 2 * r + c] = e;
                sum += e;
            }
        l[r] = fmaf(l[r], alpha[r], sum);
    }
}

// P's f16 fragments from S: wgmma's A layout for slice kk is S's accumulator layout for
// columns 16kk .. 16kk + 15, so each pair of S values packs into one register, in order.
__device__ __forceinline__ void to_p(const float (&s)[32], uint32_t (&p)[16]) {
    for (int i = 0; i < 16; ++i) {
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(p[i]) : "f"(s[2 * i + 1]), "f"(s[2 * i]));  // hi, lo
    }
}

// One iteration's issue half: S of block it + 1 (group 1), O += P V of block it (group 2),
// the wait for group 1 alone (WAIT_PENDING 1) or for both (0), the softmax of block it + 1.
__device__ __forceinline__ void step(float (&s)[32], float (&o)[32], uint32_t (&p)[16], float (&m)[2],
                                     float (&l)[2], float (&alpha)[2], const Smem& sm, int it,
                                     float scale_log2) {
    for (int i = 0; i < 32; ++i) fence(o[i]);
    for (int i = 0; i < 16; ++i) fence(p[i]);
    arrive();
    issue_qk(s, sm, (it + 1) % KV_TILES);
    commit();
    issue_pv(o, p, sm, it % KV_TILES);
    commit();
    wait<WAIT_PENDING>();
    for (int i = 0; i < 32; ++i) fence(s[i]);
    softmax(s, m, l, alpha, scale_log2);
    for (int i = 0; i < 32; ++i) fence(s[i]);
}

// Its other half: wait for group 2, then O (rescaled to the new maxima) and P may change.
__device__ __forceinline__ void finish_step(float (&o)[32], uint32_t (&p)[16], const float (&s)[32],
                                            const float (&alpha)[2]) {
    wait<0>();
    for (int i = 0; i < 32; ++i) fence(o[i]);
    for (int i = 0; i < 32; ++i) o[i] *= alpha[(i >> 1) & 1];
    to_p(s, p);
}

// q: [gridDim.x][M][D], k and v: [KV_TILES][BN][D] (f16, row-major); out: [gridDim.x][M][D] f32.
extern "C" __global__ void __launch_bounds__(128, 1)
attention(const f16* __restrict__ q, const f16* __restrict__ k, const f16* __restrict__ v,
          float* __restrict__ out, int iters, float scale_log2) {
    __shared__ Smem sm;
    const int tid = threadIdx.x;
    const f16* qg = q + size_t(blockIdx.x) * M * D;
    for (int i = tid; i < M * D; i += 128) sm.q[core(i / D, i % D)] = qg[i];
    for (int i = tid; i < KV_TILES * BN * D; i += 128) {
        int t = i / (BN * D), key = (i / D) % BN, d = i % D;
        sm.k[t][core(key, d)] = k[i];
        sm.vt[t][core(d, key)] = v[i];
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic writes -> wgmma
    __syncthreads();

    float s[32], o[32], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2];
    uint32_t p[16];
    for (int i = 0; i < 32; ++i) o[i] = 0.f;

    arrive();
    issue_qk(s, sm, 0);
    commit();
    wait<0>();
    for (int i = 0; i < 32; ++i) fence(s[i]);
    softmax(s, m, l, alpha, scale_log2);
    to_p(s, p);
    step(s, o, p, m, l, alpha, sm, 0, scale_log2);
    // The loop is rotated so that wait_group 0 opens the next iteration: the softmax ends one
    // basic block and the wait begins another, and ptxas's scheduler, which moves a wait up
    // through the instructions of its own block, cannot hoist it into the softmax.
#pragma unroll 1
    for (int it = 1; it + 1 < iters; ++it) {
        finish_step(o, p, s, alpha);
        step(s, o, p, m, l, alpha, sm, it, scale_log2);
    }
    finish_step(o, p, s, alpha);
    arrive();
    issue_pv(o, p, sm, (iters - 1) % KV_TILES);
    commit();
    wait<0>();
    for (int i = 0; i < 32; ++i) fence(o[i]);

    const int warp = tid / 32, lane = tid % 32;
    for (int r = 0; r < 2; ++r) {
        l[r] += __shfl_xor_sync(0xffffffff, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffff, l[r], 2);
    }
    float* og = out + size_t(blockIdx.x) * M * D;
    for (int i = 0; i < 32; ++i) {
        int r = (i >> 1) & 1;
        int row = warp * 16 + lane / 4 + 8 * r, col = 8 * (i >> 2) + 2 * (lane & 3) + (i & 1);
        og[row * D + col] = o[i] / l[r];
    }
}
