#include "database.hpp"

#include "halformer/shape_buckets.hpp"

#include "halformer/error.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace halformer::tuner {

nlohmann::json record::to_json() const {
  return {{"kernel", kernel},
          {"knob_section", knob_section},
          {"shape", shape},
          {"dtype", dtype},
          {"target", target},
          {"hardware", hardware},
          {"halformer", halformer_version},
          {"halide", halide_version},
          {"knobs", knobs},
          {"schedule_revision", schedule_revision},
          {"status", status},
          {"source", source},
          {"median_ms", median_ms},
          {"min_ms", min_ms},
          {"max_ms", max_ms},
          {"gflops", gflops},
          {"gbps", gbps},
          {"max_error", max_error},
          {"settings", settings},
          {"detail", detail},
          {"when", when}};
}

record record::from_json(const nlohmann::json& j, const std::string& where) {
  record r;
  try {
    r.kernel = j.at("kernel");
    r.knob_section = j.at("knob_section");
    r.shape = j.at("shape");
    r.dtype = j.at("dtype");
    r.target = j.at("target");
    r.hardware = j.at("hardware");
    r.halformer_version = j.at("halformer");
    r.halide_version = j.at("halide");
    r.knobs = j.at("knobs").get<std::map<std::string, int>>();
    r.schedule_revision = j.value("schedule_revision", 1);
    r.status = j.at("status");
    r.source = j.value("source", "");
    r.median_ms = j.at("median_ms");
    r.min_ms = j.at("min_ms");
    r.max_ms = j.at("max_ms");
    r.gflops = j.value("gflops", 0.0);
    r.gbps = j.value("gbps", 0.0);
    r.max_error = j.value("max_error", 0.0);
    r.settings = j.value("settings", nlohmann::json::object());
    r.detail = j.value("detail", "");
    r.when = j.value("when", "");
  } catch (const std::exception& e) {
    throw error(where + ": not a schedule record: " + e.what());
  }
  return r;
}

database::database(std::string dir) : dir_(std::move(dir)), file_(dir_ + "/schedules.jsonl") {}

// Each record line in order, with the line as written (blank lines skipped).
void database::each_line(const std::function<void(const std::string&, record)>& visit) const {
  std::ifstream in(file_);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) { // no file: an empty database
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    const std::string where = file_ + " line " + std::to_string(n);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      throw error(where + ": invalid JSON: " + e.what());
    }
    visit(line, record::from_json(j, where));
  }
}

std::vector<record> database::load() const {
  std::vector<record> out;
  each_line([&](const std::string&, record r) { out.push_back(std::move(r)); });
  return out;
}

void database::append(const record& r) const {
  std::filesystem::create_directories(dir_);
  std::ofstream out(file_, std::ios::app);
  if (!out)
    throw error("cannot write " + file_);
  out << r.to_json().dump() << "\n";
}

std::size_t database::keep_only(const std::function<bool(const record&)>& keep) const {
  if (!std::filesystem::exists(file_))
    return 0;
  const std::string kept_file = file_ + ".new";
  std::ofstream out(kept_file, std::ios::trunc);
  std::size_t dropped = 0;
  try {
    each_line([&](const std::string& line, const record& r) {
      if (keep(r))
        out << line << "\n";
      else
        ++dropped;
    });
  } catch (...) {
    std::filesystem::remove(kept_file);
    throw;
  }
  out.close();
  if (!out)
    throw error("cannot write " + kept_file);
  std::filesystem::rename(kept_file, file_);
  return dropped;
}

std::optional<record> database::best(const std::string& kernel, const std::string& shape, const std::string& target,
                                     const std::string& hardware) const {
  const auto records = load();
  const record* best = pick_tuned(records, [&](const record& r) {
    return r.kernel == kernel && r.shape == shape && r.target == target && r.hardware == hardware;
  });
  return best ? std::optional<record>(*best) : std::nullopt;
}

std::string bucket_of(const std::string& shape) {
  const auto v = shape_values(shape);
  const int t = v.count("t") ? v.at("t") : 1, batch = v.count("batch") ? v.at("batch") : 1;
  return halformer::bucket_of(t, batch);
}

std::map<std::string, int> shape_values(const std::string& shape) {
  std::map<std::string, int> m;
  std::stringstream ss(canonical_shape(shape));
  for (std::string kv; std::getline(ss, kv, ',');)
    m[kv.substr(0, kv.find('='))] = std::stoi(kv.substr(kv.find('=') + 1));
  return m;
}

std::string canonical_shape(const std::string& shape) {
  std::map<std::string, std::string> kv;
  std::stringstream ss(shape);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw error("shape item '" + item + "' is not name=value");
    const std::string value = item.substr(eq + 1);
    if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
      throw error("shape item '" + item + "' needs a non-negative integer value");
    kv[item.substr(0, eq)] = value;
  }
  std::string out;
  for (const auto& [k, v] : kv)
    out += (out.empty() ? "" : ",") + k + "=" + v;
  return out;
}

} // namespace halformer::tuner
