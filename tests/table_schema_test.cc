// How a described table is stored: the DDL, the hash of text keys, the merge rules.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include "base/sha256.h"
#include "stages/db/row_writer.h"
#include "stages/db/table_schema.h"
#include "tests/text_sink.h"

namespace rw {
namespace {

const TableSpec kUrlTable{"visits_per_post_per_day",
                          {{"uri", ColumnType::kText}, {"date", ColumnType::kDate},
                           {"count", ColumnType::kUInt64, Merge::kAdd}}};

TEST(TableSchema, TheUrlTablesKeepTheBlogsLayout) {
  // The layout the URL tables always had: existing live tables and the application's own
  // inserts (which rely on the hash column's DEFAULT) keep working.
  EXPECT_EQ(table_schema::CreateTableSql(kUrlTable, "t"),
            "CREATE TABLE `t` (`uri` MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, "
            "`date` DATE NOT NULL, `uri_hash` BINARY(32) NOT NULL DEFAULT (UNHEX(SHA2(`uri`, 256))), "
            "`count` BIGINT UNSIGNED NOT NULL, UNIQUE KEY `date_uri` (`date`, `uri_hash`)) "
            "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin");
  EXPECT_EQ(table_schema::StoredColumnList(kUrlTable), "`uri`, `date`, `uri_hash`, `count`");
  EXPECT_EQ(table_schema::MergeClause(kUrlTable), " ON DUPLICATE KEY UPDATE `count` = `count` + VALUES(`count`)");
}

TEST(TableSchema, AKeyWithoutTextIsThePrimaryKey) {
  const TableSpec spec{"m", {{"customer", ColumnType::kInt64}, {"month", ColumnType::kDate},
                             {"total", ColumnType::kDecimal, Merge::kAdd, 18, 2},
                             {"last_at", ColumnType::kDateTime, Merge::kMax}}};
  EXPECT_EQ(table_schema::HashColumn(spec), "");
  EXPECT_EQ(table_schema::CreateTableSql(spec, "m"),
            "CREATE TABLE `m` (`customer` BIGINT NOT NULL, `month` DATE NOT NULL, `total` DECIMAL(18,2) NOT NULL, "
            "`last_at` DATETIME NULL, PRIMARY KEY (`customer`, `month`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 "
            "COLLATE=utf8mb4_bin");
  EXPECT_EQ(table_schema::MergeClause(spec),
            " ON DUPLICATE KEY UPDATE `total` = `total` + VALUES(`total`), `last_at` = "
            "COALESCE(GREATEST(`last_at`, VALUES(`last_at`)), `last_at`, VALUES(`last_at`))");
}

// Issue 38, part 2: declared types make the columns; a text key of a declared length is the
// PRIMARY KEY itself (no hash), and takes the database's collation unless it declares one.
Storage Declared(const std::string& sql, uint32_t length = 0, bool bytes = false) {
  Storage s;
  s.sql = sql;
  s.length = length;
  s.bytes = bytes;
  return s;
}

TEST(TableSchema, DeclaredTypesMakeTheColumnsAndAKeyAnIndexHoldsIsThePrimaryKey) {
  Storage varchar64 = Declared("VARCHAR(64)", 64);
  Storage int_unsigned = Declared("INT UNSIGNED");
  int_unsigned.min = 0;
  int_unsigned.max = 4294967295;
  Storage code = Declared("CHAR(2)", 2);
  code.collation = "utf8mb4_general_ci";
  const TableSpec spec{"m", {{"account_id", ColumnType::kText, Merge::kKey, 0, 0, varchar64},
                             {"n", ColumnType::kInt64, Merge::kAdd, 0, 0, int_unsigned},
                             {"country", ColumnType::kText, Merge::kLast, 0, 0, code}}};
  EXPECT_EQ(table_schema::HashColumn(spec), "");
  EXPECT_EQ(table_schema::CreateTableSql(spec, "m"),
            "CREATE TABLE `m` (`account_id` VARCHAR(64) NOT NULL, `n` INT UNSIGNED NOT NULL, "
            "`country` CHAR(2) COLLATE utf8mb4_general_ci NULL, `country__id` DECIMAL(39,0) NULL, "
            "PRIMARY KEY (`account_id`)) ENGINE=InnoDB");
  EXPECT_EQ(table_schema::StoredColumnList(spec), "`account_id`, `n`, `country`, `country__id`");
  EXPECT_TRUE(table_schema::KeyComparedByCollation(spec, "utf8mb4_general_ci"));
  // utf8mb4_bin pads with spaces ('c1' and 'c1 ' are one key): only a NO PAD binary one keeps
  // every byte apart (issue 51 item 12).
  EXPECT_TRUE(table_schema::KeyComparedByCollation(spec, "utf8mb4_bin"));
  EXPECT_FALSE(table_schema::KeyComparedByCollation(spec, "utf8mb4_nopad_bin"));
  // A key longer than an index holds (utf8mb4: 4 bytes a character) keeps the hash.
  TableSpec wide = spec;
  wide.columns[0].storage = Declared("VARCHAR(800)", 800);
  EXPECT_EQ(table_schema::HashColumn(wide), "account_id_hash");
  // Bytes: no collation, the database's or any.
  TableSpec bytes = spec;
  bytes.columns[0].storage = Declared("BINARY(16)", 16, true);
  EXPECT_EQ(table_schema::HashColumn(bytes), "");
  EXPECT_FALSE(table_schema::KeyComparedByCollation(bytes, "utf8mb4_general_ci"));
}

// first and last keep the id of their event right after them (the merge compares ids;
// the behaviour against the server is tested by FirstLast.FollowWithALateCommitKeepsIdOrder).
TEST(TableSchema, FirstAndLastAreStoredWithTheIdOfTheirEvent) {
  const TableSpec spec{"m", {{"customer", ColumnType::kInt64},
                             {"first_sku", ColumnType::kText, Merge::kFirst},
                             {"n", ColumnType::kInt64, Merge::kAdd},
                             {"status", ColumnType::kText, Merge::kLast}}};
  EXPECT_EQ(table_schema::IdColumn(spec.columns[1]), "first_sku__id");
  EXPECT_EQ(table_schema::IdColumn(spec.columns[2]), "");
  EXPECT_EQ(table_schema::StoredColumnList(spec), "`customer`, `first_sku`, `first_sku__id`, `n`, `status`, `status__id`");
  const std::string ddl = table_schema::CreateTableSql(spec, "m");
  EXPECT_NE(ddl.find("`first_sku__id` DECIMAL(39,0) NULL, `n` BIGINT NOT NULL"), std::string::npos) << ddl;
  EXPECT_NE(ddl.find("`status__id` DECIMAL(39,0) NULL, PRIMARY KEY (`customer`)"), std::string::npos) << ddl;
  // The id is assigned before its value, which then follows the id that won.
  const std::string merge = table_schema::MergeClause(spec);
  EXPECT_LT(merge.find("`status__id` = IF("), merge.find("`status` = IF("));
  EXPECT_LT(merge.find("`first_sku__id` = IF("), merge.find("`first_sku` = IF("));
}

TEST(TableSchema, TheWriterAddsTheHashOfTextKeysAfterTheLastKey) {
  TsvBuilder tsv(kUrlTable);
  tsv.Text("/a\tb");
  tsv.Date(0);
  tsv.Int(3);
  tsv.EndRow();
  tsv.Text("/c");
  tsv.Date(1);
  tsv.Int(4);
  tsv.EndRow();
  const Sha256Digest a = Sha256("/a\tb"), c = Sha256("/c");
  TsvBuilder expected;  // no spec: no hash; the digests escaped as any bytes are
  expected.Text("/a\tb");
  expected.Date(0);
  expected.Text(std::string_view(reinterpret_cast<const char*>(a.data()), a.size()));
  expected.Int(3);
  expected.EndRow();
  expected.Text("/c");
  expected.Date(1);
  expected.Text(std::string_view(reinterpret_cast<const char*>(c.data()), c.size()));
  expected.Int(4);
  expected.EndRow();
  EXPECT_EQ(tsv.Take(), expected.Take());
}

// LOAD DATA's escapes, on texts with each special byte at every position of the first
// words (the writer passes over 8 bytes at a time), against a byte-by-byte reference; and
// a piece boundary never cuts a row.
TEST(TableSchema, TheLoadDataTextEscapesEverySpecialByteWherever) {
  auto reference = [](std::string_view text) {
    std::string out;
    for (char c : text) {
      switch (c) {
        case '\\': out += "\\\\"; break;
        case '\t': out += "\\t"; break;
        case '\n': out += "\\n"; break;
        case '\0': out += "\\0"; break;
        default: out += c;
      }
    }
    return out;
  };
  TsvBuilder tsv;
  std::string expected;
  for (char special : std::string("\\\t\n", 3) + std::string(1, '\0')) {
    for (size_t at = 0; at < 20; ++at) {
      for (size_t length : {at + 1, at + 9, size_t{24}}) {
        if (length <= at) continue;
        std::string text(length, 'x');
        for (size_t i = 0; i < length; ++i) text[i] = static_cast<char>('a' + (i * 7 + at) % 26);
        text[at] = special;
        tsv.Text(text);
        tsv.EndRow();
        expected += reference(text) + "\n";
      }
    }
  }
  tsv.Text(std::string(3 * TsvBuilder::kChunkBytes / 2, 'y'));  // more than one piece
  tsv.EndRow();
  tsv.Int(7);
  tsv.EndRow();
  expected += std::string(3 * TsvBuilder::kChunkBytes / 2, 'y') + "\n7\n";
  std::string joined;
  for (const std::string& piece : tsv.Take()) {
    EXPECT_EQ(piece.back(), '\n') << "a piece ends inside a row";
    joined += piece;
  }
  EXPECT_EQ(joined, expected);
}

TEST(TableSchema, SeveralTextKeysHashAsLengthPrefixedParts) {
  const TableSpec spec{"t", {{"a", ColumnType::kText}, {"b", ColumnType::kText},
                             {"n", ColumnType::kInt64, Merge::kAdd}}};
  EXPECT_EQ(table_schema::HashColumn(spec), "a_b_hash");
  EXPECT_NE(table_schema::CreateTableSql(spec, "t").find(
                "DEFAULT (UNHEX(SHA2(CONCAT(LENGTH(`a`), ':', `a`, LENGTH(`b`), ':', `b`), 256)))"),
            std::string::npos);
  table_schema::KeyHash h(spec);
  EXPECT_FALSE(h.Next("x:"));
  EXPECT_TRUE(h.Next("y"));
  const Sha256Digest want = Sha256("2:x:1:y");
  EXPECT_EQ(h.digest(), std::string_view(reinterpret_cast<const char*>(want.data()), want.size()));
}

}  // namespace
}  // namespace rw

namespace rw {
namespace {

// Writing while reading: a later flush sends the rows of keys never written by LOAD DATA and
// only the others as upserts. Every key value, of every kind, reaches the chosen sink whole
// and in order, followed by the row's values.
TEST(RowWriter, RowsOfKeysAlreadyWrittenGoToUpsertsTheOthersToTheLoad) {
  WrittenKeys written;
  auto flush = [&](const std::vector<std::pair<std::string, int64_t>>& rows, testing::TextSink& fresh,
                   testing::TextSink& existing) {
    SplitByKey split(2, written, fresh, existing);
    for (const auto& [uri, day] : rows) {
      split.Text(uri);
      split.Date(static_cast<int32_t>(day));
      split.Int(day * 10);
      split.EndRow();
    }
    written.Add(split.fresh_keys());
  };
  testing::TextSink fresh1, existing1;
  flush({{"/a", 0}, {"/b", 0}, {"/a", 1}}, fresh1, existing1);
  EXPECT_EQ(fresh1.rows, (std::vector<std::string>{"/a|1970-01-01|0", "/b|1970-01-01|0", "/a|1970-01-02|10"}));
  EXPECT_TRUE(existing1.rows.empty());
  EXPECT_EQ(written.size(), 3u);
  testing::TextSink fresh2, existing2;
  flush({{"/a", 1}, {"/c", 0}, {"/b", 0}, {"/b", 2}}, fresh2, existing2);
  EXPECT_EQ(existing2.rows, (std::vector<std::string>{"/a|1970-01-02|10", "/b|1970-01-01|0"}));
  EXPECT_EQ(fresh2.rows, (std::vector<std::string>{"/c|1970-01-01|0", "/b|1970-01-03|20"}));
  EXPECT_EQ(written.size(), 5u);
  // Many keys: the set grows and still knows every one, and no other.
  std::vector<uint64_t> many;
  for (uint64_t i = 1; i <= 100'000; ++i) many.push_back(i * 0x9E3779B97F4A7C15ull);
  written.Add(many);
  for (uint64_t i = 1; i <= 100'000; ++i) ASSERT_TRUE(written.MaybeContains(i * 0x9E3779B97F4A7C15ull)) << i;
  int strangers = 0;
  for (uint64_t i = 1; i <= 100'000; ++i) strangers += written.MaybeContains(i * 0x9E3779B97F4A7C15ull + 1) ? 1 : 0;
  EXPECT_EQ(strangers, 0);
}

}  // namespace
}  // namespace rw
