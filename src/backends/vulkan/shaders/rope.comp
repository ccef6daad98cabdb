#version 450
// HF rotary embedding, rotate_half layout, on the first R = 2 * half dims (src/ops/rope.cpp):
//   f = float(pos[t]) * inv_freq[j]; y[j] = x[j] cos f - x[j + half] sin f; y[j + half] = x[j + half] cos f
//   + x[j] sin f (cos and sin times attention_scaling); dims >= R pass through.
// GLSL's sin/cos are only specified on [-pi, pi] with 2^-11 absolute error, so the angle is reduced and
// evaluated here (Cody-Waite reduction by pi/4 in three parts, then the minimax polynomials of Cephes'
// sinf/cosf): about 1 ulp for angles up to ~1e5 radians, the same on every device.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Pos { int pos[]; };
layout(std430, binding = 2) readonly buffer Inv { float inv_freq[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint x_off, pos_off, inv_off, y_off, t, h, d, half_dim; float scaling; } p;

// (sin a, cos a) for a >= 0.
vec2 sincos_ref(float a) {
  const float FOPI = 1.27323954473516;  // 4 / pi
  const float DP1 = 0.78515625, DP2 = 2.4187564849853515625e-4, DP3 = 3.77489497744594108e-8;
  uint j = uint(FOPI * a);
  precise float yj = float(j);
  if ((j & 1u) != 0u) { j += 1u; yj += 1.0; }
  j &= 7u;
  float sin_sign = 1.0, cos_sign = 1.0;
  if (j > 3u) { j -= 4u; sin_sign = -sin_sign; cos_sign = -cos_sign; }
  if (j > 1u) cos_sign = -cos_sign;
  precise float r = ((a - yj * DP1) - yj * DP2) - yj * DP3;
  precise float z = r * r;
  precise float s = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
  precise float c = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
  bool swap = (j == 1u || j == 2u);
  return vec2(sin_sign * (swap ? c : s), cos_sign * (swap ? s : c));
}

void main() {
  uint n = p.t * p.h * p.d;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < n; e += stride) {
    uint i = e % p.d, row = e / p.d;
    uint t = row / p.h;
    uint base = p.x_off + row * p.d;
    if (i >= 2u * p.half_dim) {
      y[p.y_off + e] = x[base + i];
      continue;
    }
    uint j = i < p.half_dim ? i : i - p.half_dim;
    precise float f = float(pos[p.pos_off + t]) * inv_freq[p.inv_off + j];
    vec2 sc = sincos_ref(abs(f));
    precise float sn = (f < 0.0 ? -sc.x : sc.x) * p.scaling;
    precise float cs = sc.y * p.scaling;
    precise float lo = x[base + j], hi = x[base + j + p.half_dim];
    precise float v = i < p.half_dim ? lo * cs + (-hi * sn) : hi * cs + lo * sn;
    y[p.y_off + e] = v;
  }
}
