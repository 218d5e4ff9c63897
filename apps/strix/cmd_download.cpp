// strix download: fetch a model from the Hugging Face hub into the hub cache
// (src/download/) and print its local path, as `-hf` does before a run.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "apps/strix/commands.h"
#include "core/error.h"
#include "download/hf.h"

namespace strix::app {

namespace {

const char* kUsage =
    "usage: strix download -hf USER/REPO[:QUANT] [-hff FILE] [--hf-token TOKEN] [--offline]\n"
    "\n"
    "Downloads a GGUF model from the Hugging Face hub (as llama.cpp's -hf) into the hub\n"
    "cache and prints the local path of its first file.\n"
    "\n"
    "  -hf,  --hf-repo USER/REPO[:QUANT]  the repo; QUANT (default \"latest\") picks the file\n"
    "                                     through the hub's manifest, e.g. :Q4_K_M\n"
    "  -hff, --hf-file FILE               a file of the repo by path (QUANT is then ignored)\n"
    "  -hft, --hf-token TOKEN             token for private or gated repos (default: $HF_TOKEN)\n"
    "  --offline                          use the cache only (as HF_HUB_OFFLINE=1)\n"
    "\n"
    "Split models (NAME-00001-of-0000N.gguf) download every part. Multimodal projector\n"
    "files (mmproj) are ignored: Strix runs text models only.\n"
    "Cache: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub (shared with\n"
    "huggingface_hub and llama.cpp). HF_ENDPOINT selects another hub.\n";

}  // namespace

int cmd_download(int argc, char** argv) {
  std::string hf, hff, token;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(a + " needs a value (see `strix download -h`)");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "-hf" || a == "-hfr" || a == "--hf-repo") {
      hf = value();
    } else if (a == "-hff" || a == "--hf-file") {
      hff = value();
    } else if (a == "-hft" || a == "--hf-token") {
      token = value();
    } else if (a == "--offline") {
      setenv("HF_HUB_OFFLINE", "1", 1);
    } else {
      throw Error("unknown argument '" + a + "' (see `strix download -h`)");
    }
  }
  if (hf.empty()) throw Error("strix download needs -hf USER/REPO[:QUANT] (see `strix download -h`)");
  const std::string path = download::resolve_model(download::parse_hf_arg(hf, hff, token));
  std::printf("%s\n", path.c_str());
  return 0;
}

}  // namespace strix::app
