// Model::set_profiling: the profile accounts for every kernel call of a
// translation, per phase, and changes nothing in the outputs.
#include "fixtures.hpp"

#include <catch2/catch.hpp>

#include <map>

using halformer::Model;

namespace {
const halformer::kernel_time* entry(const halformer::run_profile& p, const std::string& phase,
                                    const std::string& kernel) {
  for (const auto& k : p.entries)
    if (k.phase == phase && k.kernel == kernel)
      return &k;
  return nullptr;
}
} // namespace

TEST_CASE("a profile counts every kernel call per phase", "[profile]") {
  Model m = Model::load(fixtures::dir("pre_ln_gelu"));
  const auto sources = fixtures::sources("pre_ln_gelu");
  const int layers = m.config().num_decoder_layers;
  for (int beam : {1, 3}) {
    INFO("beam " << beam);
    halformer::decode_options o;
    o.max_len = 9, o.beam = o.nbest = beam;
    const auto plain = m.translate(sources, o);
    CHECK(m.profile().entries.empty()); // off by default
    m.set_profiling(true);
    const auto profiled = m.translate(sources, o);
    const halformer::run_profile p = m.profile();
    m.set_profiling(false);
    for (std::size_t i = 0; i < plain.size(); ++i)
      CHECK(profiled[i][0].tokens == plain[i][0].tokens);

    REQUIRE(p.decode_steps >= 1);
    CHECK(p.decode_steps <= o.max_len);
    const auto* logits = entry(p, "decode", "logits");
    const auto* attention = entry(p, "decode", "attention");
    REQUIRE(logits);
    REQUIRE(attention);
    CHECK(logits->calls == p.decode_steps);                 // one per step
    CHECK(attention->calls == 2 * layers * p.decode_steps); // self and cross per layer
    CHECK(entry(p, "encode", "embedding"));
    CHECK(entry(p, "decode", beam == 1 ? "greedy_pick" : "beam_candidates"));
    CHECK((entry(p, "decode", "reorder_caches") != nullptr) == (beam > 1));
    CHECK_FALSE(entry(p, "encode", "logits"));
    for (const char* phase : {"encode", "decode"}) {
      INFO(phase);
      CHECK(p.host_seconds(phase) >= 0); // kernels run inside the phase's wall time
      CHECK(p.host_seconds(phase) < (phase == std::string("encode") ? p.encode_seconds : p.decode_seconds));
    }
    const std::string table = p.table();
    CHECK(table.find("(host work)") != std::string::npos);
    CHECK(table.find("decode steps: " + std::to_string(p.decode_steps)) != std::string::npos);
  }
}

TEST_CASE("finished sentences leave the batch, and the others decode as alone", "[profile][compaction]") {
  // Cases whose sentences finish at different steps: post_ln_relu's greedy outputs
  // end after 1, 3, 10 and 10 tokens (expected.json); pre_ln_relu_heads8's beams
  // finish apart within 30 steps.
  struct test_case {
    const char* fixture;
    int beam, max_len;
  };
  for (const test_case& c : {test_case{"post_ln_relu", 1, 10}, test_case{"pre_ln_relu_heads8", 3, 30}}) {
    INFO(c.fixture << ", beam " << c.beam);
    Model m = Model::load(fixtures::dir(c.fixture));
    const auto sources = fixtures::sources(c.fixture);
    halformer::decode_options o;
    o.max_len = c.max_len, o.beam = o.nbest = c.beam;
    m.set_profiling(true);
    const auto together = m.translate(sources, o);
    const halformer::run_profile p = m.profile();
    m.set_profiling(false);
    const auto* dropped = entry(p, "decode", "keep_rows");
    REQUIRE(dropped);
    CHECK(dropped->calls >= 1);
    for (std::size_t i = 0; i < sources.size(); ++i) {
      const auto alone = m.translate({sources[i]}, o);
      REQUIRE(alone[0].size() == together[i].size());
      for (std::size_t k = 0; k < alone[0].size(); ++k) {
        CHECK(alone[0][k].tokens == together[i][k].tokens);
        CHECK(alone[0][k].score == together[i][k].score);
      }
    }
  }
}
