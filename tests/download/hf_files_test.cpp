// Naming rules without a network: -hf parsing, repo ids, safe paths, split sets, and
// which cached file a quant tag means (llama.cpp's rule).
#include "download/hf_files.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "download/hf.h"
#include "download/hf_cache.h"

namespace strix::download {
namespace {

TEST(HfArgs, ParsesRepoTagFileAndToken) {
  unsetenv("HF_TOKEN");
  HfRequest r = parse_hf_arg("bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M", "", "");
  EXPECT_EQ(r.repo, "bartowski/Llama-3.2-1B-Instruct-GGUF");
  EXPECT_EQ(r.tag, "Q4_K_M");
  EXPECT_EQ(r.file, "");
  EXPECT_EQ(r.token, "");
  r = parse_hf_arg("ggml-org/models", "tinyllamas/stories260K.gguf", "hf_abc");
  EXPECT_EQ(r.repo, "ggml-org/models");
  EXPECT_EQ(r.tag, "");
  EXPECT_EQ(r.file, "tinyllamas/stories260K.gguf");
  EXPECT_EQ(r.token, "hf_abc");
}

TEST(HfArgs, TokenFallsBackToHfTokenVariable) {
  setenv("HF_TOKEN", "hf_from_env", 1);
  EXPECT_EQ(parse_hf_arg("a/b", "", "").token, "hf_from_env");
  EXPECT_EQ(parse_hf_arg("a/b", "", "hf_flag").token, "hf_flag");  // the flag wins
  unsetenv("HF_TOKEN");
}

TEST(HfArgs, RefusesMalformedInput) {
  for (const char* bad : {"", "noslash", "a/b/c", "/b", "a/", "a/b:", "a/b:Q4 K", "../x", "a/..", "a b/c", "a/b:x:y"}) {
    EXPECT_THROW(parse_hf_arg(bad, "", ""), Error) << bad;
  }
  for (const char* bad : {"/abs.gguf", "../up.gguf", "a/../b.gguf", "a//b.gguf", "a\\b.gguf", "./x.gguf"}) {
    EXPECT_THROW(parse_hf_arg("a/b", bad, ""), Error) << bad;
  }
}

TEST(HfFiles, RepoIdRule) {
  EXPECT_TRUE(is_valid_repo_id("ggml-org/models"));
  EXPECT_TRUE(is_valid_repo_id("unsloth/Qwen3-0.6B-GGUF"));
  EXPECT_FALSE(is_valid_repo_id("a--/b"));
  EXPECT_FALSE(is_valid_repo_id("a/b."));
  EXPECT_FALSE(is_valid_repo_id(".a/b"));
  EXPECT_FALSE(is_valid_repo_id("a/.."));
  EXPECT_FALSE(is_valid_repo_id(std::string(300, 'a') + "/b"));
}

TEST(HfFiles, SplitSetNamesEveryPart) {
  EXPECT_EQ(split_set_files("Q4/m-Q4_K_M-00001-of-00003.gguf"),
            (std::vector<std::string>{"Q4/m-Q4_K_M-00001-of-00003.gguf", "Q4/m-Q4_K_M-00002-of-00003.gguf",
                                      "Q4/m-Q4_K_M-00003-of-00003.gguf"}));
  // any part names the whole set, first part first
  EXPECT_EQ(split_set_files("m-00002-of-00002.gguf").front(), "m-00001-of-00002.gguf");
  EXPECT_EQ(split_set_files("model-Q8_0.gguf"), std::vector<std::string>{"model-Q8_0.gguf"});
  EXPECT_EQ(split_set_files("m-0001-of-0003.gguf"), std::vector<std::string>{"m-0001-of-0003.gguf"});
}

TEST(HfFiles, TagPicksAmongCachedFilesAsLlamaCpp) {
  const std::vector<std::string> files = {"README.md",
                                          "mmproj-Q8_0.gguf",
                                          "m-Q8_0.gguf",
                                          "m-Q4_K_M.gguf",
                                          "m.imatrix.gguf",
                                          "Q2_K/m-Q2_K-00002-of-00002.gguf",
                                          "Q2_K/m-Q2_K-00001-of-00002.gguf"};
  EXPECT_EQ(pick_model_file(files, "latest"), "m-Q4_K_M.gguf");
  EXPECT_EQ(pick_model_file(files, ""), "m-Q4_K_M.gguf");
  EXPECT_EQ(pick_model_file(files, "q8_0"), "m-Q8_0.gguf");  // any case, never the mmproj
  EXPECT_EQ(pick_model_file(files, "Q2_K"), "Q2_K/m-Q2_K-00001-of-00002.gguf");
  EXPECT_EQ(pick_model_file(files, "Q5_K_M"), "");
  EXPECT_EQ(pick_model_file({"only-f16.gguf", "mmproj-f16.gguf"}, "latest"), "only-f16.gguf");
  EXPECT_EQ(pick_model_file({"mmproj-f16.gguf"}, "latest"), "");
}

TEST(HfCache, DirFollowsHuggingfaceHubOrder) {
  for (const char* v : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"}) unsetenv(v);
  const std::string home = std::getenv("HOME") ? std::getenv("HOME") : "";
  setenv("HOME", "/h", 1);
  EXPECT_EQ(hf_cache_dir(), "/h/.cache/huggingface/hub");
  setenv("XDG_CACHE_HOME", "/x", 1);
  EXPECT_EQ(hf_cache_dir(), "/x/huggingface/hub");
  setenv("HF_HOME", "/hf", 1);
  EXPECT_EQ(hf_cache_dir(), "/hf/hub");
  setenv("HUGGINGFACE_HUB_CACHE", "/old", 1);
  EXPECT_EQ(hf_cache_dir(), "/old");
  setenv("HF_HUB_CACHE", "/new", 1);
  EXPECT_EQ(hf_cache_dir(), "/new");
  for (const char* v : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"}) unsetenv(v);
  setenv("HOME", home.c_str(), 1);
  // huggingface_hub's folder name for a repo
  EXPECT_EQ(HfRepoCache("/c", "ggml-org/models").dir(), "/c/models--ggml-org--models");
}

}  // namespace
}  // namespace strix::download
