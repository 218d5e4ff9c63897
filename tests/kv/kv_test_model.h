// The small synthetic models of the KV tests: `arch` at 128 wide, 4 heads
// (2 KV), 2 layers (gemma3: 6, one of them global), written once per process
// to the temp directory by `strix synth`'s writer.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "synth/synth.h"

namespace strix {

inline std::string kv_test_model(const std::string& arch) {
  const auto p =
      std::filesystem::temp_directory_path() / ("strix-kv-" + arch + "-" + std::to_string(::getpid()) + ".gguf");
  if (!std::filesystem::exists(p)) {
    synth::SynthOptions o;
    o.arch = arch;
    o.n_layer = arch == "gemma3" ? 6 : 2;
    o.n_embd = 128;
    o.n_head = 4;
    o.n_head_kv = 2;
    o.out = p.string();
    synth::synth_write(o);
  }
  return p.string();
}

}  // namespace strix
