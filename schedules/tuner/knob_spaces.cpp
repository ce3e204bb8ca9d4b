// Prints every schedule's knob declarations as JSON, {section: [{name, allowed,
// meaning}]}: the tuner's search spaces, straight from the schedules' code.
#include "halformer/schedules/cpu/attention.hpp"
#include "halformer/schedules/cpu/embedding.hpp"
#include "halformer/schedules/cpu/ffn.hpp"
#include "halformer/schedules/cpu/gemm.hpp"
#include "halformer/schedules/cpu/rows.hpp"

#include <iostream>

int main() {
  using namespace halformer::schedules::cpu;
  const std::map<std::string, std::vector<halformer::schedules::knob_decl>> sections{{"embedding", embedding_knobs()},
                                                                                     {"head_projection", gemm_knobs()},
                                                                                     {"attention", attention_knobs()},
                                                                                     {"out_projection", gemm_knobs()},
                                                                                     {"ffn", ffn_knobs()},
                                                                                     {"layernorm", row_knobs()},
                                                                                     {"softmax", row_knobs()},
                                                                                     {"logits", gemm_knobs()}};
  nlohmann::json j;
  j["_revisions"] = {{"embedding", embedding_revision},
                     {"head_projection", gemm_revision},
                     {"attention", attention_revision},
                     {"out_projection", gemm_revision},
                     {"ffn", gemm_revision},
                     {"layernorm", row_revision},
                     {"softmax", row_revision},
                     {"logits", gemm_revision}};
  for (const auto& [section, decls] : sections)
    for (const auto& d : decls)
      j[section].push_back({{"name", d.name}, {"allowed", d.allowed}, {"meaning", d.meaning}});
  std::cout << j.dump(1) << "\n";
}
