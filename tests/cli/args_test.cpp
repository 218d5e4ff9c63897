// The flag table in-process: llama.cpp's defaults, value syntax, env vars and
// errors (the subprocess tests in run_test.cpp cover the binary's behaviour).
#include "cli/args.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"

namespace {

using strix::cli::CliParams;

CliParams parse(std::vector<std::string> args) {
  args.insert(args.begin(), "strix");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  CliParams p;
  strix::cli::parse_args(static_cast<int>(argv.size()), argv.data(), p);
  return p;
}

// The defaults llama.cpp documents (common.h / arg.cpp), written out here
// rather than read from our own struct.
TEST(CliArgs, defaults_are_llama_cpp_defaults) {
  const CliParams p = parse({});
  EXPECT_EQ(p.n_predict, -1);
  EXPECT_EQ(p.n_batch, 2048);
  EXPECT_EQ(p.n_ubatch, 512);
  EXPECT_EQ(p.n_keep, 0);
  EXPECT_TRUE(p.escape);
  EXPECT_EQ(p.conversation, -1);
  EXPECT_FLOAT_EQ(p.sampling.temp, 0.8f);
  EXPECT_EQ(p.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(p.sampling.top_p, 0.95f);
  EXPECT_FLOAT_EQ(p.sampling.min_p, 0.05f);
  EXPECT_FLOAT_EQ(p.sampling.penalty_repeat, 1.0f);
  EXPECT_EQ(p.sampling.penalty_last_n, 64);
  EXPECT_EQ(p.sampling.seed, 0xFFFFFFFFu);
  EXPECT_FLOAT_EQ(p.sampling.dry_base, 1.75f);
  EXPECT_EQ(p.sampling.dry_allowed_length, 2);
  EXPECT_EQ(p.sampling.dry_penalty_last_n, -1);
  EXPECT_EQ(p.sampling.dry_sequence_breakers, (std::vector<std::string>{"\n", ":", "\"", "*"}));
  EXPECT_FLOAT_EQ(p.sampling.mirostat_tau, 5.0f);
  EXPECT_FLOAT_EQ(p.sampling.mirostat_eta, 0.1f);
  EXPECT_FLOAT_EQ(p.sampling.xtc_threshold, 0.1f);
  EXPECT_FLOAT_EQ(p.sampling.top_n_sigma, -1.0f);
  EXPECT_FLOAT_EQ(p.sampling.adaptive_target, -1.0f);
  EXPECT_FLOAT_EQ(p.sampling.adaptive_decay, 0.9f);
  EXPECT_EQ(p.n_ctx, 0) << "common_params::n_ctx: 0 = the model's training context";
  EXPECT_EQ(p.reasoning_budget, -1);
  EXPECT_TRUE(p.use_jinja);
}

TEST(CliArgs, long_and_short_spellings_fill_the_same_fields) {
  const CliParams a =
      parse({"-m", "x.gguf", "-n", "7",    "-c",   "256",      "-b",  "64",   "-ub", "32", "-t",   "3",
             "-s", "42",     "-r", "STOP", "-sys", "be brief", "-st", "-cnv", "-fa", "on", "-ngl", "99"});
  const CliParams b = parse({"--model",         "x.gguf",   "--n-predict",      "7",
                             "--ctx-size",      "256",      "--batch-size",     "64",
                             "--ubatch-size",   "32",       "--threads",        "3",
                             "--seed",          "42",       "--reverse-prompt", "STOP",
                             "--system-prompt", "be brief", "--single-turn",    "--conversation",
                             "--flash-attn",    "on",       "--n-gpu-layers",   "99"});
  for (const CliParams* p : {&a, &b}) {
    EXPECT_EQ(p->model, "x.gguf");
    EXPECT_EQ(p->n_predict, 7);
    EXPECT_EQ(p->n_ctx, 256);
    EXPECT_EQ(p->n_batch, 64);
    EXPECT_EQ(p->n_ubatch, 32);
    EXPECT_EQ(p->n_threads, 3);
    EXPECT_EQ(p->sampling.seed, 42u);
    EXPECT_EQ(p->antiprompt, std::vector<std::string>{"STOP"});
    EXPECT_EQ(p->system_prompt, "be brief");
    EXPECT_TRUE(p->single_turn);
    EXPECT_EQ(p->conversation, 1);
    EXPECT_EQ(p->flash_attn, "on");
    EXPECT_EQ(p->n_gpu_layers, "99");
  }
  EXPECT_EQ(parse({"-no-cnv"}).conversation, 0);
  EXPECT_EQ(parse({"--no_conversation"}).conversation, 0) << "llama.cpp reads '_' as '-' in long flags";
}

TEST(CliArgs, sampling_flags) {
  const CliParams p = parse({"--temp",
                             "-1",
                             "--top-k",
                             "5",
                             "--top-p",
                             "0.5",
                             "--min-p",
                             "0.1",
                             "--typical",
                             "0.9",
                             "--repeat-penalty",
                             "1.1",
                             "--repeat-last-n",
                             "128",
                             "--presence-penalty",
                             "0.2",
                             "--frequency-penalty",
                             "0.3",
                             "--dry-multiplier",
                             "0.8",
                             "--dry-base",
                             "0.5",
                             "--dry-allowed-length",
                             "3",
                             "--dry-penalty-last-n",
                             "16",
                             "--xtc-probability",
                             "0.4",
                             "--xtc-threshold",
                             "0.2",
                             "--top-nsigma",
                             "1.5",
                             "--dynatemp-range",
                             "0.3",
                             "--dynatemp-exp",
                             "1.2",
                             "--mirostat",
                             "2",
                             "--mirostat-lr",
                             "0.2",
                             "--mirostat-ent",
                             "4",
                             "--ignore-eos",
                             "--logit-bias",
                             "15043+1",
                             "-l",
                             "7-2.5",
                             "--grammar",
                             "root ::= \"a\""});
  EXPECT_FLOAT_EQ(p.sampling.temp, 0.0f) << "negative temperatures clamp to 0 (greedy)";
  EXPECT_EQ(p.sampling.top_k, 5);
  EXPECT_FLOAT_EQ(p.sampling.top_p, 0.5f);
  EXPECT_FLOAT_EQ(p.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(p.sampling.typ_p, 0.9f);
  EXPECT_FLOAT_EQ(p.sampling.penalty_repeat, 1.1f);
  EXPECT_EQ(p.sampling.penalty_last_n, 128);
  EXPECT_EQ(p.sampling.n_prev, 128) << "n_prev grows with --repeat-last-n";
  EXPECT_FLOAT_EQ(p.sampling.penalty_present, 0.2f);
  EXPECT_FLOAT_EQ(p.sampling.penalty_freq, 0.3f);
  EXPECT_FLOAT_EQ(p.sampling.dry_multiplier, 0.8f);
  EXPECT_FLOAT_EQ(p.sampling.dry_base, 1.75f) << "llama.cpp ignores a DRY base below 1";
  EXPECT_EQ(p.sampling.dry_allowed_length, 3);
  EXPECT_EQ(p.sampling.dry_penalty_last_n, 16);
  EXPECT_FLOAT_EQ(p.sampling.xtc_probability, 0.4f);
  EXPECT_FLOAT_EQ(p.sampling.xtc_threshold, 0.2f);
  EXPECT_FLOAT_EQ(p.sampling.top_n_sigma, 1.5f);
  EXPECT_FLOAT_EQ(p.sampling.dynatemp_range, 0.3f);
  EXPECT_FLOAT_EQ(p.sampling.dynatemp_exponent, 1.2f);
  EXPECT_EQ(p.sampling.mirostat, 2);
  EXPECT_FLOAT_EQ(p.sampling.mirostat_eta, 0.2f);
  EXPECT_FLOAT_EQ(p.sampling.mirostat_tau, 4.0f);
  EXPECT_TRUE(p.sampling.ignore_eos);
  ASSERT_EQ(p.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(p.sampling.logit_bias[0], (std::pair<int32_t, float>{15043, 1.0f}));
  EXPECT_EQ(p.sampling.logit_bias[1], (std::pair<int32_t, float>{7, -2.5f}));
  EXPECT_EQ(p.sampling.grammar, "root ::= \"a\"");
  EXPECT_EQ(parse({"-s", "-1"}).sampling.seed, 0xFFFFFFFFu);
}

TEST(CliArgs, sampler_order_flags) {
  using strix::sampling::Stage;
  EXPECT_EQ(parse({"--samplers", "top_k;temperature"}).sampling.stages,
            (std::vector<Stage>{Stage::kTopK, Stage::kTemperature}));
  EXPECT_EQ(parse({"--sampling-seq", "kt"}).sampling.stages, (std::vector<Stage>{Stage::kTopK, Stage::kTemperature}));
  EXPECT_THROW(parse({"--samplers", "top_k;bogus"}), strix::Error);
  EXPECT_EQ(parse({"--samplers", "top_k;adaptive_p"}).sampling.stages,
            (std::vector<Stage>{Stage::kTopK, Stage::kAdaptiveP}));
  EXPECT_EQ(parse({"--sampling-seq", "ka"}).sampling.stages, (std::vector<Stage>{Stage::kTopK, Stage::kAdaptiveP}));
  const CliParams a = parse({"--adaptive-target", "0.4", "--adaptive-decay", "0.5"});
  EXPECT_FLOAT_EQ(a.sampling.adaptive_target, 0.4f);
  EXPECT_FLOAT_EQ(a.sampling.adaptive_decay, 0.5f);
  EXPECT_THROW(parse({"--adaptive-target", "x"}), strix::Error);
}

TEST(CliArgs, chat_template_jinja_and_reasoning_budget) {
  EXPECT_FALSE(parse({"--no-jinja"}).use_jinja);
  EXPECT_TRUE(parse({"--no-jinja", "--jinja"}).use_jinja);
  EXPECT_EQ(parse({"--reasoning-budget", "0"}).reasoning_budget, 0);
  EXPECT_EQ(parse({"--reasoning-budget", "-1"}).reasoning_budget, -1);
  EXPECT_EQ(parse({"--reasoning-budget", "64"}).reasoning_budget, 64);
  EXPECT_EQ(parse({"--reasoning-budget-message", "Enough."}).reasoning_budget_message, "Enough.");
  EXPECT_THROW(parse({"--reasoning-budget", "-2"}), strix::Error);
  EXPECT_EQ(parse({"--chat-template", "llama3"}).chat_template, "llama3");
  // the help lists every built-in name, as llama.cpp's does
  const std::string help = strix::cli::usage_text();
  for (const char* name : {"chatml", "llama3", "gemma", "gpt-oss", "solar-open", "pangu-embedded"}) {
    EXPECT_NE(help.find(name), std::string::npos) << name;
  }
}

TEST(CliArgs, dry_sequence_breakers_replace_the_defaults) {
  EXPECT_EQ(parse({"--dry-sequence-breaker", "a", "--dry-sequence-breaker", "b"}).sampling.dry_sequence_breakers,
            (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(parse({"--dry-sequence-breaker", "none"}).sampling.dry_sequence_breakers.empty());
  EXPECT_EQ(parse({"--dry-sequence-breaker", "\\n"}).sampling.dry_sequence_breakers, std::vector<std::string>{"\n"});
}

TEST(CliArgs, escapes_are_processed_unless_no_escape) {
  EXPECT_EQ(parse({"-p", "a\\nb\\t\\\\c\\x41"}).prompt, "a\nb\t\\cA");
  EXPECT_EQ(parse({"--no-escape", "-p", "a\\nb"}).prompt, "a\\nb");
  EXPECT_EQ(parse({"-r", "x\\n"}).antiprompt, std::vector<std::string>{"x\n"});
  EXPECT_EQ(strix::cli::process_escapes("end\\"), "end\\") << "a trailing backslash stays";
}

TEST(CliArgs, in_prefix_and_suffix_turn_the_chat_template_off) {
  const CliParams p = parse({"--in-prefix", "Q: ", "--in-suffix", "A:"});
  EXPECT_FALSE(p.enable_chat_template);
  EXPECT_EQ(p.input_prefix, "Q: ");
  EXPECT_TRUE(parse({}).enable_chat_template);
}

TEST(CliArgs, environment_variables_and_command_line_precedence) {
  setenv("LLAMA_ARG_N_PREDICT", "11", 1);
  setenv("LLAMA_ARG_CTX_SIZE", "333", 1);
  setenv("LLAMA_ARG_MODEL", "env.gguf", 1);
  setenv("LLAMA_ARG_TOP_K", "9", 1);
  const CliParams a = parse({});
  const CliParams b = parse({"-n", "5"});
  unsetenv("LLAMA_ARG_N_PREDICT");
  unsetenv("LLAMA_ARG_CTX_SIZE");
  unsetenv("LLAMA_ARG_MODEL");
  unsetenv("LLAMA_ARG_TOP_K");
  EXPECT_EQ(a.n_predict, 11);
  EXPECT_EQ(a.n_ctx, 333);
  EXPECT_EQ(a.model, "env.gguf");
  EXPECT_EQ(a.sampling.top_k, 9);
  EXPECT_EQ(b.n_predict, 5) << "the command line wins over the environment";
  setenv("LLAMA_ARG_N_PREDICT", "eleven", 1);
  EXPECT_THROW(parse({}), strix::Error);
  unsetenv("LLAMA_ARG_N_PREDICT");
}

TEST(CliArgs, bad_input_is_an_error_naming_the_flag) {
  auto message = [](std::vector<std::string> args) -> std::string {
    try {
      parse(std::move(args));
    } catch (const strix::Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(message({"--frobnicate"}).find("--frobnicate"), std::string::npos);
  EXPECT_NE(message({"-n"}).find("-n"), std::string::npos) << "missing value";
  EXPECT_NE(message({"-n", "12x"}).find("12x"), std::string::npos);
  EXPECT_NE(message({"-c", "-5"}).find("-c"), std::string::npos);
  EXPECT_NE(message({"--temp", "hot"}).find("--temp"), std::string::npos);
  EXPECT_NE(message({"--logit-bias", "15043*2"}).find("15043*2"), std::string::npos);
  EXPECT_NE(message({"--logit-bias", "abc+1"}).find("abc+1"), std::string::npos);
  EXPECT_NE(message({"--color", "purple"}).find("purple"), std::string::npos);
  EXPECT_NE(message({"-fa", "maybe"}).find("maybe"), std::string::npos);
  EXPECT_NE(message({"--mirostat", "3"}).find("--mirostat"), std::string::npos);
  EXPECT_NE(message({"--repeat-last-n", "-2"}).find("-2"), std::string::npos);
  EXPECT_NE(message({"-s", "seedy"}).find("seedy"), std::string::npos);
  EXPECT_NE(message({"-f", "/nonexistent/prompt.txt"}).find("/nonexistent/prompt.txt"), std::string::npos);
  EXPECT_NE(message({"--reasoning-format", "weird"}).find("weird"), std::string::npos);
  EXPECT_NE(message({"-ctk", "q7"}).find("q7"), std::string::npos);
}

TEST(CliArgs, unimplemented_is_a_refusal_naming_it) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"-ctk", "q8_0"}, {"-ctv", "q4_0"}, {"--lora", "x.gguf"}, {"-i"}, {"-sp"}}) {
    try {
      parse(args);
      ADD_FAILURE() << args[0] << " was accepted";
    } catch (const strix::Refusal& e) {
      EXPECT_NE(std::string(e.what()).find(args[0]), std::string::npos) << e.what();
    }
  }
}

TEST(CliArgs, every_row_has_names_help_and_a_handler) {
  for (const auto& o : strix::cli::options()) {
    ASSERT_FALSE(o.names.empty());
    EXPECT_FALSE(o.help.empty()) << o.names[0];
    EXPECT_TRUE(static_cast<bool>(o.handler)) << o.names[0];
  }
}

}  // namespace
