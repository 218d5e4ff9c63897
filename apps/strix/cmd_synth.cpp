// strix synth: write a tiny synthetic model of an architecture (src/synth/).
#include <cstdio>
#include <string>
#include <vector>

#include "apps/strix/commands.h"
#include "synth/synth.h"

namespace strix::app {

int cmd_synth(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const auto opts = synth::parse_synth_args(args);
  if (!opts) {
    std::fputs(synth::synth_usage().c_str(), stdout);
    return 0;
  }
  const synth::SynthResult r = synth::synth_write(*opts);
  std::printf("vocab: %s (%lld tokens)\n", r.vocab_source.c_str(), static_cast<long long>(r.n_vocab));
  std::printf("wrote %s: %s, %zu tensors, %llu parameters, file_type %u\n", opts->out.c_str(), opts->arch.c_str(),
              r.n_tensors, static_cast<unsigned long long>(r.n_params), r.file_type);
  return 0;
}

}  // namespace strix::app
