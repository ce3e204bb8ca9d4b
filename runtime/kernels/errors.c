/* The kernel libraries' last error, one message per thread (errors.h). */
#include "errors.h"
#include "halformer_kernels.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[4096];

static void write_at(size_t at, const char* format, va_list args) {
  if (at < sizeof last_error)
    vsnprintf(last_error + at, sizeof last_error - at, format, args);
}

void halformer_set_error(const char* format, ...) {
  va_list args;
  va_start(args, format);
  write_at(0, format, args);
  va_end(args);
}

void halformer_append_error(const char* format, ...) {
  va_list args;
  va_start(args, format);
  write_at(strlen(last_error), format, args);
  va_end(args);
}

void halformer_on_halide_error(void* user_context, const char* message) {
  (void)user_context;
  halformer_set_error("%s", message);
}

const char* halformer_last_error(void) { return last_error; }
void halformer_clear_error(void) { last_error[0] = 0; }
