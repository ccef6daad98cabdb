// core/vector_clones.h — whole-vocabulary loops compiled once per x86 vector level (internal).
//
// The library is built for baseline x86-64 (SSE2), so a plain loop over a row of 151936 logits runs four
// floats at a time. The host checks and samples every row of every step on one thread while the
// backend's other threads wait, so at 8 rows a step these loops are a visible share of the step.
// HFS_VECTOR_CLONES on a function compiles it for AVX-512, AVX2 and the baseline, and the loader picks
// the copy the CPU runs (GCC / clang function multiversioning). Only for loops whose result does not
// depend on the vector width — compares and selects, not float sums — so every CPU gets the same answer.
//
// Not under ThreadSanitizer or AddressSanitizer: the loader runs the compiler's chooser (an ifunc
// resolver) while it relocates the library, before the sanitizer's runtime is set up, and an
// instrumented chooser crashes there. Those builds take the baseline loop.
#pragma once

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define HFS_VECTOR_CLONES_SANITIZED_ 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define HFS_VECTOR_CLONES_SANITIZED_ 1
#endif

#if defined(__x86_64__) && defined(__ELF__) && !defined(HFS_VECTOR_CLONES_SANITIZED_)
#define HFS_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define HFS_VECTOR_CLONES
#endif
