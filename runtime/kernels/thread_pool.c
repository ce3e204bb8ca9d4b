/* The CPU kernels' parallel loops on a pool whose idle workers spin before they
 * sleep (halide_set_custom_do_par_for), as OpenMP's and CTranslate2's pools do.
 *
 * Why: a decode step runs ~50 kernels of 5-70 us, each with one to five parallel
 * loops. Halide's own pool puts an idle worker to sleep at once, so every loop
 * starts by waking it through the kernel (futex), and a loop of one task still
 * takes the queue's lock. Here a worker spins for HALFORMER_SPIN_US (default
 * 100 us) after its last task, so back-to-back loops start without a system call,
 * and a loop of one task runs inline. Zen 5, 2 threads, interleaved: attention at
 * batch 1 (tk 40) 7.4 -> 6.7 us, out_projection_int8 6.7 -> 6.0 us; halformer run,
 * int8, greedy batch 1: 0.78 -> 0.68-0.75 ms per decode step.
 *
 * One loop runs at a time: the caller publishes it and takes tasks itself; a
 * loop started inside a task runs inline (Halide's loops need no concurrency),
 * and a loop started by another thread while one runs goes to Halide's pool.
 * Tasks are claimed from one 64-bit word, (loop generation << 32) | next index,
 * so a worker that read an older loop's fields fails its claim and never runs a
 * task of the wrong loop. HALFORMER_THREAD_POOL=halide keeps Halide's pool. */
#define _GNU_SOURCE /* syscall, clock_gettime */
#include "thread_pool.h"
#include "halformer_kernels.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { max_threads = 256 };
static const uint32_t setting_up = 0xffffffffu; /* index of a loop whose fields are being written */

struct loop_pool {
  _Atomic uint64_t claim; /* (generation << 32) | next task */
  _Atomic uint32_t wake;  /* futex word of sleeping workers: bumped per loop */
  _Atomic uint32_t sleepers;
  _Atomic uint32_t done; /* tasks finished; futex word of a sleeping caller */
  _Atomic int caller_sleeping, error;
  _Atomic(halide_task_t) fn;
  _Atomic(void*) user_context;
  _Atomic(uint8_t*) closure;
  _Atomic int min, size;
  _Atomic int threads;      /* wanted, the caller included */
  _Atomic int loop_threads; /* the published loop's: `threads` when it started */
  int started;              /* workers created (under `owner`) */
  uint32_t generation;      /* the caller's (under `owner`) */
  pthread_mutex_t owner;
  _Atomic long spin_ns;
};

static struct loop_pool pool = {.owner = PTHREAD_MUTEX_INITIALIZER, .spin_ns = 100000};
static _Thread_local int in_task;

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

static long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void futex_wait(_Atomic uint32_t* word, uint32_t expected) {
  syscall(SYS_futex, (uint32_t*)word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t* word) {
  syscall(SYS_futex, (uint32_t*)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Claims and runs one task of the published loop for thread `number` (the
 * caller is 0); 0 when there is none, or the loop may not use that thread (one
 * started after halformer_set_num_threads lowered the count). */
static int run_one_task(int number) {
  uint64_t seen = atomic_load_explicit(&pool.claim, memory_order_acquire);
  for (;;) {
    const uint32_t index = (uint32_t)seen;
    if (index == setting_up || atomic_load_explicit(&pool.error, memory_order_relaxed) != 0)
      return 0;
    const halide_task_t fn = atomic_load_explicit(&pool.fn, memory_order_relaxed);
    void* user_context = atomic_load_explicit(&pool.user_context, memory_order_relaxed);
    uint8_t* closure = atomic_load_explicit(&pool.closure, memory_order_relaxed);
    const int min = atomic_load_explicit(&pool.min, memory_order_relaxed);
    if ((int)index >= atomic_load_explicit(&pool.size, memory_order_relaxed) ||
        number >= atomic_load_explicit(&pool.loop_threads, memory_order_relaxed))
      return 0;
    /* Succeeds only if the loop is still the one whose fields were read. */
    if (atomic_compare_exchange_weak_explicit(&pool.claim, &seen, seen + 1, memory_order_acq_rel,
                                              memory_order_acquire)) {
      in_task = 1;
      const int result = halide_do_task(user_context, fn, min + (int)index, closure);
      in_task = 0;
      if (result != 0) {
        int none = 0;
        atomic_compare_exchange_strong(&pool.error, &none, result);
      }
      atomic_fetch_add(&pool.done, 1);
      if (atomic_load(&pool.caller_sleeping))
        futex_wake(&pool.done);
      return 1;
    }
  }
}

/* Waits for the next loop: spins for spin_ns (0: a worker beyond the wanted
 * count), then sleeps on `wake`. */
static void wait_for_loop(uint32_t seen, long spin_ns) {
  const long start = now_ns();
  for (int spins = 1; atomic_load_explicit(&pool.wake, memory_order_acquire) == seen; ++spins) {
    cpu_relax();
    if (spins % 64 == 0 && now_ns() - start > spin_ns) {
      atomic_fetch_add(&pool.sleepers, 1);
      futex_wait(&pool.wake, seen); /* returns at once if a loop came meanwhile */
      atomic_fetch_sub(&pool.sleepers, 1);
    }
  }
}

static void* worker(void* arg) {
  const int number = (int)(intptr_t)arg; /* 1, 2, ...: the caller is 0 */
  uint32_t seen = atomic_load(&pool.wake);
  for (;;) {
    const int wanted = number < atomic_load_explicit(&pool.threads, memory_order_relaxed);
    if (wanted)
      while (run_one_task(number))
        ;
    wait_for_loop(seen, wanted ? atomic_load_explicit(&pool.spin_ns, memory_order_relaxed) : 0);
    seen = atomic_load(&pool.wake);
  }
  return NULL;
}

/* Under `owner`: workers up to the wanted count (never fewer than were started). */
static int start_workers(void) {
  const int wanted = atomic_load(&pool.threads);
  while (pool.started + 1 < wanted) {
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    const int failed = pthread_create(&thread, &attributes, worker, (void*)(intptr_t)(pool.started + 1));
    pthread_attr_destroy(&attributes);
    if (failed)
      return -1;
    ++pool.started;
  }
  return 0;
}

/* Waits for the loop's tasks; after a task failed, only for those claimed (no
 * more are). */
static void wait_for_tasks(uint64_t generation, int size) {
  uint32_t target = (uint32_t)size;
  int closed = 0;
  const long start = now_ns();
  for (int spins = 1;; ++spins) {
    if (!closed && atomic_load(&pool.error) != 0) {
      const uint32_t claimed = (uint32_t)atomic_exchange(&pool.claim, generation | setting_up);
      target = claimed < target ? claimed : target;
      closed = 1;
    }
    const uint32_t done = atomic_load_explicit(&pool.done, memory_order_acquire);
    if (done == target)
      return;
    cpu_relax();
    if (spins % 64 == 0 && now_ns() - start > atomic_load_explicit(&pool.spin_ns, memory_order_relaxed)) {
      /* long tasks: sleep */
      atomic_store(&pool.caller_sleeping, 1);
      if (atomic_load(&pool.done) == done)
        futex_wait(&pool.done, done);
      atomic_store(&pool.caller_sleeping, 0);
    }
  }
}

static int run_inline(void* user_context, halide_task_t fn, int min, int size, uint8_t* closure) {
  for (int i = 0; i < size; ++i) {
    const int result = halide_do_task(user_context, fn, min + i, closure);
    if (result != 0)
      return result;
  }
  return 0;
}

static int pool_do_par_for(void* user_context, halide_task_t fn, int min, int size, uint8_t* closure) {
  if (size <= 1 || in_task || atomic_load_explicit(&pool.threads, memory_order_relaxed) <= 1)
    return run_inline(user_context, fn, min, size, closure);
  if (pthread_mutex_trylock(&pool.owner) != 0) /* another thread's loop is running */
    return halide_default_do_par_for(user_context, fn, min, size, closure);
  if (start_workers() != 0) {
    pthread_mutex_unlock(&pool.owner);
    return halide_default_do_par_for(user_context, fn, min, size, closure);
  }
  const uint64_t generation = (uint64_t)++pool.generation << 32;
  atomic_store(&pool.claim, generation | setting_up);
  atomic_store_explicit(&pool.fn, fn, memory_order_relaxed);
  atomic_store_explicit(&pool.user_context, user_context, memory_order_relaxed);
  atomic_store_explicit(&pool.closure, closure, memory_order_relaxed);
  atomic_store_explicit(&pool.min, min, memory_order_relaxed);
  atomic_store_explicit(&pool.size, size, memory_order_relaxed);
  atomic_store_explicit(&pool.loop_threads, atomic_load(&pool.threads), memory_order_relaxed);
  atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
  atomic_store_explicit(&pool.error, 0, memory_order_relaxed);
  atomic_store(&pool.claim, generation); /* publishes the fields above */
  atomic_fetch_add(&pool.wake, 1);
  if (atomic_load(&pool.sleepers) > 0)
    futex_wake(&pool.wake);
  while (run_one_task(0))
    ;
  wait_for_tasks(generation, size);
  const int result = atomic_load(&pool.error);
  pthread_mutex_unlock(&pool.owner);
  return result;
}

static _Atomic int configured;

int halformer_thread_pool_configured(void) { return atomic_load(&configured); }

/* The host's cores, read once. The panel GEMMs' decode steps size their tasks by
 * it at every call (schedules/cpu/panels.hpp: decode_task_bytes), and the Halide
 * runtime's weak definition, which this one overrides, reads /sys through
 * sysconf each time: 4-9 us per GEMM call on a Zen 5 VM (out_projection at
 * batch 1 0.014 -> 0.022 ms). */
int halide_host_cpu_count(void) {
  static _Atomic int cores;
  int n = atomic_load_explicit(&cores, memory_order_relaxed);
  if (n == 0) {
    n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    n = n < 1 ? 1 : n;
    atomic_store_explicit(&cores, n, memory_order_relaxed);
  }
  return n;
}

int halformer_set_num_threads(int threads) {
  if (threads < 0 || threads > max_threads)
    return -1;
  atomic_store(&configured, 1);
  if (threads == 0)
    threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (threads < 1)
    threads = 1;
  halide_set_num_threads(threads); /* Halide's pool: loops started while one runs */
  atomic_store(&pool.threads, threads);
  const char* which = getenv("HALFORMER_THREAD_POOL");
  if (which && strcmp(which, "halide") == 0) {
    halide_set_custom_do_par_for(halide_default_do_par_for);
    return 0;
  }
  const char* spin = getenv("HALFORMER_SPIN_US");
  if (spin && *spin)
    atomic_store(&pool.spin_ns, atol(spin) * 1000L);
  halide_set_custom_do_par_for(pool_do_par_for);
  return 0;
}
