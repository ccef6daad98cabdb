#version 450
#extension GL_GOOGLE_include_directive : require
// HF eager attention over a static cache (f32 or f16) with the contract's additive mask (src/ops/attention.cpp), one
// workgroup per (query head h, row t), flash-style: slots in tiles of 64 (a score per thread), a running
// max and sum rescale the accumulators (each thread owns dims tid, tid + 64, ...; head dim <= 256).
//   s_j = dot(q, k_j) * scale; softcap > 0: s_j = tanh(s_j / softcap) * softcap; s_j += mask[t, j]
//   out = sum_j softmax(s)_j v_j; query head h reads kv head h / (Hq / Hkv).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { uint kc[]; };
layout(std430, binding = 2) readonly buffer V { uint vc[]; };
layout(std430, binding = 3) readonly buffer M { float mask[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint q_off, k_off, v_off, m_off, y_off, t, hq, hkv, s, d;
  float scale, softcap;
  uint cache_f16;
} p;

// Element i of the K or V cache, from word offset `off`: f32, or f16 two to a word (exact).
float k_at(uint i) {
  if (p.cache_f16 == 0u) return uintBitsToFloat(kc[p.k_off + i]);
  return unpackHalf2x16(kc[p.k_off + (i >> 1)] >> ((i & 1u) * 16u)).x;
}
float v_at(uint i) {
  if (p.cache_f16 == 0u) return uintBitsToFloat(vc[p.v_off + i]);
  return unpackHalf2x16(vc[p.v_off + (i >> 1)] >> ((i & 1u) * 16u)).x;
}

shared float qs[256];
shared float ps[64];

float safe_tanh(float x) {
  float e = exp(-2.0 * abs(x));
  float r = (1.0 - e) / (1.0 + e);
  return x < 0.0 ? -r : r;
}

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
  uint kvh = h / (p.hq / p.hkv);
  uint qbase = p.q_off + (t * p.hq + h) * p.d;
  uint kvbase = kvh * p.s * p.d;
  for (uint i = tid; i < p.d; i += 64u) qs[i] = q[qbase + i];
  barrier();
  const float NEG_INF = uintBitsToFloat(0xff800000u);
  float run_max = NEG_INF, run_sum = 0.0;
  float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
  for (uint base = 0u; base < p.s; base += 64u) {
    uint j = base + tid;
    float sj = NEG_INF;
    if (j < p.s) {
      float dot = 0.0;
      uint kb = kvbase + j * p.d;
      for (uint i = 0u; i < p.d; ++i) dot += qs[i] * k_at(kb + i);
      sj = dot * p.scale;
      if (p.softcap > 0.0) sj = safe_tanh(sj / p.softcap) * p.softcap;
      sj += mask[p.m_off + t * p.s + j];
    }
    ps[tid] = sj;
    barrier();
    float tile_max = NEG_INF;
    for (uint u = 0u; u < 64u; ++u) tile_max = max(tile_max, ps[u]);
    float new_max = max(run_max, tile_max);
    float corr = run_max == NEG_INF ? 0.0 : exp(run_max - new_max);
    barrier();
    ps[tid] = j < p.s ? exp(sj - new_max) : 0.0;
    barrier();
    float tile_sum = 0.0;
    uint n = min(64u, p.s - base);
    for (uint r = 0u; r < 4u; ++r) acc[r] *= corr;
    for (uint u = 0u; u < n; ++u) {
      float pu = ps[u];
      tile_sum += pu;
      uint vb = kvbase + (base + u) * p.d;
      for (uint r = 0u; r < 4u; ++r) {
        uint i = tid + r * 64u;
        if (i < p.d) acc[r] += pu * v_at(vb + i);
      }
    }
    run_sum = run_sum * corr + tile_sum;
    run_max = new_max;
    barrier();
  }
  for (uint r = 0u; r < 4u; ++r) {
    uint i = tid + r * 64u;
    if (i < p.d) y[p.y_off + (t * p.hq + h) * p.d + i] = acc[r] / run_sum;
  }
}
