#version 450
// y[t, :] = table[ids[t], :] (src/ops/embedding.cpp, f32 table). Ids that are method inputs are checked
// on the host before the step; an out-of-range id from the device writes zeros rather than reading
// outside the table.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Table { float table[]; };
layout(std430, binding = 1) readonly buffer Ids { int ids[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint table_off, ids_off, y_off, t, h, v; } p;

void main() {
  uint n = p.t * p.h;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < n; e += stride) {
    uint t = e / p.h, i = e % p.h;
    int id = ids[p.ids_off + t];
    y[p.y_off + e] = (id >= 0 && uint(id) < p.v) ? table[p.table_off + uint(id) * p.h + i] : 0.0;
  }
}
