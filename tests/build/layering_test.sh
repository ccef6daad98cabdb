#!/usr/bin/env bash
# The build enforces the layers (cmake/layers.cmake): a layer compiles against build/layers/<layer>/, which
# holds the public headers (include/hfstatic/, by owning layer) and the internal headers (src/<layer>/) of
# itself and the layers it may use. This checks every edge of the table on the real views, for every layer
# (the library's, the server and the CLI):
#   - forbidden: each public header and each internal header of a layer it may not use is not found from
#     its view (one preprocessor pass per layer: -MM -MG lists a header it cannot find by the name it was
#     asked for, and one it finds by its path in the view);
#   - allowed: every public and internal header of itself and the layers it may use is found in its view,
#     and so is every header they include (one preprocessor pass per layer), so no allowed header reaches
#     past the view either. (Compiling is the build's job: each layer's files compile from their view.)
# Usage: layering_test.sh CXX SOURCE_DIR BINARY_DIR [VULKAN_ENABLED]
set -euo pipefail
cxx=$1 src=$2 bin=$3 vulkan=${4:-ON}
table=$bin/layers/table.txt
[ -f "$table" ] || { echo "FAIL: $table missing (configure the build first)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

declare -A deps owned
while read -r kind name list; do
  case $kind in
    layer) deps[$name]=$list ;;
    headers) owned[$name]=$list ;;
  esac
done <"$table"

# Every header a layer owns, as it is included: hfstatic/<h> for public ones, <layer>/... for src/<layer>/.
headers_of() {
  local layer=$1 h
  for h in ${owned[$layer]//,/ }; do echo "hfstatic/$h"; done
  if [ -d "$src/src/$layer" ]; then
    (cd "$src/src" && find "$layer" -name '*.h' | sort)
  fi
}

check_layer() {
  local layer=$1 view=$bin/layers/$1 m allowed=" $1 ${deps[$1]//,/ } "
  local ok_list=$work/$layer.ok bad_list=$work/$layer.bad
  : >"$ok_list"; : >"$bad_list"
  for m in "${!deps[@]}"; do
    if [[ "$allowed" == *" $m "* ]]; then headers_of "$m" >>"$ok_list"; else headers_of "$m" >>"$bad_list"; fi
  done
  [ "$vulkan" = ON ] || sed -i '\#^backends/vulkan/#d' "$ok_list"
  # Forbidden: none found.
  sed 's/.*/#include "&"/' "$bad_list" >"$work/$layer.bad.cpp"
  local out
  out=$("$cxx" -std=c++20 -MM -MG -I"$view" "$work/$layer.bad.cpp" 2>&1) ||
    { echo "FAIL: $layer: the forbidden-header pass did not run: $out"; return 1; }
  tr ' \\' '\n\n' <<<"$out" | sed '/^$/d' | sort -u >"$work/$layer.deps"
  local fail=0 found
  # Found: a forbidden header listed by its path in the view, or not listed by its bare name.
  found=$(awk -v view="$view/" 'NR == FNR { dep[$0] = 1; next }
                                (view $0) in dep || !($0 in dep) { print }' "$work/$layer.deps" "$bad_list")
  if [ -n "$found" ]; then
    while read -r h; do echo "FAIL: the $layer layer can include $h (owned by a layer it may not use)"; done <<<"$found"
    fail=1
  fi
  # Allowed: each is found in the view, and so is everything it includes (preprocessing stops at the
  # first include it cannot find).
  sed 's/.*/#include "&"/' "$ok_list" >"$work/$layer.ok.cpp"
  if ! out=$("$cxx" -std=c++20 -MM -I"$view" -I"$bin/generated" "$work/$layer.ok.cpp" 2>&1); then
    echo "FAIL: $layer: a header of itself or a layer it may use reaches past its view:"
    echo "$out" | grep -v '^ ' | head -20; fail=1
  else
    tr ' \\' '\n\n' <<<"$out" | sed '/^$/d' | sort -u >"$work/$layer.okdeps"
    found=$(awk -v view="$view/" 'NR == FNR { dep[$0] = 1; next } !((view $0) in dep) { print }' \
                "$work/$layer.okdeps" "$ok_list")
    if [ -n "$found" ]; then
      while read -r h; do echo "FAIL: the $layer layer does not find $h in its view"; done <<<"$found"
      fail=1
    fi
  fi
  echo "$(wc -l <"$bad_list") $(wc -l <"$ok_list")" >"$work/$layer.count"
  return $fail
}
export -f check_layer headers_of
export cxx src bin vulkan work
status=0
printf '%s\n' "${!deps[@]}" | sort |
  xargs -P "${HFS_LAYERING_JOBS:-2}" -I{} bash -c '
    declare -A deps owned
    while read -r kind name list; do
      case $kind in layer) deps[$name]=$list ;; headers) owned[$name]=$list ;; esac
    done <"$bin/layers/table.txt"
    check_layer {}' || status=1
bad=0 ok=0
for f in "$work"/*.count; do read -r b o <"$f"; bad=$((bad + b)) ok=$((ok + o)); done
echo "layering: ${#deps[@]} layers; $bad forbidden edges (layer, header) not found, $ok allowed ones found"
[ $status = 0 ] || { echo "layering: FAILED"; exit 1; }
