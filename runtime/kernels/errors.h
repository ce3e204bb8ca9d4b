/* Internal to the kernel libraries: the per-thread message that
 * halformer_last_error() returns, written by Halide's error handler, ISA
 * forcing, device probing and the by-name kernel lookup (errors.c). */
#ifndef HALFORMER_ERRORS_H
#define HALFORMER_ERRORS_H

/* Replaces the message (printf-style). */
void halformer_set_error(const char* format, ...) __attribute__((format(printf, 1, 2)));
/* Appends to the message, as far as it fits. */
void halformer_append_error(const char* format, ...) __attribute__((format(printf, 1, 2)));
/* Halide's error handler: the message as it is. */
void halformer_on_halide_error(void* user_context, const char* message);

#endif
