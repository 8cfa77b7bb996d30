// Options as one table: each option once, with its name, default, range and help, parsed from text
// into a typed field (an enum, a number in range, a switch) at the edge where the text arrives.
// `dcr refit` builds its Boost options from such tables, and the C API's dcr_spec_set looks names
// up in the library's; a new option is added in one place. As UCX's configuration table, not a
// parser per caller.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

template <class Config>
struct Option {
  std::string name;  // as on the command line, without "--"
  std::string help;
  bool is_switch = false;                                  // a boolean: the bare switch means true
  std::function<std::string(const Config&)> get;           // the value as text (the default, in --help)
  std::function<Status(const std::string&, Config*)> set;  // parses, checks the range, assigns
};

namespace options {

// "true"/"false" and the other spellings of a switch (as the INI files and the C API write them).
inline bool parse_switch(const std::string& text, bool* value) {
  for (const char* yes : {"true", "1", "on", "yes"}) {
    if (text == yes) return *value = true, true;
  }
  for (const char* no : {"false", "0", "off", "no"}) {
    if (text == no) return *value = false, true;
  }
  return false;
}

inline std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// "--window must be at least 1" or "--fanout must be in [1, 64]".
inline std::string range_text(const std::string& name, long long low, long long high) {
  if (high == std::numeric_limits<long long>::max() || high == std::numeric_limits<int>::max())
    return "--" + name + " must be at least " + std::to_string(low);
  return "--" + name + " must be in [" + std::to_string(low) + ", " + std::to_string(high) + "]";
}

// A whole number in [low, high] (decimal digits only: "0x10" and "1e3" are refused).
template <class C, class T>
Option<C> integer(const std::string& name, T C::*field, long long low, long long high, const std::string& help) {
  Option<C> o{name, help, false, [field](const C& c) { return std::to_string(c.*field); }, nullptr};
  o.set = [name, field, low, high](const std::string& text, C* c) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    DCR_REQUIRE(!text.empty() && *end == '\0' && errno == 0, Code::invalid_argument,
                "--" + name + ": '" + text + "' is not an integer");
    DCR_REQUIRE(v >= low && v <= high, Code::invalid_argument, range_text(name, low, high) + ", not " + text);
    c->*field = static_cast<T>(v);
    return Status::ok();
  };
  return o;
}

// A comma-separated list of whole numbers, each in [low, high] ("1,2,4,8"); empty text: none.
template <class C>
Option<C> integers(const std::string& name, std::vector<int> C::*field, long long low, long long high,
                   const std::string& help) {
  Option<C> o{name, help, false, nullptr, nullptr};
  o.get = [field](const C& c) {
    std::string text;
    for (int v : c.*field) text += (text.empty() ? "" : ",") + std::to_string(v);
    return text;
  };
  o.set = [name, field, low, high](const std::string& text, C* c) {
    struct One {
      int v = 0;
    } one;
    const Option<One> item = integer<One>(name, &One::v, low, high, "");
    std::vector<int> values;
    for (size_t at = 0; at < text.size();) {
      const size_t end = std::min(text.find(',', at), text.size());
      DCR_TRY(item.set(text.substr(at, end - at), &one));
      values.push_back(one.v);
      at = end + 1;
      DCR_REQUIRE(end + 1 != text.size(), Code::invalid_argument, "--" + name + ": '" + text + "' ends with a comma");
    }
    c->*field = std::move(values);
    return Status::ok();
  };
  return o;
}

// A finite number in [low, high] (low excluded with `above_low`), `unit` after the range.
template <class C>
Option<C> number(const std::string& name, double C::*field, double low, double high, bool above_low,
                 const std::string& unit, const std::string& help) {
  Option<C> o{name, help, false, [field](const C& c) { return number_text(c.*field); }, nullptr};
  o.set = [=](const std::string& text, C* c) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    const std::string range = "--" + name + " must be in " + (above_low ? "(" : "[") + number_text(low) + ", " +
                              number_text(high) + "]" + (unit.empty() ? "" : " " + unit);
    DCR_REQUIRE(!text.empty() && *end == '\0', Code::invalid_argument, "--" + name + ": '" + text + "' is not a number");
    DCR_REQUIRE(std::isfinite(v) && (above_low ? v > low : v >= low) && v <= high, Code::invalid_argument,
                range + ", not " + text);
    c->*field = v;
    return Status::ok();
  };
  return o;
}

template <class C>
Option<C> flag(const std::string& name, bool C::*field, const std::string& help) {
  Option<C> o{name, help, true, [field](const C& c) { return std::string(c.*field ? "true" : "false"); }, nullptr};
  o.set = [name, field](const std::string& text, C* c) {
    bool v = false;
    DCR_REQUIRE(parse_switch(text, &v), Code::invalid_argument,
                "--" + name + ": '" + text + "' is not true or false (nor 1/0, on/off, yes/no)");
    c->*field = v;
    return Status::ok();
  };
  return o;
}

template <class C>
Option<C> text(const std::string& name, std::string C::*field, const std::string& help) {
  return Option<C>{name, help, false, [field](const C& c) { return c.*field; },
                   [field](const std::string& t, C* c) { return c->*field = t, Status::ok(); }};
}

// One of a few words, each naming a value of an enum: exactly the words the help lists.
template <class C, class E>
Option<C> choice(const std::string& name, E C::*field, std::vector<std::pair<std::string, E>> words,
                 const std::string& help) {
  std::string listed;
  for (size_t i = 0; i < words.size(); ++i) listed += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i].first;
  Option<C> o{name, help, false, nullptr, nullptr};
  o.get = [field, words](const C& c) {
    for (const auto& w : words) {
      if (w.second == c.*field) return w.first;
    }
    return std::string("?");
  };
  o.set = [name, field, words, listed](const std::string& text, C* c) {
    for (const auto& w : words) {
      if (w.first == text) return c->*field = w.second, Status::ok();
    }
    return Status(Code::invalid_argument, "--" + name + " '" + text + "' is not " + listed);
  };
  return o;
}

// An option of a base's table used on a derived configuration (the job's config holds the
// library's options).
template <class Derived, class Base>
Option<Derived> lifted(const Option<Base>& o) {
  return Option<Derived>{o.name, o.help, o.is_switch, [g = o.get](const Derived& c) { return g(c); },
                         [s = o.set](const std::string& t, Derived* c) { return s(t, c); }};
}

// Every value of `c` through its own option again: a field set in code (a C++ caller) meets the
// ranges a typed value does, with the same message.
template <class C>
Status check_ranges(const std::vector<Option<C>>& table, const C& c) {
  C copy = c;
  for (const Option<C>& o : table) DCR_TRY(o.set(o.get(c), &copy));
  return Status::ok();
}

// The option named `name` set from `text`; invalid_argument for an unknown name, listing the known.
template <class C>
Status set_by_name(const std::vector<Option<C>>& table, const std::string& name, const std::string& text, C* c) {
  std::string known;
  for (const Option<C>& o : table) {
    if (o.name == name) return o.set(text, c);
    known += (known.empty() ? "" : ", ") + o.name;
  }
  return Status(Code::invalid_argument, "unknown option '" + name + "' (" + known + ")");
}

}  // namespace options
}  // namespace dcr
