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
  /* The _explicit forms: the order's and scope's arguments go to the        */                                 \
  /* backend's __GPUHAL_AT_SCOPED / _CAS_SCOPED / _XCHG_SCOPED, which the      */                                 \
  /* backend defines before it expands these (GPUHAL_PLUGIN_ATOMIC_SCOPES_*). */                                 \
  "#define __GPUHAL_AT_ORDER(o) ((o) == 0 ? __ATOMIC_RELAXED : (o) == 4 ? __ATOMIC_ACQ_REL : __ATOMIC_SEQ_CST)\n" \
  "#define __GPUHAL_AT_FAIL_ORDER(o) ((o) == 0 ? __ATOMIC_RELAXED : (o) == 4 ? __ATOMIC_ACQUIRE : __ATOMIC_SEQ_CST)\n" \
  "#define __GPUHAL_AT_RMW_X(Q, AS, T, name, builtin) \\\n"                                                      \
  "  Q T name(AS T *p, T v, int order, int scope) { return __GPUHAL_AT_SCOPED(builtin, p, v, order, scope); }\n" \
  "#define __GPUHAL_AT_LOOP_X(Q, AS, T, B, name, f) \\\n"                                                       \
  "  Q T name(AS T *p, T v, int order, int scope) { \\\n"                                                      \
  "    AS B *bits = (AS B *)p; \\\n"                                                                          \
  "    B seen = __atomic_load_n(bits, __ATOMIC_RELAXED), next; \\\n"                                          \
  "    union { B b; T t; } o, n; \\\n"                                                                        \
  "    do { o.b = seen; n.t = f(o.t, v); next = n.b; } \\\n"                                                  \
  "    while (!__GPUHAL_AT_CAS_SCOPED(bits, &seen, next, 1, order, scope)); \\\n"                             \
  "    o.b = seen; return o.t; }\n"                                                                           \
  "#define __GPUHAL_AT_XCHG_X(Q, AS, T, B) \\\n"                                                                \
  "  Q T gpuhal_atomic_xchg_explicit(AS T *p, T v, int order, int scope) { \\\n"                             \
  "    union { B b; T t; } in, out; in.t = v; \\\n"                                                           \
  "    out.b = __GPUHAL_AT_XCHG_SCOPED((AS B *)p, in.b, order, scope); return out.t; }\n"                     \
  "#define __GPUHAL_AT_CAS_X(Q, AS, T, B) \\\n"                                                                 \
  "  Q T gpuhal_atomic_cas_explicit(AS T *p, T expected, T desired, int order, int scope) { \\\n"            \
  "    union { B b; T t; } e, d; e.t = expected; d.t = desired; \\\n"                                         \
  "    __GPUHAL_AT_CAS_SCOPED((AS B *)p, &e.b, d.b, 0, order, scope); return e.t; }\n"                       \
  "#define __GPUHAL_AT_ADD_F(a, b) ((a) + (b))\n"                                                               \
  "#define __GPUHAL_AT_SUB_F(a, b) ((a) - (b))\n"                                                               \
  "#define __GPUHAL_AT_MIN_F(a, b) ((b) < (a) ? (b) : (a))\n"                                                   \
  "#define __GPUHAL_AT_MAX_F(a, b) ((b) > (a) ? (b) : (a))\n"                                                   \
  "#endif\n"

// Per builtin: the overloads of one operation for every type of an address
// space, through __GPUHAL_AT_EACH_<op>(Q, AS); the backend then writes one
// line per address space. INT_TYPES(X, Q, AS) lists the integer types with
// their same-size bit types.
#define GPUHAL_PLUGIN_ATOMIC_INT_RMW(NAME, BUILTIN) GPUHAL_PLUGIN_ATOMIC_INT_RMW_G(NAME, BUILTIN, "")
#define GPUHAL_PLUGIN_ATOMIC_INT_RMW_G(NAME, BUILTIN, G)                                                \
  "#define __GPUHAL_AT_EACH_" NAME "(Q, AS) \\\n"                                                       \
  "  __GPUHAL_AT_RMW" G "(Q, AS, int, gpuhal_atomic_" NAME ", " BUILTIN ") \\\n"                         \
  "  __GPUHAL_AT_RMW" G "(Q, AS, unsigned int, gpuhal_atomic_" NAME ", " BUILTIN ") \\\n"                \
  "  __GPUHAL_AT_RMW" G "(Q, AS, long, gpuhal_atomic_" NAME ", " BUILTIN ") \\\n"                        \
  "  __GPUHAL_AT_RMW" G "(Q, AS, unsigned long, gpuhal_atomic_" NAME ", " BUILTIN ")\n"

#define GPUHAL_PLUGIN_ATOMIC_LOOP_ALL(NAME, F) GPUHAL_PLUGIN_ATOMIC_LOOP_ALL_G(NAME, F, "")
#define GPUHAL_PLUGIN_ATOMIC_LOOP_ALL_G(NAME, F, G)                                                     \
  "#define __GPUHAL_AT_EACH_" NAME "(Q, AS) \\\n"                                                       \
  "  __GPUHAL_AT_LOOP" G "(Q, AS, int, int, gpuhal_atomic_" NAME ", " F ") \\\n"                         \
  "  __GPUHAL_AT_LOOP" G "(Q, AS, unsigned int, unsigned int, gpuhal_atomic_" NAME ", " F ") \\\n"      \
  "  __GPUHAL_AT_LOOP" G "(Q, AS, long, long, gpuhal_atomic_" NAME ", " F ") \\\n"                       \
  "  __GPUHAL_AT_LOOP" G "(Q, AS, unsigned long, unsigned long, gpuhal_atomic_" NAME ", " F ") \\\n"    \
  "  __GPUHAL_AT_LOOP" G "(Q, AS, float, unsigned int, gpuhal_atomic_" NAME ", " F ") \\\n"              \
  "  __GPUHAL_AT_LOOP" G "(Q, AS, double, unsigned long, gpuhal_atomic_" NAME ", " F ")\n"

// add and sub: the integers through their builtin, floats through the loop.
#define GPUHAL_PLUGIN_ATOMIC_ARITH(NAME, BUILTIN, F) GPUHAL_PLUGIN_ATOMIC_ARITH_G(NAME, BUILTIN, F, "")
#define GPUHAL_PLUGIN_ATOMIC_ARITH_G(NAME, BUILTIN, F, G)                                               \
  "#define __GPUHAL_AT_EACH_" NAME "(Q, AS) \\\n"                                                       \
  "  __GPUHAL_AT_RMW" G "(Q, AS, int, gpuhal_atomic_" NAME ", " BUILTIN ") \\\n"                         \
  "  __GPUHAL_AT_RMW" G "(Q, AS, unsigned int, gpuhal_atomic_" NAME ", " BUILTIN ") \\\n"                \
  "  __GPUHAL_AT_RMW" G "(Q, AS, long, gpuhal_atomic_" NAME ", " BUILTIN ") \\\n"                        \
  "  __GPUHAL_AT_RMW" G "(Q, AS, unsigned long, gpuhal_atomic_" NAME ", " BUILTIN ") \\\n"               \
  "  __GPUHAL_AT_LOOP" G "(Q, AS, float, unsigned int, gpuhal_atomic_" NAME ", " F ") \\\n"              \
  "  __GPUHAL_AT_LOOP" G "(Q, AS, double, unsigned long, gpuhal_atomic_" NAME ", " F ")\n"

#define GPUHAL_PLUGIN_ATOMIC_BITS(NAME, WHICH)                                                          \
  "#define __GPUHAL_AT_EACH_" NAME "(Q, AS) \\\n"                                                       \
  "  " WHICH "(Q, AS, int, int) " WHICH "(Q, AS, unsigned int, unsigned int) \\\n"                      \
  "  " WHICH "(Q, AS, long, long) " WHICH "(Q, AS, unsigned long, unsigned long) \\\n"                  \
  "  " WHICH "(Q, AS, float, unsigned int) " WHICH "(Q, AS, double, unsigned long)\n"

// The scopes of the _explicit forms. Host: one coherent memory, so every
// scope is the system's and only the order is passed on. hsa: clang's
// scoped builtins (__hip_atomic_*, usable from OpenCL C 1.2 for amdgcn) with
// the HIP scopes workgroup 3, agent 4, system 5; the scope argument has to
// be a constant there, so the macros choose among the three.
#define GPUHAL_PLUGIN_ATOMIC_SCOPES_HOST                                                                       \
  "#ifndef __GPUHAL_AT_SCOPES\n"                                                                              \
  "#define __GPUHAL_AT_SCOPES\n"                                                                              \
  "#define __GPUHAL_AT_SCOPED(b, p, v, o, s) ((void)(s), b(p, v, __GPUHAL_AT_ORDER(o)))\n"                   \
  "#define __GPUHAL_AT_CAS_SCOPED(p, e, d, weak, o, s) ((void)(s), __atomic_compare_exchange_n(p, e, d, weak, " \
  "__GPUHAL_AT_ORDER(o), __GPUHAL_AT_FAIL_ORDER(o)))\n"                                                      \
  "#define __GPUHAL_AT_XCHG_SCOPED(p, v, o, s) ((void)(s), __atomic_exchange_n(p, v, __GPUHAL_AT_ORDER(o)))\n" \
  "#endif\n"

#define GPUHAL_PLUGIN_ATOMIC_SCOPES_HIP                                                                        \
  "#ifndef __GPUHAL_AT_SCOPES\n"                                                                              \
  "#define __GPUHAL_AT_SCOPES\n"                                                                              \
  "#define __GPUHAL_AT_SCOPED(b, p, v, o, s) ((s) == 1 ? b(p, v, __GPUHAL_AT_ORDER(o), 3) : (s) == 2 ? "        \
  "b(p, v, __GPUHAL_AT_ORDER(o), 4) : b(p, v, __GPUHAL_AT_ORDER(o), 5))\n"                                    \
  "#define __GPUHAL_AT_CAS_ONE(p, e, d, o, hs) __hip_atomic_compare_exchange_strong(p, e, d, "                 \
  "__GPUHAL_AT_ORDER(o), __GPUHAL_AT_FAIL_ORDER(o), hs)\n"                                                    \
  "#define __GPUHAL_AT_CAS_SCOPED(p, e, d, weak, o, s) ((s) == 1 ? __GPUHAL_AT_CAS_ONE(p, e, d, o, 3) : "       \
  "(s) == 2 ? __GPUHAL_AT_CAS_ONE(p, e, d, o, 4) : __GPUHAL_AT_CAS_ONE(p, e, d, o, 5))\n"                     \
  "#define __GPUHAL_AT_XCHG_SCOPED(p, v, o, s) __GPUHAL_AT_SCOPED(__hip_atomic_exchange, p, v, o, s)\n"       \
  /* No __hip_atomic_fetch_sub in every clang: add the two's complement. */                                   \
  "#define __gpuhal_hip_fetch_sub(p, v, o, s) \\\n"                                                            \
  "  __hip_atomic_fetch_add(p, (__typeof__(*(p)))(0ul - (unsigned long)(v)), o, s)\n"                          \
  "#endif\n"

// The order and scope constants, the same values on every backend (the
// orders are the GNU __ATOMIC_* values, the scopes OpenCL's work-group,
// device and all-devices): entries of a plugin::BuiltinText table.
#define GPUHAL_PLUGIN_ATOMIC_CONSTANTS                                             \
  {"GPUHAL_MEMORY_ORDER_RELAXED", "#define GPUHAL_MEMORY_ORDER_RELAXED 0"},        \
      {"GPUHAL_MEMORY_ORDER_ACQ_REL", "#define GPUHAL_MEMORY_ORDER_ACQ_REL 4"},    \
      {"GPUHAL_MEMORY_ORDER_SEQ_CST", "#define GPUHAL_MEMORY_ORDER_SEQ_CST 5"},    \
      {"GPUHAL_MEMORY_SCOPE_WORK_GROUP", "#define GPUHAL_MEMORY_SCOPE_WORK_GROUP 1"}, \
      {"GPUHAL_MEMORY_SCOPE_DEVICE", "#define GPUHAL_MEMORY_SCOPE_DEVICE 2"},      \
      {"GPUHAL_MEMORY_SCOPE_SYSTEM", "#define GPUHAL_MEMORY_SCOPE_SYSTEM 3"}
