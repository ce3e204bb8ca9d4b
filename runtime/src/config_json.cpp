#include "config_json.hpp"

#include "halformer/error.hpp"

#include <fstream>
#include <sstream>

namespace halformer::config_json {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw error("cannot open '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json parse_object(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    throw error(where + " is not valid JSON: " + e.what());
  }
  if (!j.is_object())
    throw error(where + ": expected a JSON object");
  return j;
}

namespace {
const json& required(const json& j, const std::string& key, const std::string& where) {
  if (!j.contains(key))
    throw error(where + ": missing required key '" + key + "'");
  return j[key];
}
bool absent(const json& j, const std::string& key) { return !j.contains(key) || j[key].is_null(); }
} // namespace

int get_int(const json& j, const std::string& key, const std::string& where, int min) {
  const json& v = required(j, key, where);
  if (!v.is_number_integer())
    throw error(where + ": key '" + key + "' must be an integer, not " + v.dump());
  const auto x = v.get<std::int64_t>();
  if (x < min || x > (1 << 30))
    throw error(where + ": key '" + key + "' = " + std::to_string(x) + " is out of range (>= " + std::to_string(min) +
                ")");
  return static_cast<int>(x);
}

bool get_bool(const json& j, const std::string& key, const std::string& where) {
  const json& v = required(j, key, where);
  if (!v.is_boolean())
    throw error(where + ": key '" + key + "' must be true or false, not " + v.dump());
  return v.get<bool>();
}

std::string get_string(const json& j, const std::string& key, const std::string& where) {
  const json& v = required(j, key, where);
  if (!v.is_string())
    throw error(where + ": key '" + key + "' must be a string, not " + v.dump());
  return v.get<std::string>();
}

int get_int_or(const json& j, const std::string& key, const std::string& where, int min, int otherwise) {
  return absent(j, key) ? otherwise : get_int(j, key, where, min);
}
bool get_bool_or(const json& j, const std::string& key, const std::string& where, bool otherwise) {
  return absent(j, key) ? otherwise : get_bool(j, key, where);
}
std::string get_string_or(const json& j, const std::string& key, const std::string& where, std::string otherwise) {
  return absent(j, key) ? otherwise : get_string(j, key, where);
}

} // namespace halformer::config_json
