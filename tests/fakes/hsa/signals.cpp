// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake runtime: signals.
#include "fake_hsa.hpp"

using namespace fake_hsa;

EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t initial, uint32_t, const hsa_agent_t *, hsa_signal_t *out) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_signal_create"); f != HSA_STATUS_SUCCESS) return f;
  if (!out) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  auto *s = new FSignal;
  s->value.store(initial);
  std::lock_guard<std::mutex> lock(g_sig_mu);
  g_signals.insert(s);
  out->handle = reinterpret_cast<uint64_t>(s);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t s) {
  auto *p = reinterpret_cast<FSignal *>(s.handle);
  {
    std::lock_guard<std::mutex> lock(g_sig_mu);
    if (!g_signals.erase(p)) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  }
  delete p;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_signal_value_t hsa_signal_load_scacquire(hsa_signal_t s) {
  FSignal *f = sig(s);
  return f ? f->value.load() : 0;
}

EXPORT void hsa_signal_store_screlease(hsa_signal_t s, hsa_signal_value_t v) {
  if (FSignal *f = sig(s)) signal_set(f, v);
}

// The timeout hint is in timestamp ticks (HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY:
// 1 GHz here); UINT64_MAX waits for ever.
EXPORT hsa_signal_value_t hsa_signal_wait_scacquire(hsa_signal_t s, hsa_signal_condition_t c, hsa_signal_value_t x,
                                                    uint64_t timeout, hsa_wait_state_t) {
  FSignal *f = sig(s);
  if (!f) return 0;
  if (timeout == UINT64_MAX) return signal_wait(f, c, x);
  return signal_wait_for(f, c, x, std::chrono::nanoseconds(std::min<uint64_t>(timeout, uint64_t(INT64_MAX))));
}

