// cpu_fast/weight_formats.h — the weight formats of core/quant.h (one definition, shared with the
// exporter and the reference ops) under the names the cpu_fast kernels, tests and benchmarks use.
#pragma once

#include "core/quant.h"

namespace hfs::cpu_fast {

using quant::kQ4Bytes;
using quant::kQ8Bytes;
using quant::kQBlock;
using quant::kQScaleBytes;
using quant::q4_0_bytes;
using quant::q8_0_bytes;

using quant::dequantize_bf16;
using quant::dequantize_f16;
using quant::dequantize_i8_per_channel;
using quant::dequantize_q4_0;
using quant::dequantize_q8_0;
using quant::quantize_bf16;
using quant::quantize_f16;
using quant::quantize_i8_per_channel;
using quant::quantize_q4_0;
using quant::quantize_q8_0;

using quant::quantization_error;
using quant::QuantReport;
using quant::relative_rms_error;

}  // namespace hfs::cpu_fast
