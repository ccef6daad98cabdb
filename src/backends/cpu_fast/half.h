// cpu_fast/half.h — the scalar f16/bf16 <-> f32 conversions of core/half.h (bit-exact with PyTorch,
// portable to any compiler), under the names the cpu_fast kernels use.
#pragma once

#include "core/half.h"

namespace hfs::cpu_fast {

using hfs::bf16_to_f32;
using hfs::f16_to_f32;
using hfs::f32_to_bf16;
using hfs::f32_to_f16;

}  // namespace hfs::cpu_fast
