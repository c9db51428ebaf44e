// The one JSON writer of the commands (explain --json, doctor --json): members in the order they
// are added, on one line without spaces, every string through json_str (util.h), so that any byte
// a value holds still gives a document that parses. Header-only: nlohmann-json is optional
// (only the node hook needs it), and the command must build without it.
#pragma once

#include <string>
#include <vector>

#include "util.h"

namespace ucxtls {
namespace cli {

class Json {
 public:
  // key: the member's name inside an object, nullptr for an element of an array.
  Json &str(const char *key, const char *s) { return raw(key, json_str(s)); }  // nullptr: null
  Json &str(const char *key, const std::string &s) { return raw(key, json_str(s.c_str())); }
  Json &str_or_null(const char *key, const std::string &s) { return raw(key, s.empty() ? "null" : json_str(s.c_str())); }
  Json &boolean(const char *key, bool b) { return raw(key, b ? "true" : "false"); }
  Json &number(const char *key, long long n) { return raw(key, std::to_string(n)); }
  Json &list(const char *key, const std::vector<std::string> &items) {
    array(key);
    for (const std::string &i : items) str(nullptr, i);
    return end();
  }
  Json &object(const char *key = nullptr) { return open(key, '{', '}'); }
  Json &array(const char *key) { return open(key, '[', ']'); }
  Json &end() {
    text_ += closers_.back(), closers_.pop_back(), first_ = false;
    return *this;
  }
  // true, false, null or a number, as written.
  Json &raw(const char *key, const std::string &literal) {
    text_ += (first_ ? "" : ",") + (key ? json_str(key) + ":" : "") + literal, first_ = false;
    return *this;
  }
  // The document, every object and array closed, and a newline.
  std::string text() {
    while (!closers_.empty()) end();
    return text_ + "\n";
  }

 private:
  Json &open(const char *key, char opener, char closer) {
    raw(key, std::string(1, opener)), closers_ += closer, first_ = true;
    return *this;
  }
  std::string text_, closers_;
  bool first_ = true;
};

}  // namespace cli
}  // namespace ucxtls
