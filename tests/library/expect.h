/* The C tests' check: EXPECT(condition, printf-style message) reports a failed
 * condition with its file, line and message and counts it in `failures`, which
 * the test returns from main. */
#ifndef HALFORMER_TEST_EXPECT_H
#define HALFORMER_TEST_EXPECT_H

#include <stdio.h>

static int failures = 0;
#define EXPECT(cond, ...)                                                                                              \
  do {                                                                                                                 \
    if (!(cond)) {                                                                                                     \
      printf("FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond);                                                         \
      printf(__VA_ARGS__);                                                                                             \
      printf("\n");                                                                                                    \
      ++failures;                                                                                                      \
    }                                                                                                                  \
  } while (0)

#endif
