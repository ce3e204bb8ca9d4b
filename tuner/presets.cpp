#include "presets.hpp"

#include "database.hpp"
#include "halformer/error.hpp"

namespace halformer::tuner {

std::vector<std::string> preset_names() { return {"transformer-base"}; }

std::vector<preset_entry> preset(const std::string& name) {
  if (name != "transformer-base")
    throw error("unknown preset '" + name + "' (transformer-base)");
  const std::vector<std::tuple<std::string, std::string, bool>> e{
      {"embedding", "d_model=512,vocab=32000,t=128,batch=8", true},
      {"embedding", "d_model=512,vocab=32000,t=1,batch=8", false},
      {"qkv_projection", "d_k=64,heads=8,t=128,batch=8", true},
      {"qkv_projection", "d_k=64,heads=8,t=1,batch=8", false},
      {"qkv_projection", "d_k=64,heads=8,t=1,batch=1", false},
      {"kv_projection", "d_k=64,heads=8,t=128,batch=8", true},
      {"q_projection", "d_k=64,heads=8,t=1,batch=8", true},
      {"q_projection", "d_k=64,heads=8,t=1,batch=1", false},
      {"attention", "d_k=64,heads=8,t=128,tk=128,batch=8,causal=0", true},
      {"attention", "d_k=64,heads=8,t=1,tk=128,batch=8,causal=1", false},
      {"attention", "d_k=64,heads=8,t=1,tk=128,batch=1,causal=1", false},
      {"out_projection", "d_k=64,heads=8,t=128,batch=8", true},
      {"out_projection", "d_k=64,heads=8,t=1,batch=8", false},
      {"out_projection", "d_k=64,heads=8,t=1,batch=1", false},
      {"ffn_relu", "d_model=512,d_ff=2048,t=128,batch=8", true},
      {"ffn_relu", "d_model=512,d_ff=2048,t=1,batch=8", false},
      {"ffn_relu", "d_model=512,d_ff=2048,t=1,batch=1", false},
      {"layernorm", "d_model=512,t=128,batch=8", true},
      {"layernorm", "d_model=512,t=1,batch=8", false},
      {"add_layernorm", "d_model=512,t=128,batch=8", true},
      {"softmax", "n=128,t=128,batch=8", true},
      {"log_softmax", "n=32000,t=1,batch=8", true},
      {"logits", "d_model=512,vocab=32000,t=1,batch=8", true},
      {"logits", "d_model=512,vocab=32000,t=1,batch=1", false},
  };
  std::vector<preset_entry> out;
  for (const auto& [k, s, p] : e)
    out.push_back({k, canonical_shape(s), p});
  return out;
}

} // namespace halformer::tuner
