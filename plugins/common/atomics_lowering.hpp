// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The lowering of the dialect's atomics (gpuhal_atomic_add ... _cas) for
// the backends whose compilers have the GNU __atomic builtins: the host
// backend (g++ / clang++) and hsa (clang's OpenCL C 1.2 for amdgcn). A
// header of string literals only.
//
// Each builtin's text defines a generator macro, then one overload per type
// (int, unsigned int, long, unsigned long, long long, unsigned long long,
// float, double) and per address space the backend names: the host one
// plain pointer, hsa __global and __local (OpenCL 1.2 has no generic
// space). Integer operations map to __atomic_fetch_*; min, max and the
// floating-point ones are compare-and-swap loops on the value's bits (the
// bits, so that the _n builtins, which take integers only, serve floats
// too). Every operation is device scope (system scope on the host, where
// it is one memory), relaxed order, and returns the old value.
#pragma once

// The shared helpers: GPUHAL_PLUGIN_ATOMICS(Q, AS) expands, in the target
// language, to nothing but macro definitions; Q is what every function
// starts with ("static inline", plus overloadable in OpenCL).
#define GPUHAL_PLUGIN_ATOMIC_HELPERS                                                                              \
  "#ifndef __GPUHAL_ATOMIC_HELPERS\n"                                                                           \
  "#define __GPUHAL_ATOMIC_HELPERS\n"                                                                           \
  "#define __GPUHAL_AT_RMW(Q, AS, T, name, builtin) \\\n"                                                        \
  "  Q T name(AS T *p, T v) { return builtin(p, v, __ATOMIC_RELAXED); }\n"                                      \
  /* A CAS loop over the bits B of T: f(old, v) computes the new value. */                                      \
  "#define __GPUHAL_AT_LOOP(Q, AS, T, B, name, f) \\\n"                                                         \
  "  Q T name(AS T *p, T v) { \\\n"                                                                             \
  "    AS B *bits = (AS B *)p; \\\n"                                                                            \
  "    B seen = __atomic_load_n(bits, __ATOMIC_RELAXED), next; \\\n"                                            \
  "    union { B b; T t; } o, n; \\\n"                                                                          \
  "    do { o.b = seen; n.t = f(o.t, v); next = n.b; } \\\n"                                                    \
  "    while (!__atomic_compare_exchange_n(bits, &seen, next, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)); \\\n"    \
  "    o.b = seen; return o.t; }\n"                                                                             \
  "#define __GPUHAL_AT_XCHG(Q, AS, T, B) \\\n"                                                                  \
  "  Q T gpuhal_atomic_xchg(AS T *p, T v) { \\\n"                                                               \
  "    union { B b; T t; } in, out; in.t = v; \\\n"                                                             \
  "    out.b = __atomic_exchange_n((AS B *)p, in.b, __ATOMIC_RELAXED); return out.t; }\n"                       \
  "#define __GPUHAL_AT_CAS(Q, AS, T, B) \\\n"                                                                   \
  "  Q T gpuhal_atomic_cas(AS T *p, T expected, T desired) { \\\n"                                              \
  "    union { B b; T t; } e, d; e.t = expected; d.t = desired; \\\n"                                           \
  "    __atomic_compare_exchange_n((AS B *)p, &e.b, d.b, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED); return e.t; }\n" \
  "#define __GPUHAL_AT_ADD_F(a, b) ((a) + (b))\n"                                                               \
  "#define __GPUHAL_AT_SUB_F(a, b) ((a) - (b))\n"                                                               \
  "#define __GPUHAL_AT_MIN_F(a, b) ((b) < (a) ? (b) : (a))\n"                                                   \
  "#define __GPUHAL_AT_MAX_F(a, b) ((b) > (a) ? (b) : (a))\n"                                                   \
  "#endif\n"

// Per builtin: the overloads of one operation for every type of an address
// space, through __GPUHAL_AT_EACH_<op>(Q, AS); the backend then writes one
// line per address space. INT_TYPES(X, Q, AS) lists the integer types with
// their same-size bit types.
#define GPUHAL_PLUGIN_ATOMIC_INT_RMW(NAME, BUILTIN)                                                     \
  "#define __GPUHAL_AT_EACH_" NAME "(Q, AS) \\\n"                                                       \
  "  __GPUHAL_AT_RMW(Q, AS, int, gpuhal_atomic_" NAME ", " BUILTIN ") \\\n"                              \
  "  __GPUHAL_AT_RMW(Q, AS, unsigned int, gpuhal_atomic_" NAME ", " BUILTIN ") \\\n"                     \
  "  __GPUHAL_AT_RMW(Q, AS, long, gpuhal_atomic_" NAME ", " BUILTIN ") \\\n"                             \
  "  __GPUHAL_AT_RMW(Q, AS, unsigned long, gpuhal_atomic_" NAME ", " BUILTIN ")\n"

#define GPUHAL_PLUGIN_ATOMIC_LOOP_ALL(NAME, F)                                                          \
  "#define __GPUHAL_AT_EACH_" NAME "(Q, AS) \\\n"                                                       \
  "  __GPUHAL_AT_LOOP(Q, AS, int, int, gpuhal_atomic_" NAME ", " F ") \\\n"                              \
  "  __GPUHAL_AT_LOOP(Q, AS, unsigned int, unsigned int, gpuhal_atomic_" NAME ", " F ") \\\n"           \
  "  __GPUHAL_AT_LOOP(Q, AS, long, long, gpuhal_atomic_" NAME ", " F ") \\\n"                            \
  "  __GPUHAL_AT_LOOP(Q, AS, unsigned long, unsigned long, gpuhal_atomic_" NAME ", " F ") \\\n"         \
  "  __GPUHAL_AT_LOOP(Q, AS, float, unsigned int, gpuhal_atomic_" NAME ", " F ") \\\n"                   \
  "  __GPUHAL_AT_LOOP(Q, AS, double, unsigned long, gpuhal_atomic_" NAME ", " F ")\n"

// add and sub: the integers through their builtin, floats through the loop.
#define GPUHAL_PLUGIN_ATOMIC_ARITH(NAME, BUILTIN, F)                                                   \
  "#define __GPUHAL_AT_EACH_" NAME "(Q, AS) \\\n"                                                       \
  "  __GPUHAL_AT_RMW(Q, AS, int, gpuhal_atomic_" NAME ", " BUILTIN ") \\\n"                              \
  "  __GPUHAL_AT_RMW(Q, AS, unsigned int, gpuhal_atomic_" NAME ", " BUILTIN ") \\\n"                     \
  "  __GPUHAL_AT_RMW(Q, AS, long, gpuhal_atomic_" NAME ", " BUILTIN ") \\\n"                             \
  "  __GPUHAL_AT_RMW(Q, AS, unsigned long, gpuhal_atomic_" NAME ", " BUILTIN ") \\\n"                    \
  "  __GPUHAL_AT_LOOP(Q, AS, float, unsigned int, gpuhal_atomic_" NAME ", " F ") \\\n"                   \
  "  __GPUHAL_AT_LOOP(Q, AS, double, unsigned long, gpuhal_atomic_" NAME ", " F ")\n"

#define GPUHAL_PLUGIN_ATOMIC_BITS(NAME, WHICH)                                                          \
  "#define __GPUHAL_AT_EACH_" NAME "(Q, AS) \\\n"                                                       \
  "  " WHICH "(Q, AS, int, int) " WHICH "(Q, AS, unsigned int, unsigned int) \\\n"                      \
  "  " WHICH "(Q, AS, long, long) " WHICH "(Q, AS, unsigned long, unsigned long) \\\n"                  \
  "  " WHICH "(Q, AS, float, unsigned int) " WHICH "(Q, AS, double, unsigned long)\n"
