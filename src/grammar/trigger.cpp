// std::regex lives in this file alone: GCC 12 reports false
// -Wmaybe-uninitialized warnings inside <regex>'s std::function members when
// optimizing with sanitizers, and the warning cannot be silenced at the use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "grammar/trigger.h"

#include <regex>

#include "core/error.h"

namespace strix::grammar {

struct TriggerPattern::Impl {
  std::string text;
  std::regex regex;
};

TriggerPattern::TriggerPattern(const std::string& pattern) : impl_(std::make_unique<Impl>()) {
  impl_->text = pattern;
  try {
    impl_->regex = std::regex(pattern);
  } catch (const std::regex_error& e) {
    throw Error("grammar: invalid trigger pattern '" + pattern + "': " + e.what());
  }
}

TriggerPattern::~TriggerPattern() = default;
TriggerPattern::TriggerPattern(TriggerPattern&&) noexcept = default;
TriggerPattern& TriggerPattern::operator=(TriggerPattern&&) noexcept = default;

size_t TriggerPattern::find(const std::string& text) const {
  const auto start_of = [](const std::smatch& m) {
    for (size_t i = 1; i < m.size(); ++i) {
      if (m.length(i) > 0) return static_cast<size_t>(m.position(i));
    }
    return static_cast<size_t>(m.position(0));
  };
  const std::string& p = impl_->text;
  std::smatch m;
  if (!p.empty() && p.front() == '^' && p.back() == '$' && std::regex_match(text, m, impl_->regex)) return start_of(m);
  if (std::regex_search(text, m, impl_->regex)) return start_of(m);
  return std::string::npos;
}

}  // namespace strix::grammar
