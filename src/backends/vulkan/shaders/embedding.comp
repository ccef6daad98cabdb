#version 450
#extension GL_GOOGLE_include_directive : require
// y[t, :] = table[ids[t], :] (src/ops/embedding.cpp; table f32, f16, bf16 or i8 with per-row scale,
// weight_decode.glsl). Ids that are method inputs are checked
// on the host before the step; an out-of-range id from the device writes zeros rather than reading
// outside the table.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Table { uint w[]; };
layout(std430, binding = 1) readonly buffer Ids { int ids[]; };
layout(std430, binding = 2) readonly buffer S { float scale[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint w_off, ids_off, s_off, y_off, t, k, v, w_dtype; } p;

#include "weight_decode.glsl"

void main() {
  uint n = p.t * p.k;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < n; e += stride) {
    uint t = e / p.k, i = e % p.k;
    int id = ids[p.ids_off + t];
    y[p.y_off + e] = (id >= 0 && uint(id) < p.v) ? weight_at(uint(id), i) : 0.0;
  }
}
