#include <gtest/gtest.h>

#include "core/error.h"
#include "quant/types.h"
#include "ref/reference.h"

namespace strix {

// Every id libggml knows (and every id it does not) agrees with our table.
TEST(QuantTypes, table_matches_libggml_sizes) {
  const auto& g = ref::LibGgml::get();
  int known = 0;
  for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
    const TypeTraits* t = type_traits(id);
    const int64_t bs = g.blck_size(static_cast<int>(id));
    if (t == nullptr) {
      EXPECT_EQ(bs, 0) << "libggml knows type id " << id << " (" << g.type_name(static_cast<int>(id)) << ")";
      continue;
    }
    ++known;
    EXPECT_STREQ(t->name, g.type_name(static_cast<int>(id)));
    EXPECT_EQ(t->block_size, bs) << t->name;
    EXPECT_EQ(t->type_size, g.type_size(static_cast<int>(id))) << t->name;
  }
  EXPECT_EQ(known, 35);
}

TEST(QuantTypes, refuses_unknown_type_id_by_number) {
  EXPECT_EQ(type_traits(4), nullptr);
  EXPECT_EQ(type_traits(43), nullptr);
  try {
    type_traits_checked(44);
    FAIL();
  } catch (const Refusal& e) {
    EXPECT_NE(std::string(e.what()).find("44"), std::string::npos);
  }
}

TEST(QuantTypes, names_round_trip) {
  EXPECT_EQ(type_from_name("Q4_K"), GgmlType::Q4_K);
  EXPECT_EQ(type_from_name("iq2_xxs"), GgmlType::IQ2_XXS);
  EXPECT_FALSE(type_from_name("q4_2").has_value());
  EXPECT_EQ(row_size(GgmlType::Q4_K, 512), 288u);
  EXPECT_THROW(row_size(GgmlType::Q4_K, 100), Error);
}

}  // namespace strix
