// A ConstantStore that owns its constants in memory: the tests' stand-in for a program file's mapping.
// `releases` makes it report releasable pages as a file-mapped store does (cpu_fast then copies float
// constants and gathers float embeddings from its copy); `scribble` overwrites named constants in place
// (views stay valid), so a test can show that a backend reads only its own copies afterwards.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/ext/backend.h"

namespace hfs::test {

class MemoryConstantStore : public ConstantStore {
 public:
  const TensorView* find(std::string_view name) const override {
    auto it = views_.find(name);
    return it == views_.end() ? nullptr : &it->second;
  }
  Status add(const std::string& name, const TensorType& type, std::span<const std::byte> bytes) override {
    auto& b = bytes_[name];
    b.assign(reinterpret_cast<const uint8_t*>(bytes.data()), reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size());
    views_[name] = TensorView(b.data(), type.dtype, type.shape);
    return Ok{};
  }
  bool releases_pages() const override { return releases; }
  bool releases = false;

  void scribble(std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (auto it = bytes_.find(n); it != bytes_.end()) std::fill(it->second.begin(), it->second.end(), uint8_t{0x5a});
  }

 private:
  std::map<std::string, std::vector<uint8_t>, std::less<>> bytes_;
  std::map<std::string, TensorView, std::less<>> views_;
};

}  // namespace hfs::test
