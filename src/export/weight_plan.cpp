// Weight planning: the stored dtype of every weight and the producer of its bytes. Planning reads tensor
// headers only; the producers (copy, convert, quantize with core/quant.h) run when the file is written.
#include "export/weight_plan.h"

#include <cmath>
#include <set>
#include <span>

#include "core/quant.h"
#include "export/convert.h"

namespace hfs {
namespace {

// Every weight the methods read, in graph order: this order is the constants' order in the file. A tied LM
// head is listed too; it carries the embedding's name and is merged with it by plan_weights.
std::vector<const WeightRef*> all_weights(const ModelSpec& s) {
  std::vector<const WeightRef*> out{&s.embed};
  for (const LayerSpec& L : s.layers)
    for (const WeightRef* w : {&L.attn_norm, &L.q, &L.q_bias, &L.k, &L.k_bias, &L.v, &L.v_bias, &L.q_norm, &L.k_norm,
                               &L.o, &L.o_bias, &L.post_attn_norm, &L.ff_norm, &L.gate, &L.gate_bias, &L.up, &L.up_bias,
                               &L.down, &L.down_bias, &L.moe.router, &L.moe.gate, &L.moe.up, &L.moe.down,
                               &L.moe.shared_gate, &L.moe.shared_up, &L.moe.shared_down, &L.moe.shared_expert_gate,
                               &L.post_ff_norm})
      if (w->present()) out.push_back(w);
  out.push_back(&s.final_norm);
  out.push_back(&s.lm_head);
  return out;
}

// "tensor 'model.embed_tokens.weight'" or "tensor 'qkv_proj.weight' rows 0:64", for messages.
std::string source_label(const WeightRef& w) {
  std::string s = "tensor '" + w.source + "'";
  if (!w.stack.empty()) s = "tensors '" + w.stack.front() + "' .. '" + w.stack.back() + "' stacked";
  if (w.row_end > 0) s += " rows " + std::to_string(w.row_begin) + ":" + std::to_string(w.row_end);
  return s;
}

// Methods name their constants, so one name must mean one tensor: two references under one name are the
// same weight only when they read the same rows of the same checkpoint tensor. Anything else (an
// architecture naming two tensors alike) would make every method read whichever was planned first.
Status check_same_source(const ModelSpec& spec, const WeightRef& first, const WeightRef& again) {
  if (first.source == again.source && first.stack == again.stack && first.row_begin == again.row_begin && first.row_end == again.row_end) return Ok{};
  return make_error(ErrorCode::kInternal, spec.arch + ": constant '" + again.name + "' is planned from " +
                                              source_label(first) + " and from " + source_label(again));
}

bool is_float(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// One checkpoint tensor of a weight (the only one, or one expert of a stack): present, shaped, float.
Result<DType> check_source(const WeightRef& w, const std::string& source, const Checkpoint& ck, const HfConfig& cfg) {
  const SafetensorInfo* t = ck.find(source);
  if (!t)
    return make_error(ErrorCode::kMissingTensor, ck.dir() + ": tensor '" + source + "' not found in the checkpoint");
  const std::string where = ck.dir() + "/" + ck.file_of(source) + ": tensor '" + source + "'";
  if (t->shape != w.source_shape)
    return make_error(ErrorCode::kBadCheckpoint,
                      where + ": expected shape " + w.source_shape.to_string() + ", got " + t->shape.to_string() +
                          (w.dims.empty() ? "" : " (the expected shape is " + w.dims + " from " + cfg.where + ")"));
  if (w.row_end > 0 && (w.row_begin < 0 || w.row_end > t->shape[0] || w.row_begin >= w.row_end))
    return make_error(ErrorCode::kInternal, where + ": row range out of bounds");
  if (!is_float(t->dtype))
    return make_error(ErrorCode::kUnsupportedModel,
                      where + ": dtype " + std::string(dtype_name(t->dtype)) + " (only f32/f16/bf16 weights are supported)");
  return t->dtype;
}

// Checks one weight against the checkpoint and returns the dtype to store it in. A stack keeps the
// checkpoint's dtype under "keep" only when every expert has it (else f32).
Result<DType> check_weight(const WeightRef& w, const Checkpoint& ck, const HfConfig& cfg, WeightsMode mode,
                           bool embedding_or_head) {
  HFS_ASSIGN_OR_RETURN(DType src, check_source(w, w.source, ck, cfg));
  for (const std::string& part : w.stack) {
    HFS_ASSIGN_OR_RETURN(DType d, check_source(w, part, ck, cfg));
    if (d != src) src = DType::kF32;
  }
  if (w.role != WeightRef::Role::kMatrix) return DType::kF32;
  switch (mode) {
    case WeightsMode::kKeep: return src;
    case WeightsMode::kF32: return DType::kF32;
    case WeightsMode::kF16: return DType::kF16;
    case WeightsMode::kBF16: return DType::kBF16;
    // The embedding table (also the LM head when tied) and an untied LM head stay int8 under int4, as
    // llama.cpp keeps its output tensor at Q6_K/Q8_0: 4-bit logits cost noticeably more accuracy than
    // 4-bit layers. q4_0 needs whole blocks along K.
    case WeightsMode::kInt8: return DType::kI8;
    case WeightsMode::kInt4:
      return embedding_or_head ? DType::kI8
                               : (w.shape()[w.shape().rank() - 1] % quant::kQBlock == 0 ? DType::kQ4_0 : DType::kI8);
  }
  return DType::kF32;
}

// The f32 values of a weight's (row range of its) checkpoint tensor: the one tensor held in RAM while a
// quantized constant is produced.
Result<std::vector<float>> weight_as_f32(const Checkpoint& ck, const std::string& source, int64_t rb, int64_t re) {
  const SafetensorInfo* t = ck.find(source);
  auto bytes = ck.data(source);
  if (!t || !bytes) return make_error(ErrorCode::kMissingTensor, "tensor '" + source + "' vanished from the checkpoint");
  std::span<const std::byte> src = *bytes;
  if (re > 0) {
    const uint64_t row_bytes = t->shape[0] > 0 ? t->nbytes / static_cast<uint64_t>(t->shape[0]) : 0;
    src = src.subspan(static_cast<size_t>(rb) * row_bytes, static_cast<size_t>(re - rb) * row_bytes);
  }
  const size_t n = src.size() / dtype_info(t->dtype).block_bytes;
  std::vector<float> out(n);
  HFS_TRY_CTX(convert_floats(src, t->dtype, std::as_writable_bytes(std::span(out)), DType::kF32), "tensor '" + source + "'");
  return out;
}

// The content key of a weight's bytes: its checkpoint tensor(s) and row range.
std::string source_key(const WeightRef& w) {
  std::string key = "ckpt:" + w.source;
  for (size_t e = 1; e < w.stack.size(); ++e) key += "+" + w.stack[e];
  return key + "|rows " + std::to_string(w.row_begin) + ":" + std::to_string(w.row_end);
}

// Quantized weight (i8 or q4_0) and, for i8, its per-row scale constant "<name>.scale" ([E, N] for a stack).
// A stack is quantized expert by expert into its slice of the constant, so one expert's f32 copy is the most
// held in RAM; the reported error is over the whole stack.
std::vector<PlannedConstant> quantized_constants(const WeightRef& w, DType to, std::shared_ptr<const Checkpoint> ck,
                                                 const ExportOptions& opt) {
  const Shape shape = w.shape();
  const std::vector<std::string> parts = w.sources();
  const int64_t k = shape[shape.rank() - 1];
  const int64_t rows = (w.row_end > 0 ? w.row_end - w.row_begin : w.source_shape[0]);  // per part
  const std::string key = source_key(w), name = w.name;
  const int64_t rb = w.row_begin, re = w.row_end;
  auto report = opt.on_quantized;
  std::vector<PlannedConstant> out;
  PlannedConstant q;
  q.name = w.name;
  q.type = {to, shape};
  q.content_key = key + "|" + std::string(dtype_name(to));
  q.produce = [ck, parts, name, rb, re, rows, k, to, report](std::span<std::byte> dst) -> Status {
    const size_t part_bytes = dst.size() / parts.size();
    double num = 0, den = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      HFS_ASSIGN_OR_RETURN(std::vector<float> f, weight_as_f32(*ck, parts[p], rb, re));
      std::vector<float> back(f.size());
      auto* d = reinterpret_cast<uint8_t*>(dst.data() + p * part_bytes);
      if (to == DType::kQ4_0) {
        HFS_TRY(quant::quantize_q4_0(f.data(), rows, k, d));
        quant::dequantize_q4_0(d, rows, k, back.data());
      } else {
        std::vector<float> scale(static_cast<size_t>(rows));
        quant::quantize_i8_per_channel(f.data(), rows, k, reinterpret_cast<int8_t*>(d), scale.data());
        quant::dequantize_i8_per_channel(reinterpret_cast<const int8_t*>(d), scale.data(), rows, k, back.data());
      }
      for (size_t i = 0; i < f.size(); ++i) {
        const double e = static_cast<double>(back[i]) - f[i];
        num += e * e;
        den += static_cast<double>(f[i]) * f[i];
      }
    }
    if (report) report(name, to, den == 0 ? (num == 0 ? 0.0 : INFINITY) : std::sqrt(num / den));
    return Ok{};
  };
  out.push_back(std::move(q));
  if (to == DType::kI8) {
    PlannedConstant s;
    s.name = w.name + ".scale";
    s.type = {DType::kF32, w.stack.empty() ? Shape{rows} : Shape{static_cast<int64_t>(parts.size()), rows}};
    s.content_key = key + "|i8.scale";
    s.produce = [ck, parts, rb, re, rows, k](std::span<std::byte> dst) -> Status {
      for (size_t p = 0; p < parts.size(); ++p) {
        HFS_ASSIGN_OR_RETURN(std::vector<float> f, weight_as_f32(*ck, parts[p], rb, re));
        std::vector<int8_t> q(f.size());
        quant::quantize_i8_per_channel(f.data(), rows, k, q.data(), reinterpret_cast<float*>(dst.data()) + p * static_cast<size_t>(rows));
      }
      return Ok{};
    };
    out.push_back(std::move(s));
  }
  return out;
}

// A weight stored as a float dtype: the checkpoint's bytes when the dtype is unchanged (copied file to file),
// else converted row range by row range when the file is written. A stack is converted expert by expert.
PlannedConstant weight_constant(const WeightRef& w, DType to, std::shared_ptr<const Checkpoint> ck) {
  PlannedConstant c;
  c.name = w.name;
  c.type = {to, w.shape()};
  c.content_key = source_key(w) + "|" + std::string(dtype_name(to));
  const std::vector<std::string> parts = w.sources();
  const int64_t rb = w.row_begin, re = w.row_end;
  if (const SafetensorInfo* t = ck->find(w.source); t && t->dtype == to && w.stack.empty()) {
    // Unchanged bytes (rows of a fused tensor are contiguous too): copied file to file by the writer.
    const uint64_t row_bytes = t->shape.rank() > 0 && t->shape[0] > 0 ? t->nbytes / static_cast<uint64_t>(t->shape[0]) : 0;
    c.source_file = ck->dir() + "/" + ck->file_of(w.source);
    c.source_offset = t->offset + (re > 0 ? static_cast<uint64_t>(rb) * row_bytes : 0);
  }
  c.produce = [ck = std::move(ck), parts, rb, re, to](std::span<std::byte> dst) -> Status {
    const size_t part_bytes = dst.size() / parts.size();
    for (size_t p = 0; p < parts.size(); ++p) {
      const std::string& source = parts[p];
      const SafetensorInfo* t = ck->find(source);
      auto bytes = ck->data(source);
      if (!t || !bytes) return make_error(ErrorCode::kMissingTensor, "tensor '" + source + "' vanished from the checkpoint");
      std::span<const std::byte> src = *bytes;
      if (re > 0) {
        const uint64_t row_bytes = t->shape[0] > 0 ? t->nbytes / static_cast<uint64_t>(t->shape[0]) : 0;
        src = src.subspan(static_cast<size_t>(rb) * row_bytes, static_cast<size_t>(re - rb) * row_bytes);
      }
      HFS_TRY_CTX(convert_floats(src, t->dtype, dst.subspan(p * part_bytes, part_bytes), to), "tensor '" + source + "'");
    }
    return Ok{};
  };
  return c;
}

}  // namespace

Result<WeightPlan> plan_weights(const ModelSpec& spec, const HfConfig& cfg, const std::shared_ptr<const Checkpoint>& ck,
                                const ExportOptions& opt) {
  WeightPlan plan;
  std::map<std::string, const WeightRef*> planned;  // constant name → the reference it was planned from
  std::set<std::pair<std::string, DType>> listed;
  for (const WeightRef* w : all_weights(spec)) {
    HFS_ASSIGN_OR_RETURN(DType dt, check_weight(*w, *ck, cfg, opt.weights, w == &spec.embed || w == &spec.lm_head));
    // A name seen before is the same tensor referenced again (a tied LM head): stored once, in the dtype
    // first chosen.
    if (auto [it, first] = planned.emplace(w->name, w); !first) {
      HFS_TRY(check_same_source(spec, *it->second, *w));
    } else {
      plan.stored[w->name] = dt;
      if (w == &spec.embed) plan.embed_dtype = dt;
      plan.n_params += w->shape().numel();
      if (dt == DType::kI8 || dt == DType::kQ4_0) {
        for (PlannedConstant& c : quantized_constants(*w, dt, ck, opt)) plan.constants.push_back(std::move(c));
      } else {
        plan.constants.push_back(weight_constant(*w, dt, ck));
      }
    }
    for (const std::string& source : w->sources())
      if (std::pair<std::string, DType> v{source, plan.stored.at(w->name)}; listed.insert(v).second)
        plan.value_checks.push_back(std::move(v));
  }
  return plan;
}

}  // namespace hfs
