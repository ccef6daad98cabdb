#version 450
#extension GL_GOOGLE_include_directive : require
// cache[0, h, slots[t], :] = rows[0, t, h, :] for each t with slots[t] >= 0, in t order so a later row
// wins a repeated slot (src/ops/kv_cache_write.cpp). One thread per (h, word of the cache row): an f32
// cache word is one value, an f16 one two (rounded to nearest even; D even). Slots >= S are rejected
// on the host before the step (and skipped here).
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Cache { uint cache[]; };
layout(std430, binding = 1) readonly buffer Rows { float rows[]; };
layout(std430, binding = 2) readonly buffer Slots { int slots[]; };
layout(push_constant) uniform P { uint cache_off, rows_off, slots_off, t, hkv, s, d, cache_f16; } p;

#include "half.glsl"

void main() {
  uint per_word = p.cache_f16 != 0u ? 2u : 1u;
  uint words = p.d / per_word;  // per cache row
  uint n = p.hkv * words;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < n; e += stride) {
    uint h = e / words, wi = e % words;
    for (uint t = 0u; t < p.t; ++t) {
      int slot = slots[p.slots_off + t];
      if (slot < 0 || uint(slot) >= p.s) continue;
      uint src = p.rows_off + (t * p.hkv + h) * p.d + wi * per_word;
      uint dst = p.cache_off + (h * p.s + uint(slot)) * words + wi;
      cache[dst] = p.cache_f16 != 0u ? (f32_to_f16(rows[src]) | (f32_to_f16(rows[src + 1u]) << 16))
                                     : floatBitsToUint(rows[src]);
    }
  }
}
