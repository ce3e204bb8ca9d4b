// The cache level of the kernels' software prefetches on x86.
//
// Halide's Func::prefetch lowers to its runtime's _halide_prefetch, which asks
// for locality 0: every prefetch is `prefetchnta`, and Halide 21 has no setting
// for another. A decode GEMM's tile and the tile it prefetches ahead overflow a
// 32 KiB L1 (Zen 4): `prefetchnta` lines land in L1 and evict the tile being
// read, and the GEMMs read 50-65% of the memory bandwidth. `prefetcht1` stages
// them in L2 instead (1.1-1.7x on the decode GEMMs at batch 8; README).
//
// The generator's objects are therefore rewritten after Halide writes them:
// each `prefetchnta` (0F 18 /0) becomes the hint asked for (0F 18 /1, /2, /3),
// by changing the reg field of its ModRM byte. Instruction lengths, addresses
// and relocations stay as they were. objdump (binutils) finds the instructions.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>

namespace halformer::generators {

// The x86 prefetch instructions, by their ModRM reg field.
enum class prefetch_hint { nta = 0, t0 = 1, t1 = 2, t2 = 3 };

// Halide's own choice (nta) is kept only when asked for: t1 is the default.
inline constexpr prefetch_hint default_prefetch_hint = prefetch_hint::t1;

// The GeneratorParam's names for the hints ("nta", "t0", "t1", "t2").
const std::map<std::string, prefetch_hint>& prefetch_hint_names();

// Rewrites every prefetchnta of an ELF object (.o), of the ELF members of an
// archive (.a) or of GNU assembly (.s) in place; returns how many. Throws std::runtime_error naming the
// file when objdump fails or an instruction is not what objdump said it was.
std::size_t retarget_prefetches(const std::filesystem::path& file, prefetch_hint hint);

} // namespace halformer::generators
