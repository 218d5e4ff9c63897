// The random numbers of libllama's samplers: std::mt19937 seeded with the
// sampler's seed (a fresh one for LLAMA_DEFAULT_SEED), and the three ways its
// samplers turn the generator's 32-bit outputs into draws, written out here so
// that they do not depend on the standard library version Strix is built with:
//  - uniform_real_distribution<double>(0, 1) (dist): libstdc++'s
//    generate_canonical<double, 53> = (u1 + u2 * 2^32) / 2^64 in double, two
//    outputs per draw, nudged below 1;
//  - uniform_real_distribution<float>(0, 1) (xtc): one output, float(u) / 2^32;
//  - discrete_distribution<int> (mirostat): probabilities normalized in double,
//    cumulated, the last set to 1, then lower_bound of one canonical double.
//    With fewer than two weights it returns 0 and draws nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "sampling/candidates.h"

namespace strix::sampling {

constexpr uint32_t kDefaultSeed = 0xFFFFFFFFu;  // LLAMA_DEFAULT_SEED

// get_rng_seed: seed itself, or for kDefaultSeed a random one (random_device,
// or the system clock when random_device is not a true source).
uint32_t resolve_seed(uint32_t seed);

double canonical_double(std::mt19937& rng);
float canonical_float(std::mt19937& rng);

// llama_sample_dist: std::discrete_distribution over cur.data[i].p. cum is
// scratch space (the cumulative probabilities).
int discrete_draw(const Candidates& cur, std::mt19937& rng, std::vector<double>& cum);

}  // namespace strix::sampling
