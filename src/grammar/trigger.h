// A lazy grammar's trigger pattern, with libllama's matching rule
// (llama_grammar_trigger_pattern::find): std::regex, ECMAScript syntax; a
// pattern written "^...$" must match the whole text, any other one may match
// anywhere. The grammar then starts at the first non-empty capture group, or
// at the match when no group captured anything.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace strix::grammar {

class TriggerPattern {
 public:
  // Throws strix::Error when the regex does not compile.
  explicit TriggerPattern(const std::string& pattern);
  ~TriggerPattern();
  TriggerPattern(TriggerPattern&&) noexcept;
  TriggerPattern& operator=(TriggerPattern&&) noexcept;

  // Where the grammar starts in `text`, or std::string::npos: no match.
  size_t find(const std::string& text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strix::grammar
