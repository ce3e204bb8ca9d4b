// The decoder's rows across steps: a beam's history read through the k/v row
// tables (reordering rewrites them, no key or value moves), whether a call's
// table is the identity, and finished rows leaving the batch.
#include "executor.hpp"

#include "halformer/error.hpp"

#include <algorithm>

namespace halformer {

// Row r's history becomes its parent's: positions < len of row r are read from
// wherever its parent's are (tgt_rows_). No key or value moves; the next step
// writes position len of every row into that row, which no history refers to.
void executor::reorder_caches(const std::vector<int>& parent, int len) {
  scoped_time timed(profiler_, phase::decode, "reorder_caches");
  const std::size_t n = std::size_t(len);
  for (int r = 0; r < rows_; ++r)
    std::copy_n(&tgt_rows_(0, r), n, &old_tgt_rows_[std::size_t(r) * n]);
  for (int r = 0; r < rows_; ++r)
    std::copy_n(&old_tgt_rows_[std::size_t(parent[std::size_t(r)]) * n], n, &tgt_rows_(0, r));
  // No upload here: decode() uploads the table before its kernels read it.
}

// Whether every row of a k/v row table's view reads its own row: attention then
// reads the keys by address (dsl::attention's own_rows). A decode step checks the
// rows x positions it reads, a few thousand entries.
bool executor::identity(const ibuffer& table) {
  for (int r = table.dim(1).min(); r <= table.dim(1).max(); ++r)
    for (int p = table.dim(0).min(); p <= table.dim(0).max(); ++p)
      if (table(p, r) != r)
        return false;
  return true;
}

ibuffer executor::kv_rows_view(const operand& o) const {
  const bool src = o.integers == &src_rows_;
  return o.integers->cropped(0, 0, src ? src_ : pos_ + t_).cropped(1, 0, src ? sources() : rows_);
}

void executor::keep_rows(const std::vector<int>& keep, int len) {
  scoped_time timed(profiler_, phase::decode, "keep_rows");
  const std::size_t k = std::size_t(group_);
  for (std::size_t i = 0; i < keep.size(); ++i)
    if (keep[i] < int(i) || keep[i] >= rows_ || (i > 0 && keep[i] <= keep[i - 1]))
      throw error("keep_rows: rows must be ascending and below " + std::to_string(rows_));
  for (std::size_t i = 0; i < keep.size(); ++i)
    if (keep.size() % k != 0 || keep[i] != keep[i / k * k] + int(i % k) || keep[i / k * k] % int(k) != 0)
      throw error("keep_rows: rows must be whole sources' blocks of " + std::to_string(k));
  // Caches stay where they are: row i reads row keep[i]'s history (keep[i] >= i,
  // so the table's columns move down in place).
  for (int i = 0; i < int(keep.size()); ++i)
    if (keep[std::size_t(i)] != i)
      std::copy_n(&tgt_rows_(0, keep[std::size_t(i)]), len, &tgt_rows_(0, i)); // decode() uploads it
  for (int s = 0; s < int(keep.size() / k); ++s) {
    const int from = keep[std::size_t(s) * k] / int(k);
    if (from == s)
      continue;
    for (const std::string& key : per_source_) // a scratch is rewritten before it is read again
      copy_row(acts_.at(key), from, acts_.at(key), s, batch_dim_of(key), -1, 0);
    src_lengths_(s) = src_lengths_(from);
  }
  rows_ = int(keep.size());
  upload(src_lengths_);
}

} // namespace halformer
