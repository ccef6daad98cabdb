#version 450
// cache[0, h, slots[t], :] = rows[0, t, h, :] for each t with slots[t] >= 0, in t order so a later row
// wins a repeated slot (src/ops/kv_cache_write.cpp, f32 cache). One thread per (h, d); slots >= S are
// rejected on the host before the step (and skipped here).
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Cache { float cache[]; };
layout(std430, binding = 1) readonly buffer Rows { float rows[]; };
layout(std430, binding = 2) readonly buffer Slots { int slots[]; };
layout(push_constant) uniform P { uint cache_off, rows_off, slots_off, t, hkv, s, d; } p;

void main() {
  uint n = p.hkv * p.d;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < n; e += stride) {
    uint h = e / p.d, i = e % p.d;
    for (uint t = 0u; t < p.t; ++t) {
      int slot = slots[p.slots_off + t];
      if (slot < 0 || uint(slot) >= p.s) continue;
      cache[p.cache_off + (h * p.s + uint(slot)) * p.d + i] = rows[p.rows_off + (t * p.hkv + h) * p.d + i];
    }
  }
}
