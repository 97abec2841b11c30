/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* A stand-in for NVTX's libnvToolsExt.so.1 and roctracer's libroctx64.so:
 * the range calls the trace layer makes (nvtxRangePushA / nvtxRangePop,
 * roctxRangePushA / roctxRangePop), counted, for the tests that check the
 * trace layer finds and drives them. As the real ones: push returns the
 * new nesting depth (0-based level of the range), pop the depth it ended,
 * or a negative value when there was nothing to pop.
 * fake_ranges_pushed(): pushes so far; fake_ranges_depth(): open ranges;
 * fake_ranges_last(): the latest pushed name. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int pushed, depth;
static char last[128];

static int push(const char *name) {
  pthread_mutex_lock(&mu);
  ++pushed;
  int level = depth++;
  snprintf(last, sizeof last, "%s", name ? name : "(null)");
  pthread_mutex_unlock(&mu);
  return level;
}
static int pop(void) {
  pthread_mutex_lock(&mu);
  int level = depth > 0 ? --depth : -1;
  pthread_mutex_unlock(&mu);
  return level;
}

__attribute__((visibility("default"))) int nvtxRangePushA(const char *message) { return push(message); }
__attribute__((visibility("default"))) int nvtxRangePop(void) { return pop(); }
__attribute__((visibility("default"))) int roctxRangePushA(const char *message) { return push(message); }
__attribute__((visibility("default"))) int roctxRangePop(void) { return pop(); }
__attribute__((visibility("default"))) int fake_ranges_pushed(void) { return pushed; }
__attribute__((visibility("default"))) int fake_ranges_depth(void) { return depth; }
__attribute__((visibility("default"))) const char *fake_ranges_last(void) { return last; }
