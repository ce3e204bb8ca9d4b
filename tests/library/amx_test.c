/* AMX usability (runtime/kernels/amx.h) against what Linux reports in
 * /proc/cpuinfo, and, where usable, tile instructions that die of SIGILL unless
 * the tile state was granted: one tdpbusd against the same sums computed here.
 * Skipped (77) on a CPU without AMX, after checking it is not reported usable. */
#include "amx.h"
#include "expect.h"

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

static int cpuinfo_has(const char* flag) {
  FILE* f = fopen("/proc/cpuinfo", "r");
  char line[8192];
  int found = 0;
  while (f && !found && fgets(line, sizeof line, f))
    if (!strncmp(line, "flags", 5)) {
      char padded[64];
      snprintf(padded, sizeof padded, " %s", flag);
      for (char* at = strstr(line, padded); at && !found; at = strstr(at + 1, padded))
        found = at[strlen(padded)] == ' ' || at[strlen(padded)] == '\n';
    }
  if (f)
    fclose(f);
  return found;
}

struct __attribute__((aligned(64))) tile_config {
  uint8_t palette, start_row, reserved[14];
  uint16_t bytes_per_row[16];
  uint8_t rows[16];
};

/* C (16 x 16 int32) = A (16 x 64 u8) . B (16 groups x 16 outputs x 4 s8). */
__attribute__((target("amx-tile,amx-int8"))) static void tile_product(const uint8_t* a, const int8_t* b, int32_t* c) {
  struct tile_config config;
  memset(&config, 0, sizeof config);
  config.palette = 1;
  for (int i = 0; i < 3; ++i)
    config.bytes_per_row[i] = 64, config.rows[i] = 16;
  __asm__ volatile("" : : "r"(&config) : "memory"); /* GCC 12 drops the stores otherwise */
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_loadd(1, a, 64);
  _tile_loadd(2, b, 64);
  _tile_dpbusd(0, 1, 2);
  _tile_stored(0, c, 64);
  _tile_release();
}

int main(void) {
  const int listed = cpuinfo_has("amx_tile") && cpuinfo_has("amx_int8") && cpuinfo_has("amx_bf16");
  const int usable = halformer_amx_usable();
  EXPECT(usable == halformer_amx_usable(), "a second call disagrees");
  if (!listed) {
    EXPECT(!usable, "AMX reported usable where /proc/cpuinfo lists no AMX");
    printf("no AMX on this CPU (/proc/cpuinfo): skipped\n");
    return failures ? 1 : 77;
  }
  EXPECT(usable, "/proc/cpuinfo lists amx_tile, amx_int8 and amx_bf16, but AMX is not usable");
  if (usable) {
    uint8_t a[16 * 64];
    int8_t b[16 * 16 * 4];
    int32_t c[16 * 16];
    for (int i = 0; i < 16 * 64; ++i)
      a[i] = (uint8_t)(i * 37 % 256), b[i] = (int8_t)(i * 11 % 255 - 127);
    tile_product(a, b, c);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n) {
        int32_t sum = 0;
        for (int k = 0; k < 64; ++k)
          sum += a[m * 64 + k] * b[(k / 4) * 64 + n * 4 + k % 4];
        EXPECT(c[m * 16 + n] == sum, "tdpbusd row %d column %d: %d, expected %d", m, n, c[m * 16 + n], sum);
      }
  }
  printf("AMX usable: %d; %d failures\n", usable, failures);
  return failures != 0;
}
