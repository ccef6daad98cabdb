// hfstatic/export_macro.h — HFS_API: what the shared library exports.
//
// libhfstatic is built with -fvisibility=hidden and -fvisibility-inlines-hidden: only declarations marked
// HFS_API (the classes and free functions of include/hfstatic/ and include/hfstatic/ext/, the registries
// backends, ops and IO managers use) are visible to programs linking it; everything in src/ stays internal.
//
//   class HFS_API Tokenizer { ... };
//   [[nodiscard]] HFS_API Result<Foo> make_foo();
#pragma once

#if defined(_WIN32)
#define HFS_API
#else
#define HFS_API [[gnu::visibility("default")]]
#endif
