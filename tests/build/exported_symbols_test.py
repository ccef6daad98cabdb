"""The shared library exports only its API (docs/architecture.md, "Public API").

Every dynamic symbol libhfstatic.so defines must name something in namespace hfs, and none may live in a
namespace that only src/ declares (a layer's internals: hfs::cpu_fast, hfs::vulkan, hfs::tok, ...). The
internal namespaces are read from the sources, so a new layer is covered without editing this test.
Usage: exported_symbols_test.py LIBRARY SOURCE_DIR
"""
import pathlib
import re
import subprocess
import sys

lib, src = sys.argv[1], pathlib.Path(sys.argv[2])
if not pathlib.Path(lib).is_file():
    sys.exit(f"FAIL: no library at {lib} (build the hfstatic target)")


def namespaces(root):
    found = set()
    for p in root.rglob("*.h*"):
        found.update(re.findall(r"namespace hfs::([a-z_0-9]+)", p.read_text(errors="replace")))
    for p in root.rglob("*.cpp"):
        found.update(re.findall(r"namespace hfs::([a-z_0-9]+)", p.read_text(errors="replace")))
    return found


public = namespaces(src / "include")
# Nested `namespace x {` blocks inside namespace hfs in the public headers (chat, detail).
for p in (src / "include").rglob("*.h"):
    public.update(re.findall(r"^namespace ([a-z_0-9]+) \{", p.read_text(errors="replace"), re.M))
internal = namespaces(src / "src") - public
if not internal:
    sys.exit("FAIL: found no internal namespaces under src/ (the scan is broken)")

out = subprocess.run(["nm", "-DC", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
names = []
for line in out.splitlines():
    parts = line.split(" ", 2)
    if len(parts) == 3:
        names.append(parts[2])
if not names:
    sys.exit(f"FAIL: nm lists no defined dynamic symbols in {lib}")

bad = []
for name in names:
    bare = re.sub(r"^(typeinfo name for|typeinfo for|vtable for|VTT for|construction vtable for|"
                  r"non-virtual thunk to|virtual thunk to|guard variable for) ", "", name)
    if not bare.startswith("hfs::"):
        bad.append(f"outside namespace hfs: {name}")
        continue
    m = re.match(r"hfs::([a-z_0-9]+)::", bare)
    if m and m.group(1) in internal:
        bad.append(f"internal namespace hfs::{m.group(1)}: {name}")
if bad:
    print(f"FAIL: {lib} exports {len(bad)} symbols beyond its API (of {len(names)}):")
    print("\n".join(bad[:40]))
    sys.exit(1)
print(f"ok: {len(names)} exported symbols, all in namespace hfs; none in the {len(internal)} internal "
      f"namespaces ({', '.join(sorted(internal))})")
