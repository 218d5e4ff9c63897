#include "sampling/rng.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace strix::sampling {

uint32_t resolve_seed(uint32_t seed) {
  if (seed != kDefaultSeed) return seed;
  std::random_device rd;
  if (rd.entropy() == 0) {
    return static_cast<uint32_t>(std::chrono::system_clock::now().time_since_epoch().count());
  }
  return static_cast<uint32_t>(rd());
}

double canonical_double(std::mt19937& rng) {
  // generate_canonical<double, 53>: k = ceil(53 / 32) = 2 outputs, summed in
  // double with weights 1 and 2^32 (the second sum rounds), divided by 2^64.
  double sum = 0.0;
  double scale = 1.0;
  for (int k = 0; k < 2; ++k) {
    sum += static_cast<double>(rng()) * scale;
    scale *= 4294967296.0;
  }
  double r = sum / scale;
  if (r >= 1.0) r = std::nextafter(1.0, 0.0);
  return r;
}

float canonical_float(std::mt19937& rng) {
  float r = static_cast<float>(rng()) / 4294967296.0f;  // float(u) may round up to 2^32
  if (r >= 1.0f) r = std::nextafter(1.0f, 0.0f);
  return r;
}

int discrete_draw(const Candidates& cur, std::mt19937& rng, std::vector<double>& cum) {
  const size_t n = cur.size;
  if (n < 2) return 0;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(cur.data[i].p);
  cum.resize(n);
  double acc = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double q = static_cast<double>(cur.data[i].p) / sum;
    acc = i == 0 ? q : acc + q;
    cum[i] = acc;
  }
  cum[n - 1] = 1.0;
  const double u = canonical_double(rng);
  return static_cast<int>(std::lower_bound(cum.begin(), cum.end(), u) - cum.begin());
}

}  // namespace strix::sampling
