// A fixture model's configuration and weights, loaded as the runtime loads them,
// for tests that build executors themselves.
#pragma once

#include "fixtures.hpp"

#include "safetensors.hpp"
#include "weights.hpp"

namespace fixtures {

struct loaded_model {
  halformer::model_config config;
  halformer::model_weights weights;
  explicit loaded_model(const std::string& name) {
    const std::string d = dir(name);
    config = halformer::model_config::load(d + "/config.json", nullptr);
    halformer::safetensors_file file(d + "/model.safetensors");
    weights = halformer::model_weights::load(file, config);
  }
};

} // namespace fixtures
