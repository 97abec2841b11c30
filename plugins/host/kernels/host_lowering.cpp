// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_lowering.hpp"

#include <algorithm>
#include <cstring>

#include "array_dims.hpp"
#include "atomics_lowering.hpp"
#include "builtin_table.hpp"
#include "host_kernel_abi.hpp"

namespace gpuhal::host {
namespace {

// The prologue: C headers, the plugin <-> module structs and the current
// work-item. All work-items of a work-group run on one OS thread (as fibers
// when the kernel has barriers), so the current item is a thread_local
// pointer; the barrier saves it on the fiber's stack and restores it after
// the switch. math.h in C++ is <cmath>, whose C++17 special functions
// (std::riemann_zeta, std::assoc_laguerre ...) are two thirds of its text
// and a third of what a small module's compile spends parsing (30 of 90
// ms); no kernel dialect has them, and libstdc++ leaves them out when
// _GLIBCXX_USE_STD_SPEC_FUNCS is not set after its configuration header.
const char kPrologue[] =
    "#include <stdint.h>\n"
    "#include <stddef.h>\n"
    "#if defined(__has_include)\n#if __has_include(<bits/c++config.h>)\n#include <bits/c++config.h>\n"
    "#undef _GLIBCXX_USE_STD_SPEC_FUNCS\n#endif\n#endif\n"
    "#include <math.h>\n"
    "#include <string.h>\n"
    "#include <stdio.h>\n"
    "#include <stdarg.h>\n"
    "#include <tuple>\n"
    "#include <type_traits>\n"
    "#include <utility>\n"
    "extern \"C\" {\n" GPUHAL_HOST_STRINGIFY(GPUHAL_HOST_KERNEL_ABI_TEXT) "\n}\n"
    "static thread_local const gpuhal_host_item *__gpuhal_wi;\n"
    "static inline void __gpuhal_barrier_impl() {\n"
    "  const gpuhal_host_item *me = __gpuhal_wi;\n"
    "  __atomic_signal_fence(__ATOMIC_SEQ_CST);\n"
    "  me->group->barrier(me->group->scheduler);\n"
    "  __gpuhal_wi = me;\n"
    "  __atomic_signal_fence(__ATOMIC_SEQ_CST);\n"
    "}\n"
    "static inline int __gpuhal_barrier_count_impl(int predicate) {\n"
    "  const gpuhal_host_item *me = __gpuhal_wi;\n"
    "  __atomic_signal_fence(__ATOMIC_SEQ_CST);\n"
    "  const int n = me->group->barrier_count(me->group->scheduler, predicate != 0);\n"
    "  __gpuhal_wi = me;\n"
    "  __atomic_signal_fence(__ATOMIC_SEQ_CST);\n"
    "  return n;\n"
    "}\n"
    // gpuhal_printf: one call's text is written and flushed under stdout's
    // lock, so concurrent work-items never split each other's text, and a
    // work-item's calls come in its order.
    "static inline int __gpuhal_printf_impl(const char *format, ...) __attribute__((format(printf, 1, 2)));\n"
    "static inline int __gpuhal_printf_impl(const char *format, ...) {\n"
    "  va_list ap;\n"
    "  va_start(ap, format);\n"
    "  flockfile(stdout);\n"
    "  const int n = vfprintf(stdout, format, ap);\n"
    "  fflush(stdout);\n"
    "  funlockfile(stdout);\n"
    "  va_end(ap);\n"
    "  return n;\n"
    "}\n"
    // gpuhal_assert: the first failure of a launch is recorded for the
    // plugin, which fails the launch and starts no further work-group; the
    // failing work-item and its group run on (the host cannot stop one
    // work-item on its own).
    "extern \"C\" __attribute__((visibility(\"default\"))) gpuhal_host_assert_record gpuhal_host_assert_state;\n"
    "gpuhal_host_assert_record gpuhal_host_assert_state;\n"
    "static __attribute__((noinline, cold)) void __gpuhal_assert_fail(const char *condition, const char *file, int line,\n"
    "    const char *function, unsigned l0, unsigned l1, unsigned l2, unsigned g0, unsigned g1, unsigned g2) {\n"
    "  if (__atomic_exchange_n(&gpuhal_host_assert_state.failed, 1, __ATOMIC_ACQ_REL)) return;\n"
    "  snprintf(gpuhal_host_assert_state.message, sizeof gpuhal_host_assert_state.message,\n"
    "           \"gpuhal_assert(%s) failed at %s:%d in %s(), work-item (%u, %u, %u) of work-group (%u, %u, %u)\",\n"
    "           condition, file, line, function, l0, l1, l2, g0, g1, g2);\n"
    "}";

// The element count of one to four extents, and the check every host
// shared array makes of its size (also used by the work-item loops' arrays,
// host_workitem_loops.cpp).
#define kHostArrayCount                                                                                      \
  "#ifndef __GPUHAL_SHARED_FITS\n"                                                                           \
  "#define __GPUHAL_SHARED_FITS(T, name, ...) static_assert(sizeof(T) * __GPUHAL_COUNT(__VA_ARGS__) <= "     \
  "65536ull, \"GPUHAL_SHARED_ARRAY \" #name \": more shared memory than a work-group has (65536 bytes)\")\n" \
  "#endif\n"                                                                                                 \
  "#ifndef __GPUHAL_COUNT\n"                                                                                 \
  "#define __GPUHAL_COUNT(...) "                                                                             \
  "__GPUHAL_PICK(__VA_ARGS__, __GPUHAL_C4, __GPUHAL_C3, __GPUHAL_C2, __GPUHAL_C1, _)(__VA_ARGS__)\n"         \
  "#define __GPUHAL_C1(a) ((unsigned long long)(a))\n"                                                       \
  "#define __GPUHAL_C2(a, b) (__GPUHAL_C1(a) * (unsigned long long)(b))\n"                                   \
  "#define __GPUHAL_C3(a, b, c) (__GPUHAL_C2(a, b) * (unsigned long long)(c))\n"                             \
  "#define __GPUHAL_C4(a, b, c, d) (__GPUHAL_C3(a, b, c) * (unsigned long long)(d))\n"                       \
  "#endif\n"

// One entry per name in kernel_builtins.def.
const plugin::BuiltinText kBuiltins[] = {
    {"GPUHAL_KERNEL", "#define GPUHAL_KERNEL static inline"},
    {"GPUHAL_DEVICE", "#define GPUHAL_DEVICE static inline"},
    {"GPUHAL_GLOBAL", "#define GPUHAL_GLOBAL"},
    {"GPUHAL_RESTRICT", "#define GPUHAL_RESTRICT __restrict__"},
    // Kept (used) even when no kernel reads them: module_compile holds their
    // total, read from the module's symbols, to a GPU's 64 KiB of constant
    // memory.
    {"GPUHAL_CONSTANT", "#define GPUHAL_CONSTANT __attribute__((used)) static const"},
    {"GPUHAL_LOCAL_MEM_FENCE", "#define GPUHAL_LOCAL_MEM_FENCE 1u"},
    {"GPUHAL_GLOBAL_MEM_FENCE", "#define GPUHAL_GLOBAL_MEM_FENCE 2u"},
    {"gpuhal_local_id", "#define gpuhal_local_id(d) (__gpuhal_wi->local_id[(d)])"},
    {"gpuhal_group_id", "#define gpuhal_group_id(d) (__gpuhal_wi->group->group_id[(d)])"},
    {"gpuhal_local_size", "#define gpuhal_local_size(d) (__gpuhal_wi->group->local_size[(d)])"},
    {"gpuhal_num_groups", "#define gpuhal_num_groups(d) (__gpuhal_wi->group->num_groups[(d)])"},
    {"gpuhal_global_id",
     "#define gpuhal_global_id(d) (gpuhal_group_id(d) * gpuhal_local_size(d) + gpuhal_local_id(d))"},
    {"gpuhal_global_size", "#define gpuhal_global_size(d) (gpuhal_num_groups(d) * gpuhal_local_size(d))"},
    // Every work-item of the group reaches the barrier (each is a fiber that
    // yields there) before any goes on; the fibers share one OS thread, so a
    // compiler fence orders shared memory and a thread fence global memory.
    {"gpuhal_barrier",
     "#define gpuhal_barrier(flags) (((flags) & 2u) ? __atomic_thread_fence(__ATOMIC_SEQ_CST) : (void)0, "
     "__gpuhal_barrier_impl())"},
    // The host's wave is one work-item (warp_size 1): nothing to converge.
    {"gpuhal_wave_barrier", "#define gpuhal_wave_barrier() __atomic_signal_fence(__ATOMIC_SEQ_CST)"},
    {"gpuhal_mem_fence", "#define gpuhal_mem_fence(flags) ((void)(flags), __atomic_thread_fence(__ATOMIC_SEQ_CST))"},
    // Per OS thread = per running work-group (a group runs on one thread).
    // One array larger than a work-group's shared memory fails to compile,
    // as on a GPU; several that only together exceed it fail at launch.
    {"GPUHAL_SHARED_ARRAY", GPUHAL_PLUGIN_ARRAY_DIMS_MACROS kHostArrayCount
     "#define GPUHAL_SHARED_ARRAY(T, name, ...) GPUHAL_SHARED_ARRAY_ALIGNED(T, name, 16, __VA_ARGS__)"},
    {"GPUHAL_DYNAMIC_SHARED",
     "#define GPUHAL_DYNAMIC_SHARED(T, name) T *name = (T *)(__gpuhal_wi->group->dynamic_shared)"},
    {"gpuhal_dynamic_shared_bytes", "#define gpuhal_dynamic_shared_bytes() (__gpuhal_wi->group->dynamic_shared_bytes)"},
    {"GPUHAL_LOCAL_ARRAY",
     GPUHAL_PLUGIN_ARRAY_DIMS_MACROS "#define GPUHAL_LOCAL_ARRAY(T, name, ...) T name __GPUHAL_DIMS(__VA_ARGS__)"},
    // alignas(T) too: a weaker alignas than the type's own is ill-formed in
    // C++, and on a GPU the alignment never goes below the type's.
    {"GPUHAL_SHARED_ARRAY_ALIGNED", GPUHAL_PLUGIN_ARRAY_DIMS_MACROS GPUHAL_PLUGIN_ALIGNMENT_CHECK_CXX kHostArrayCount
     "#define GPUHAL_SHARED_ARRAY_ALIGNED(T, name, align, ...) __GPUHAL_ALIGNMENT_OK(align, name); "
     "__GPUHAL_SHARED_FITS(T, name, __VA_ARGS__); "
     "alignas(align) alignas(T) static thread_local T name __GPUHAL_DIMS(__VA_ARGS__)"},
    {"GPUHAL_LOCAL_ARRAY_ALIGNED",
     GPUHAL_PLUGIN_ARRAY_DIMS_MACROS GPUHAL_PLUGIN_ALIGNMENT_CHECK_CXX
     "#define GPUHAL_LOCAL_ARRAY_ALIGNED(T, name, align, ...) __GPUHAL_ALIGNMENT_OK(align, name); alignas(align) "
     "alignas(T) T name __GPUHAL_DIMS(__VA_ARGS__)"},
    // The group's scheduler counts the predicates of a barrier round (the
    // work-items run as fibers; the work-item loops leave such kernels
    // alone). and / or: no predicate zero / some predicate nonzero.
    {"gpuhal_barrier_count", "#define gpuhal_barrier_count(p) __gpuhal_barrier_count_impl((p))"},
    {"gpuhal_barrier_and", "#define gpuhal_barrier_and(p) (__gpuhal_barrier_count_impl(!(p)) == 0)"},
    {"gpuhal_barrier_or", "#define gpuhal_barrier_or(p) (__gpuhal_barrier_count_impl((p)) != 0)"},
    // Atomics: the GNU __atomic builtins (atomics_lowering.hpp); the work-items
    // of a group share a thread's memory, so they are atomics across groups.
    {"gpuhal_atomic_add", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_ARITH("add", "__atomic_fetch_add", "__GPUHAL_AT_ADD_F")
     "__GPUHAL_AT_EACH_add(static inline, )\n"},
    {"gpuhal_atomic_sub", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_ARITH("sub", "__atomic_fetch_sub", "__GPUHAL_AT_SUB_F")
     "__GPUHAL_AT_EACH_sub(static inline, )\n"},
    {"gpuhal_atomic_min", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_LOOP_ALL("min", "__GPUHAL_AT_MIN_F")
     "__GPUHAL_AT_EACH_min(static inline, )\n"},
    {"gpuhal_atomic_max", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_LOOP_ALL("max", "__GPUHAL_AT_MAX_F")
     "__GPUHAL_AT_EACH_max(static inline, )\n"},
    {"gpuhal_atomic_and", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_INT_RMW("and", "__atomic_fetch_and")
     "__GPUHAL_AT_EACH_and(static inline, )\n"},
    {"gpuhal_atomic_or", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_INT_RMW("or", "__atomic_fetch_or")
     "__GPUHAL_AT_EACH_or(static inline, )\n"},
    {"gpuhal_atomic_xor", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_INT_RMW("xor", "__atomic_fetch_xor")
     "__GPUHAL_AT_EACH_xor(static inline, )\n"},
    {"gpuhal_atomic_xchg", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_BITS("xchg", "__GPUHAL_AT_XCHG")
     "__GPUHAL_AT_EACH_xchg(static inline, )\n"},
    {"gpuhal_atomic_cas", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_BITS("cas", "__GPUHAL_AT_CAS")
     "__GPUHAL_AT_EACH_cas(static inline, )\n"},
    // The _explicit forms: the order passed on, every scope the system's
    // (one coherent memory).
    GPUHAL_PLUGIN_ATOMIC_CONSTANTS,
    {"gpuhal_atomic_add_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HOST GPUHAL_PLUGIN_ATOMIC_ARITH_G("add_explicit", "__atomic_fetch_add", "__GPUHAL_AT_ADD_F", "_X")
     "__GPUHAL_AT_EACH_add_explicit(static inline, )\n"},
    {"gpuhal_atomic_sub_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HOST GPUHAL_PLUGIN_ATOMIC_ARITH_G("sub_explicit", "__atomic_fetch_sub", "__GPUHAL_AT_SUB_F", "_X")
     "__GPUHAL_AT_EACH_sub_explicit(static inline, )\n"},
    {"gpuhal_atomic_min_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HOST GPUHAL_PLUGIN_ATOMIC_LOOP_ALL_G("min_explicit", "__GPUHAL_AT_MIN_F", "_X")
     "__GPUHAL_AT_EACH_min_explicit(static inline, )\n"},
    {"gpuhal_atomic_max_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HOST GPUHAL_PLUGIN_ATOMIC_LOOP_ALL_G("max_explicit", "__GPUHAL_AT_MAX_F", "_X")
     "__GPUHAL_AT_EACH_max_explicit(static inline, )\n"},
    {"gpuhal_atomic_and_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HOST GPUHAL_PLUGIN_ATOMIC_INT_RMW_G("and_explicit", "__atomic_fetch_and", "_X")
     "__GPUHAL_AT_EACH_and_explicit(static inline, )\n"},
    {"gpuhal_atomic_or_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HOST GPUHAL_PLUGIN_ATOMIC_INT_RMW_G("or_explicit", "__atomic_fetch_or", "_X")
     "__GPUHAL_AT_EACH_or_explicit(static inline, )\n"},
    {"gpuhal_atomic_xor_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HOST GPUHAL_PLUGIN_ATOMIC_INT_RMW_G("xor_explicit", "__atomic_fetch_xor", "_X")
     "__GPUHAL_AT_EACH_xor_explicit(static inline, )\n"},
    {"gpuhal_atomic_xchg_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HOST GPUHAL_PLUGIN_ATOMIC_BITS("xchg_explicit", "__GPUHAL_AT_XCHG_X")
     "__GPUHAL_AT_EACH_xchg_explicit(static inline, )\n"},
    {"gpuhal_atomic_cas_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HOST GPUHAL_PLUGIN_ATOMIC_BITS("cas_explicit", "__GPUHAL_AT_CAS_X")
     "__GPUHAL_AT_EACH_cas_explicit(static inline, )\n"},
    // Wave operations over the host's one-work-item wave (its wave_size is
    // 1; lane 0 is the work-item itself): a ballot is the predicate's bit 0,
    // a reduction the value, and every shuffle's source is the caller's own
    // lane or no lane, which both give the caller's own value.
    {"gpuhal_wave_size", "#define gpuhal_wave_size() 1u"},
    {"gpuhal_wave_lane", "#define gpuhal_wave_lane() 0u"},
    {"gpuhal_wave_ballot", "#define gpuhal_wave_ballot(p) ((uint64_t)((p) != 0))"},
    {"gpuhal_wave_any", "#define gpuhal_wave_any(p) ((p) != 0)"},
    {"gpuhal_wave_all", "#define gpuhal_wave_all(p) ((p) != 0)"},
    {"gpuhal_wave_shuffle", "#define gpuhal_wave_shuffle(v, lane) ((void)(lane), (v))"},
    {"gpuhal_wave_shuffle_up", "#define gpuhal_wave_shuffle_up(v, delta) ((void)(delta), (v))"},
    {"gpuhal_wave_shuffle_down", "#define gpuhal_wave_shuffle_down(v, delta) ((void)(delta), (v))"},
    {"gpuhal_wave_shuffle_xor", "#define gpuhal_wave_shuffle_xor(v, mask) ((void)(mask), (v))"},
    {"gpuhal_wave_reduce_add", "#define gpuhal_wave_reduce_add(v) (v)"},
    {"gpuhal_wave_reduce_min", "#define gpuhal_wave_reduce_min(v) (v)"},
    {"gpuhal_wave_reduce_max", "#define gpuhal_wave_reduce_max(v) (v)"},
    {"gpuhal_printf", "#define gpuhal_printf(...) __gpuhal_printf_impl(__VA_ARGS__)"},
    // __gpuhal_assert_at is what the work-item loops' rewrite turns an
    // assertion in a kernel's body into (the loops are emitted after the
    // source: their own __LINE__ and __func__ would mislead).
    {"gpuhal_assert",
     "#define __GPUHAL_STR(...) #__VA_ARGS__\n"
     "#define gpuhal_assert(...) __gpuhal_assert_at(__LINE__, __func__, #__VA_ARGS__, __VA_ARGS__)\n"
     "#define __gpuhal_assert_at(line, function, text, ...) ((__VA_ARGS__) ? (void)0 : __gpuhal_assert_fail(text, "
     "__FILE__, line, function, gpuhal_local_id(0), gpuhal_local_id(1), gpuhal_local_id(2), gpuhal_group_id(0), "
     "gpuhal_group_id(1), gpuhal_group_id(2)))"},
};

// Unpacks the arguments by the kernel's own parameter types (a template, so
// that no parser of C types is needed here) and loops over a group. All in
// an unnamed namespace: no symbol of the module may be STB_GNU_UNIQUE (which
// would keep it loaded after dlclose).
const char kEntryTemplates[] = R"(
namespace {
namespace __gpuhal_host {
template <class T> static inline T arg(void *const p) {
  if constexpr (std::is_pointer<T>::value) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return (T)(uintptr_t)v;
  } else {
    T v;
    memcpy(&v, p, sizeof v);
    return v;
  }
}
// The lines of the group `ahead` bytes further on, if the kernel indexed
// the pointer by its global id, prefetched within `limit` bytes of the
// pointer (host_kernel_abi.hpp: prefetch_limits); nothing for a scalar.
constexpr uint64_t kPrefetchAhead = 4096;
// The pointee's size; 1 for void, functions and types declared but not
// defined (a kernel may pass an opaque struct's pointer on).
template <class T, class = void> struct pointee_size : std::integral_constant<uint64_t, 1> {};
template <class T>
struct pointee_size<T, std::enable_if_t<!std::is_void<T>::value && !std::is_function<T>::value, std::void_t<decltype(sizeof(T))>>>
    : std::integral_constant<uint64_t, sizeof(T)> {};
template <class T> static inline void prefetch_group(T, uint64_t, uint64_t, uint64_t) {}
template <class T> static inline void prefetch_group(T *p, uint64_t limit, uint64_t gi, uint64_t items) {
  constexpr uint64_t size = pointee_size<T>::value;
  const uint64_t bytes = items * size, begin = gi * bytes + kPrefetchAhead;
  if (begin >= limit) return;
  const uint64_t end = bytes < limit - begin ? begin + bytes : limit;
  for (uint64_t o = begin; o < end; o += 64) __builtin_prefetch((const char *)p + o, !std::is_const<T>::value);
}
template <class F> struct sig;
template <class... P> struct sig<void (*)(P...)> {
  static constexpr uint32_t count = sizeof...(P);
  static constexpr uint32_t sizes[sizeof...(P) + 1] = {uint32_t(std::is_pointer<P>::value ? 8 : sizeof(P))..., 0};
  template <void (*K)(P...), size_t... I>
  static void groups(gpuhal_host_group *g, void *const *a, uint64_t first, uint64_t last, std::index_sequence<I...>) {
    std::tuple<P...> v{arg<P>(a[I])...};
    (void)v;
    gpuhal_host_item wi;
    wi.group = g;
    __gpuhal_wi = &wi;
    const uint32_t nx = g->local_size[0], ny = g->local_size[1], nz = g->local_size[2];
    const uint64_t gx = g->num_groups[0], gy = g->num_groups[1];
    const uint64_t *const limits = g->prefetch_limits;
    for (uint64_t gi = first; gi < last; ++gi) {
      g->group_id[0] = uint32_t(gi % gx);
      g->group_id[1] = uint32_t((gi / gx) % gy);
      g->group_id[2] = uint32_t(gi / (gx * gy));
      if (limits) (prefetch_group(std::get<I>(v), limits[I], gi, uint64_t(nx) * ny * nz), ...);
      for (uint32_t z = 0; z < nz; ++z)
        for (uint32_t y = 0; y < ny; ++y)
          for (uint32_t x = 0; x < nx; ++x) {
            wi.local_id[0] = x;
            wi.local_id[1] = y;
            wi.local_id[2] = z;
            K(std::get<I>(v)...);
          }
    }
    __gpuhal_wi = nullptr;
  }
  template <void (*W)(const gpuhal_host_group *, P...), size_t... I>
  static void loops(const gpuhal_host_group *g, void *const *a, std::index_sequence<I...>) {
    W(g, arg<P>(a[I])...);
  }
  template <void (*K)(P...), size_t... I>
  static void item(const gpuhal_host_item *it, void *const *a, std::index_sequence<I...>) {
    __gpuhal_wi = it;
    K(arg<P>(a[I])...);
  }
};
// One group: the chunk loop over just that group (its linear index gives
// back the same group id), on a copy, since that loop writes the group id.
template <auto K> static void run_group(const gpuhal_host_group *g, void *const *a) {
  using S = sig<decltype(K)>;
  gpuhal_host_group one = *g;
  const uint64_t gi =
      g->group_id[0] + uint64_t(g->num_groups[0]) * (g->group_id[1] + uint64_t(g->num_groups[1]) * g->group_id[2]);
  S::template groups<K>(&one, a, gi, gi + 1, std::make_index_sequence<S::count>());
}
template <auto K> static void run_groups(gpuhal_host_group *g, void *const *a, uint64_t first, uint64_t last) {
  using S = sig<decltype(K)>;
  S::template groups<K>(g, a, first, last, std::make_index_sequence<S::count>());
}
// A barrier kernel's work-item loops (W: the struct the rewrite makes), for
// the group's shape: besides the loops for any shape, each kernel's are
// compiled for 16 x 16 groups, the usual 2-D tile, with both extents
// constants, so that each row of 16 work-items is one vector without the
// run-time checks, remainder loop and trip-count arithmetic the general
// loops pay again for every row in every region (host_workitem_loops.cpp):
// the tiled matmul at N=1000 went from 39 to 27 ms. Measured and left out:
// 8 x 8 and 32 x 8 too (module compile time 1.3 -> 3.2 s, the matmul
// unchanged), and 16 x any (slower than the general loops).
template <auto K, class W> static void run_loops(const gpuhal_host_group *g, void *const *a) {
  using S = sig<decltype(K)>;
  constexpr auto seq = std::make_index_sequence<S::count>();
  if constexpr (W::__gpuhal_has_tile16) {
    if (g->local_size[0] == 16 && g->local_size[1] == 16) return S::template loops<&W::__gpuhal_tile16>(g, a, seq);
  }
  S::template loops<&W::__gpuhal_any>(g, a, seq);
}
template <auto K> static void run_item(const gpuhal_host_item *it, void *const *a) {
  using S = sig<decltype(K)>;
  S::template item<K>(it, a, std::make_index_sequence<S::count>());
}
}  // namespace __gpuhal_host
}  // namespace
)";

}  // namespace

const char *host_lowering(const char *builtin) {
  return plugin::find_builtin(kBuiltins, kPrologue, builtin);
}

std::string host_kernel_entry_points(const gpuhal_compile_args_t &args, const std::vector<std::string> &loops) {
  std::string s = kEntryTemplates;
  s += "extern \"C\" __attribute__((visibility(\"default\"))) const uint32_t gpuhal_host_kernel_abi = " +
       std::to_string(GPUHAL_HOST_KERNEL_ABI_VERSION) + ";\n";
  s += "extern \"C\" __attribute__((visibility(\"default\"))) const gpuhal_host_kernel gpuhal_host_kernels[] = {\n";
  for (uint32_t i = 0; i < args.kernel_count; ++i) {
    const std::string k = args.kernel_names[i];
    const bool barrier = args.kernel_uses_barrier && args.kernel_uses_barrier[i];
    const bool has_loops = std::find(loops.begin(), loops.end(), k) != loops.end();
    // Only the entries the plugin needs (host_kernel_abi.hpp, version 5): a
    // kernel without barriers runs through run_groups, one with barriers
    // through its work-item loops or, without them, run_item on fibers;
    // run_item stays for every kernel with barriers, since its copy of the
    // kernel holds the shared arrays whose symbols give the kernel's static
    // shared bytes (host_module_limits.hpp). Each entry left out is one
    // instantiation of the kernel the compiler does not optimise and emit
    // (a module of four kernels 0.46 -> 0.35 s).
    s += "  {\"" + k + "\", nullptr, " + (barrier ? "&__gpuhal_host::run_item<&" + k + ">" : std::string("nullptr")) +
         ", __gpuhal_host::sig<decltype(&" + k + ")>::count, __gpuhal_host::sig<decltype(&" + k + ")>::sizes, " +
         (barrier ? "1u" : "0u") + ", " +
         (has_loops ? "&__gpuhal_host::run_loops<&" + k + ", " + k + "__gpuhal_loops>, " + k + "__gpuhal_loops_scratch"
                    : std::string("nullptr, 0u")) +
         ", " + (barrier ? std::string("nullptr") : "&__gpuhal_host::run_groups<&" + k + ">") + "},\n";
  }
  s += "  {nullptr, nullptr, nullptr, 0u, nullptr, 0u, nullptr, 0u, nullptr}};\n";
  return s;
}

}  // namespace gpuhal::host
