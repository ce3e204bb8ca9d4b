// Checked reads of a configuration file's JSON keys: a missing key (where one is
// required), a value of the wrong type or out of range is an error naming the
// file and the key.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace halformer::config_json {

using nlohmann::json;

std::string read_text(const std::string& path); // throws if it cannot be opened
json parse_object(const std::string& text, const std::string& where);

int get_int(const json& j, const std::string& key, const std::string& where, int min);
bool get_bool(const json& j, const std::string& key, const std::string& where);
std::string get_string(const json& j, const std::string& key, const std::string& where);
// The same where a missing key (or null) means `otherwise`.
int get_int_or(const json& j, const std::string& key, const std::string& where, int min, int otherwise);
bool get_bool_or(const json& j, const std::string& key, const std::string& where, bool otherwise);
std::string get_string_or(const json& j, const std::string& key, const std::string& where, std::string otherwise);

} // namespace halformer::config_json
