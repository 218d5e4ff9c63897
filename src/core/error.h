// Errors and refusals.
//
// Strix never loads something and then computes something else: anything it does
// not implement is refused with one sentence naming what is missing. Both kinds of
// failure are exceptions that reach the command line as "error: <message>", exit 1.
#pragma once

#include <stdexcept>
#include <string>

namespace strix {

// Bad input: a malformed file, a bad flag value, a missing file.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Well-formed input that Strix does not support (yet): names exactly what is missing.
class Refusal : public Error {
 public:
  explicit Refusal(const std::string& message) : Error(message) {}
};

}  // namespace strix
