// IdForm (base/id_form.h): ids the clients make map to EventIds in the order the server sorts
// them, and back, checked against an independent order: the text's own byte order (ULIDs and
// UUIDs are written so that it is the order of their numbers).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "base/id_form.h"

namespace rw {
namespace {

const IdForm kUlid{IdForm::Kind::kUlid, false};
const IdForm kUuid{IdForm::Kind::kUuidText, true};
const IdForm kBytes{IdForm::Kind::kUuidBytes, false};

TEST(IdForm, KnownIdsAreTheirNumbers) {
  // The ULID spec's example and its number (48 bits of milliseconds, then 80 random bits).
  const std::optional<EventId> u = ParseIdAs(kUlid, "01ARZ3NDEKTSV4RRFFQ69G5FAV");
  ASSERT_TRUE(u);
  EXPECT_EQ(static_cast<uint64_t>(*u >> 80), 1469922850259u);  // 2016-07-30T23:54:10.259Z (by Python)
  EXPECT_EQ(IdShown(kUlid, *u), "01ARZ3NDEKTSV4RRFFQ69G5FAV");
  EXPECT_EQ(IdSql(kUlid, *u), "'01ARZ3NDEKTSV4RRFFQ69G5FAV'");
  EXPECT_EQ(ParseIdAs(kUlid, "01arz3ndektsv4rrffq69g5fav"), u);  // Crockford is case-blind
  const std::optional<EventId> v = ParseIdAs(kUuid, "01932c07-209c-7d4d-b4a8-6f5b1a2e3c4d");
  ASSERT_TRUE(v);
  EXPECT_EQ(static_cast<int>((*v >> 76) & 15), 7);
  EXPECT_EQ(IdSql(kUuid, *v), "'01932c07-209c-7d4d-b4a8-6f5b1a2e3c4d'");
  const std::string bytes("\x01\x93\x2c\x07\x20\x9c\x7d\x4d\xb4\xa8\x6f\x5b\x1a\x2e\x3c\x4d", 16);
  EXPECT_EQ(ParseIdAs(kBytes, bytes), v);
  EXPECT_EQ(IdSql(kBytes, *v), "X'01932C07209C7D4DB4A86F5B1A2E3C4D'");
}

TEST(IdForm, WhatIsNotAnIdOfTheFormIsRefused) {
  EXPECT_FALSE(ParseIdAs(kUlid, "01ARZ3NDEKTSV4RRFFQ69G5FA"));    // 25 characters
  EXPECT_FALSE(ParseIdAs(kUlid, "01ARZ3NDEKTSV4RRFFQ69G5FAU"));   // U is not Crockford's
  EXPECT_FALSE(ParseIdAs(kUlid, "8ZZZZZZZZZZZZZZZZZZZZZZZZZ"));   // beyond 128 bits
  EXPECT_FALSE(ParseIdAs(kUlid, "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"));   // its highest bit: beyond EventId
  EXPECT_FALSE(ParseIdAs(kUuid, "01932c07209c-7d4d-b4a8-6f5b1a2e3c4d0"));
  EXPECT_FALSE(ParseIdAs(kUuid, "01932c07-209c-7d4d-b4a8-6f5b1a2e3c4g"));
  EXPECT_FALSE(ParseIdAs(kBytes, "short"));
  EXPECT_FALSE(ParseIdAs(IdForm{}, "01ARZ3NDEKTSV4RRFFQ69G5FAV"));
}

TEST(IdForm, TheFormIsFoundFromTheColumnAndOneOfItsIds) {
  EXPECT_EQ(IdFormOf("bigint", 0, std::nullopt), IdForm{});
  EXPECT_EQ(IdFormOf("varchar", 255, std::string("01ARZ3NDEKTSV4RRFFQ69G5FAV")), kUlid);
  EXPECT_EQ(IdFormOf("char", 36, std::string("01932c07-209c-7d4d-b4a8-6f5b1a2e3c4d")), kUuid);
  EXPECT_EQ(IdFormOf("char", 36, std::string("01932C07-209C-7D4D-B4A8-6F5B1A2E3C4D")),
            (IdForm{IdForm::Kind::kUuidText, false}));
  EXPECT_EQ(IdFormOf("binary", 16, std::nullopt), kBytes);
  EXPECT_EQ(IdFormOf("char", 26, std::nullopt), kUlid);  // an empty table: by its length
  EXPECT_FALSE(IdFormOf("varchar", 20, std::nullopt));
  EXPECT_FALSE(IdFormOf("varchar", 255, std::string("order-17")));
  EXPECT_FALSE(IdFormOf("double", 0, std::nullopt));
}

// Random ids in each form: the EventIds sort as the texts do, the space between two ids has
// ids of the form on both of its ends, and each id comes back as it was written.
TEST(IdForm, EventIdsSortAsTheServerSortsTheIds) {
  std::mt19937_64 rng(1717);
  for (const IdForm& f : {kUlid, kUuid, IdForm{IdForm::Kind::kUuidText, false}, kBytes}) {
    std::vector<std::string> texts;
    for (int i = 0; i < 2000; ++i) {
      // 48 bits of time (some equal), then random bits: as ULIDs and UUIDv7s are.
      const unsigned __int128 v = (static_cast<unsigned __int128>(1'700'000'000'000ULL + rng() % 5000) << 80) |
                                  (static_cast<unsigned __int128>(rng() & 0xFFFF) << 64) | rng();
      const std::string shown = IdShown(f, static_cast<EventId>(v));
      std::string held = shown;
      if (f.kind == IdForm::Kind::kUuidBytes) {
        held.clear();
        for (int b = 15; b >= 0; --b) held += static_cast<char>(static_cast<unsigned char>(v >> (8 * b)));
      }
      ASSERT_EQ(ParseIdAs(f, held), static_cast<EventId>(v)) << shown;
      texts.push_back(held);
    }
    std::sort(texts.begin(), texts.end());  // byte order: the server's under a binary or _ci collation
    for (size_t i = 1; i < texts.size(); ++i) {
      const EventId a = *ParseIdAs(f, texts[i - 1]), b = *ParseIdAs(f, texts[i]);
      EXPECT_LE(a, b);
      if (b > a + 1) {  // a hole's ends are ids of the form, inside it
        const std::string lo = IdShown(f, a + 1), hi = IdShown(f, b - 1);
        EXPECT_LE(IdShown(f, a), lo);
        EXPECT_LE(hi, IdShown(f, b));
      }
    }
  }
}

}  // namespace
}  // namespace rw
