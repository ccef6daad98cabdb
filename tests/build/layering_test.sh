#!/usr/bin/env bash
# The build enforces the layers (cmake/layers.cmake): a layer sees only the internal headers of the layers
# it may use. Proof on the real views: an internal header of cpu_fast compiles from the backends layer's
# view (the control) and is not found from the exporter's, nor from the runtime's (nor llm, ops, core, hub).
# Usage: layering_test.sh CXX SOURCE_DIR BINARY_DIR
set -euo pipefail
cxx=$1 src=$2 bin=$3
probe=$(mktemp --suffix=.cpp)
trap 'rm -f "$probe"' EXIT
echo '#include "backends/cpu_fast/weight_formats.h"' > "$probe"
compile() { "$cxx" -std=c++20 -fsyntax-only -I"$src/include" -I"$bin/layers/$1" "$probe" 2>&1; }
compile backends >/dev/null || { echo "FAIL: the backends layer cannot include its own header"; exit 1; }
for layer in export runtime llm ops core hub; do
  if out=$(compile "$layer"); then
    echo "FAIL: the $layer layer can include a cpu_fast header"; exit 1
  fi
  grep -qiE "No such file|file not found" <<<"$out" || { echo "FAIL: $layer: unexpected error: $out"; exit 1; }
done
echo "layering: 7 passed, 0 failed"
