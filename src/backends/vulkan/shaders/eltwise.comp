#version 450
// y = f(a, b) elementwise (lowering.cpp's Elt codes): add, mul, silu, scale, softcap, gelu_tanh. Unary ops
// bind a twice. The formulas are the reference kernels' (src/ops/<op>.cpp), in f32.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint a_off, b_off, y_off, n, op;
  float value;
} p;

// tanh without overflow for large |x| (exp(2x) would be inf/inf).
float safe_tanh(float x) {
  float t = exp(-2.0 * abs(x));
  float r = (1.0 - t) / (1.0 + t);
  return x < 0.0 ? -r : r;
}

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    precise float x = a[p.a_off + i];
    precise float r;
    if (p.op == 0u) r = x + b[p.b_off + i];
    else if (p.op == 1u) r = x * b[p.b_off + i];
    else if (p.op == 2u) r = x / (1.0 + exp(-x));
    else if (p.op == 3u) r = x * p.value;
    else if (p.op == 4u) r = safe_tanh(x / p.value) * p.value;
    else {
      float inner = 0.7978845608028654 * (x + 0.044715 * (x * x * x));
      r = 0.5 * x * (1.0 + safe_tanh(inner));
    }
    y[p.y_off + i] = r;
  }
}
