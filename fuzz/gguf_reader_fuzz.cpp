// libFuzzer target: GgufFile::parse on arbitrary bytes must either succeed or
// throw strix::Error; never crash, never read out of bounds (built with ASan+UBSan).
//
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DSTRIX_FUZZ=ON \
//     -DSTRIX_TESTS=OFF -DSTRIX_BENCH=OFF -DSTRIX_WERROR=OFF
//   ninja -C build-fuzz gguf_reader_fuzz
//   STRIX_FUZZ_SEEDS_DIR=SEEDS build/tests/test_gguf --gtest_filter='GgufFuzzCorpus.*'
//   build-fuzz/fuzz/gguf_reader_fuzz -max_len=4096 CORPUS_DIR SEEDS
// (the seeds are written by the test from GgufWriter files; none is stored in the repository)
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "gguf/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto file = strix::GgufFile::parse(data, size, "fuzz.gguf");
    // Touch what a loader touches: every value's rendering, every tensor's bytes
    // (first and last, which must lie inside the input), the typed lookups.
    size_t sink = 0;
    for (const auto& kv : file->kvs()) sink += kv.value.to_display().size();
    for (const auto& t : file->tensors()) {
      if (t.nbytes == 0 || t.data < data || t.data + t.nbytes > data + size) __builtin_trap();
      sink += t.data[0] + t.data[t.nbytes - 1];
      if (file->find_tensor(t.name) == nullptr) __builtin_trap();
    }
    try {
      sink += file->architecture().size();
      sink += file->get_u64("general.alignment", 32);
    } catch (const strix::Error&) {
    }
    volatile size_t keep = sink;
    (void)keep;
  } catch (const strix::Error&) {
  }
  return 0;
}
