// Slices that need no dispatch: a slice whose every dim before its axis is 1 (decode's single row of a
// fused Q/K/V or gate/up projection, fuse_linear_pass.h) is a contiguous byte range of its source, so
// the delegate binds the source's buffer at that offset instead of copying — as it does for reshape.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "hfstatic/ext/backend.h"
#include "runtime/graph_analysis.h"
#include "runtime/subgraph_storage.h"

namespace hfs::vulkan {

// Slice output → (its source value, byte offset in the source); plan_subgraph_storage takes these.
using SliceViews = detail::ValueViews;

// The subgraph's slices that can be views. Left as copies: a slice whose result (or a view of it) is a
// subgraph output (it must land in the caller's buffer), one whose result is updated in place, and one
// whose source is updated in place (a copy keeps the old values; a view would not).
SliceViews slice_views(const Subgraph& sg, const detail::TypeMap& types,
                       const std::function<std::string(const std::string&)>& root_of);

}  // namespace hfs::vulkan
