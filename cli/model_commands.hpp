// The commands that run a model over lines: `run` (token ids) and `translate`
// (text through the directory's tokenizer).
#pragma once

#include "halformer/model.hpp"

#include <string>

namespace CLI {
class App;
}

namespace halformer::cli {

struct model_request {
  std::string dir, input, output;       // input/output: files, else stdin/stdout
  std::string target_prefix;            // a file: line n starts input line n's translation (empty: none)
  std::string source_lang, target_lang; // translate: NLLB's and M2M100's language codes
  load_options lo;
  decode_options o;
  int batch = 32;             // sources decoded together
  bool profile = false;       // per-kernel times on stderr
  bool progress = false;      // a progress line on stderr, when it is a terminal
  bool max_len_given = false; // else o.max_len is cut to the model's last position
};

// Option --kv-cache of the commands that load a model.
void add_kv_cache(CLI::App* cmd, load_options& lo);

int run(model_request r);
int translate(model_request r);

} // namespace halformer::cli
