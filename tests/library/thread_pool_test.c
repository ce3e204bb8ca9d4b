/* The kernels' thread pool (runtime/kernels/thread_pool.c) through Halide's
 * halide_do_par_for, as the kernels call it: every task of a loop runs exactly
 * once at 1-4 threads and 0-1000 tasks, a task's error is the loop's result, a
 * loop inside a task and loops from two threads at once complete, workers take
 * tasks, sleeping workers wake (HALFORMER_SPIN_US=0), and HALFORMER_THREAD_POOL=halide
 * runs Halide's pool. Plain C against the archive, as users link it. */
#define _GNU_SOURCE /* usleep, setenv */
#include "expect.h"
#include "halformer_kernels.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { max_tasks = 1000 };

/* A loop's closure: how often each task ran, which threads ran tasks, an index to fail at. */
struct loop_record {
  _Atomic int runs[max_tasks];
  _Atomic unsigned long threads[8];
  int fail_at, spin_us, nested;
};

static void spin_for_us(int us) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do
    clock_gettime(CLOCK_MONOTONIC, &now);
  while ((now.tv_sec - start.tv_sec) * 1000000L + (now.tv_nsec - start.tv_nsec) / 1000 < us);
}

static void note_thread(struct loop_record* r) {
  const unsigned long self = (unsigned long)pthread_self();
  for (int i = 0; i < 8; ++i) {
    unsigned long seen = 0;
    if (atomic_load(&r->threads[i]) == self || atomic_compare_exchange_strong(&r->threads[i], &seen, self))
      return;
  }
}

static int threads_seen(struct loop_record* r) {
  int n = 0;
  for (int i = 0; i < 8; ++i)
    n += atomic_load(&r->threads[i]) != 0;
  return n;
}

static int inner_task(void* user_context, int index, uint8_t* closure) {
  (void)user_context;
  atomic_fetch_add(&((struct loop_record*)closure)->runs[index], 1);
  return 0;
}

static int task(void* user_context, int index, uint8_t* closure) {
  struct loop_record* r = (struct loop_record*)closure;
  atomic_fetch_add(&r->runs[index], 1);
  note_thread(r);
  if (r->spin_us)
    spin_for_us(r->spin_us);
  if (r->nested) { /* tasks index*50 .. index*50+49 of the same record, from inside this task */
    const int result = halide_do_par_for(user_context, inner_task, 100 + index * 50, 50, closure);
    if (result != 0)
      return result;
  }
  return index == r->fail_at ? -7 : 0;
}

static struct loop_record* new_record(void) {
  struct loop_record* r = calloc(1, sizeof *r);
  r->fail_at = -1;
  return r;
}

/* Each of tasks [first, first + count) ran once, no other. */
static void expect_each_once(struct loop_record* r, int first, int count, const char* what) {
  for (int i = 0; i < max_tasks; ++i) {
    const int want = i >= first && i < first + count;
    EXPECT(atomic_load(&r->runs[i]) == want, "%s: task %d ran %d times", what, i, atomic_load(&r->runs[i]));
  }
}

static void every_task_once(int threads) {
  EXPECT(halformer_set_num_threads(threads) == 0, "%d threads", threads);
  const int sizes[] = {0, 1, 2, 7, 333, 1000};
  for (int s = 0; s < 6; ++s)
    for (int repeat = 0; repeat < 20; ++repeat) { /* back-to-back loops, as a decode step runs them */
      struct loop_record* r = new_record();
      EXPECT(halide_do_par_for(NULL, task, 0, sizes[s], (uint8_t*)r) == 0, "size %d", sizes[s]);
      char what[64];
      snprintf(what, sizeof what, "%d threads, %d tasks", threads, sizes[s]);
      expect_each_once(r, 0, sizes[s], what);
      free(r);
    }
}

static void errors_and_nesting(void) {
  halformer_set_num_threads(2);
  struct loop_record* r = new_record();
  r->fail_at = 5;
  EXPECT(halide_do_par_for(NULL, task, 0, 100, (uint8_t*)r) == -7, "a failing task's error is the loop's");
  free(r);
  r = new_record();
  r->nested = 1;
  EXPECT(halide_do_par_for(NULL, task, 0, 4, (uint8_t*)r) == 0, "nested loops");
  for (int i = 0; i < 4; ++i)
    EXPECT(atomic_load(&r->runs[i]) == 1, "outer task %d ran %d times", i, atomic_load(&r->runs[i]));
  for (int i = 100; i < 300; ++i)
    EXPECT(atomic_load(&r->runs[i]) == 1, "inner task %d ran %d times", i, atomic_load(&r->runs[i]));
  free(r);
}

static void workers_take_tasks(void) {
  halformer_set_num_threads(2);
  struct loop_record* r = new_record();
  r->spin_us = 200; /* 64 x 200 us: the worker is up long before the caller is done */
  EXPECT(halide_do_par_for(NULL, task, 0, 64, (uint8_t*)r) == 0, "timed tasks");
  EXPECT(threads_seen(r) == 2, "2 threads ran the tasks, not %d", threads_seen(r));
  free(r);
}

static void* loops_of_a_thread(void* arg) {
  for (int repeat = 0; repeat < 200; ++repeat) {
    struct loop_record* r = new_record();
    if (halide_do_par_for(NULL, task, 0, 16, (uint8_t*)r) != 0)
      ++*(int*)arg;
    for (int i = 0; i < 16; ++i)
      *(int*)arg += atomic_load(&r->runs[i]) != 1;
    free(r);
  }
  return NULL;
}

static void two_callers(void) {
  halformer_set_num_threads(3);
  int wrong[2] = {0, 0};
  pthread_t a, b;
  pthread_create(&a, NULL, loops_of_a_thread, &wrong[0]);
  pthread_create(&b, NULL, loops_of_a_thread, &wrong[1]);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  EXPECT(wrong[0] == 0 && wrong[1] == 0, "loops from two threads: %d and %d tasks wrong", wrong[0], wrong[1]);
}

int main(void) {
  EXPECT(halformer_kernels_init() == 0, "init: %s", halformer_last_error());
  EXPECT(halformer_set_num_threads(-1) == -1, "-1 threads is refused");
  EXPECT(halformer_set_num_threads(257) == -1, "257 threads is refused");
  for (int threads = 1; threads <= 4; ++threads)
    every_task_once(threads);
  every_task_once(0); /* all cores */
  errors_and_nesting();
  workers_take_tasks();
  two_callers();
  setenv("HALFORMER_SPIN_US", "0", 1); /* workers sleep after every loop: each loop wakes them */
  for (int i = 0; i < 50; ++i) {
    every_task_once(2);
    usleep(100);
  }
  setenv("HALFORMER_THREAD_POOL", "halide", 1);
  every_task_once(2);
  errors_and_nesting();
  if (failures)
    printf("%d failures\n", failures);
  else
    printf("thread pool: all checks passed\n");
  return failures != 0;
}
