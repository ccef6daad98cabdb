#include "hfstatic/error.h"

#include <cstdio>
#include <cstdlib>

namespace hfs {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kOutOfRange: return "out_of_range";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kInternal: return "internal";
    case ErrorCode::kCancelled: return "cancelled";
    case ErrorCode::kResourceExhausted: return "resource_exhausted";
    case ErrorCode::kPermissionDenied: return "permission_denied";
    case ErrorCode::kNetwork: return "network";
    case ErrorCode::kChecksumMismatch: return "checksum_mismatch";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kBadMagic: return "bad_magic";
    case ErrorCode::kBadVersion: return "bad_version";
    case ErrorCode::kTruncated: return "truncated";
    case ErrorCode::kBadManifest: return "bad_manifest";
    case ErrorCode::kTensorOutOfRange: return "tensor_out_of_range";
    case ErrorCode::kTensorOverlap: return "tensor_overlap";
    case ErrorCode::kTensorSizeMismatch: return "tensor_size_mismatch";
    case ErrorCode::kDuplicateName: return "duplicate_name";
    case ErrorCode::kUndefinedValue: return "undefined_value";
    case ErrorCode::kValueRedefined: return "value_redefined";
    case ErrorCode::kCycle: return "cycle";
    case ErrorCode::kUnknownOp: return "unknown_op";
    case ErrorCode::kUnknownAttribute: return "unknown_attribute";
    case ErrorCode::kBadAttribute: return "bad_attribute";
    case ErrorCode::kShapeMismatch: return "shape_mismatch";
    case ErrorCode::kDTypeMismatch: return "dtype_mismatch";
    case ErrorCode::kOutputNotProduced: return "output_not_produced";
    case ErrorCode::kBadAlias: return "bad_alias";
    case ErrorCode::kUseAfterInPlace: return "use_after_in_place";
    case ErrorCode::kMissingMethod: return "missing_method";
    case ErrorCode::kExecution: return "execution";
    case ErrorCode::kBadBinding: return "bad_binding";
    case ErrorCode::kUnknownContract: return "unknown_contract";
    case ErrorCode::kMissingMetadata: return "missing_metadata";
    case ErrorCode::kBadMetadata: return "bad_metadata";
    case ErrorCode::kContractViolation: return "contract_violation";
    case ErrorCode::kCapacityExceeded: return "capacity_exceeded";
    case ErrorCode::kNeedsReset: return "needs_reset";
    case ErrorCode::kUnsupportedModel: return "unsupported_model";
    case ErrorCode::kMissingTensor: return "missing_tensor";
    case ErrorCode::kBadCheckpoint: return "bad_checkpoint";
    case ErrorCode::kTokenizer: return "tokenizer";
  }
  return "unknown";
}

std::string Error::to_string() const { return std::string(error_code_name(code_)) + ": " + message_; }

Error Error::with_context(std::string_view context) const {
  return Error(code_, std::string(context) + ": " + message_);
}

namespace detail {

// Result<T>::value() on an error (or error() on a value) is a caller's bug: abort with the error's message
// rather than throw std::bad_variant_access, which would cross the API as an exception.
void result_access_failed(const char* what, const Error* error) {
  if (error != nullptr) {
    std::fprintf(stderr, "hfstatic: Result::%s() called on an error: %s\n", what, error->to_string().c_str());
  } else {
    std::fprintf(stderr, "hfstatic: Result::%s() called on a value, not an error\n", what);
  }
  std::fflush(stderr);
  std::abort();
}

}  // namespace detail

}  // namespace hfs
