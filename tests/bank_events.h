// spatie/laravel-event-sourcing's bank example (issue 53), shared by the tests of deletes
// and of handlers: its `accounts` table as the application's migration makes it, its events
// in spatie's `stored_events`, and what the application's own projector makes of them,
// computed here event by event (never by rewind).
#pragma once

#include <gtest/gtest.h>

#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "framework_tables.h"
#include "test_db.h"

namespace rw::testing {

inline const std::string kNs = "App\\Events\\";

// The bank example's `accounts` migration as the application ran it: Laravel's increments
// `id`, the uuid the projector looks rows up by (unique: the key rewind merges on), the
// name, an integer balance with its default, the user and Laravel's timestamps.
inline constexpr const char* kAccountsDdl = R"sql(
  CREATE TABLE accounts (
    id INT UNSIGNED NOT NULL AUTO_INCREMENT,
    uuid VARCHAR(255) NOT NULL,
    name VARCHAR(255) NOT NULL DEFAULT '',
    balance INT NOT NULL DEFAULT 0,
    user_id INT UNSIGNED NULL,
    created_at TIMESTAMP NULL,
    updated_at TIMESTAMP NULL,
    PRIMARY KEY (id),
    UNIQUE KEY accounts_uuid_unique (uuid)
  ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci)sql";

inline std::string ShapeOf(Connection& c, const std::string& table) {
  auto r = c.Query("SHOW CREATE TABLE " + QuoteIdentifier(table));
  EXPECT_TRUE(r.ok()) << table << ": " << r.status().message();
  if (!r.ok() || r->rows.empty()) return {};
  const std::string text = r->rows[0][1].value_or("");
  return std::regex_replace(text.substr(text.find('(')), std::regex(" AUTO_INCREMENT=[0-9]+"), "");
}

inline std::vector<std::string> Replay(const std::string& models, const std::string& model) {
  return {"replay", model, "--models", models, "--events-table", "stored_events", "--id-column", "id",
          "--type-column", "event_class", "--payload-column", "event_properties", "--time-column", "created_at",
          "--quiet"};
}

inline std::string File(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// The bank's events, and what the application's projector makes of them (uuid -> "name|balance|user").
struct Bank {
  std::vector<std::string> rows;  // stored_events rows, in id order
  std::map<std::string, std::string> accounts;
  int deleted = 0, recreated = 0;
};

inline Bank MakeBank(Connection& c, int accounts, int moves, unsigned seed) {
  Bank bank;
  std::mt19937 rng(seed);
  struct Account {
    std::string uuid, name;
    int64_t balance = 0, user = 0;
    bool open = false;
  };
  std::vector<Account> all(static_cast<size_t>(accounts));
  auto add = [&](const Account& a, const std::string& cls, const std::string& properties) {
    bank.rows.push_back(fmt::format("({}, 1, {}, {}, '{{}}', '2024-05-01 10:00:00')", c.Quote(a.uuid),
                                    c.Quote(kNs + cls), c.Quote(properties)));
  };
  auto create = [&](Account& a, size_t i) {
    const unsigned tag = rng() % 1000;
    a.name = fmt::format("Account {} \"{}\"", i, tag);
    a.user = static_cast<int64_t>(100 + rng() % 50);
    a.balance = 0;
    a.open = true;
    add(a, "AccountCreated",
        fmt::format(R"({{"accountUuid": "{}", "name": "Account {} \"{}\"", "userId": {}}})", a.uuid, i, tag, a.user));
  };
  for (size_t i = 0; i < all.size(); ++i) {
    all[i].uuid = fmt::format("{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}", rng(), rng() & 0xffff, rng() & 0xfff,
                              rng() & 0xfff, (uint64_t{rng()} << 16) | (rng() & 0xffff));
    create(all[i], i);
  }
  for (int n = 0; n < moves; ++n) {
    const size_t i = rng() % all.size();
    Account& a = all[i];
    if (!a.open) {
      create(a, i);  // created again under the same uuid: a row from the table's defaults
      ++bank.recreated;
      continue;
    }
    const int64_t amount = 1 + static_cast<int64_t>(rng() % 5000);
    if (n % 23 == 11) {
      a.open = false;
      ++bank.deleted;
      add(a, "AccountDeleted", fmt::format(R"({{"accountUuid": "{}"}})", a.uuid));
    } else if (a.balance >= amount && n % 3 == 0) {
      a.balance -= amount;
      add(a, "MoneySubtracted", fmt::format(R"({{"accountUuid": "{}", "amount": {}}})", a.uuid, amount));
    } else {
      a.balance += amount;
      add(a, "MoneyAdded", fmt::format(R"({{"accountUuid": "{}", "amount": {}}})", a.uuid, amount));
    }
  }
  for (const Account& a : all) {
    if (a.open) bank.accounts[a.uuid] = fmt::format("{}|{}|{}", a.name, a.balance, a.user);
  }
  return bank;
}

inline void Insert(Connection& c, const std::vector<std::string>& rows) {
  for (size_t at = 0; at < rows.size(); at += 200) {
    std::string sql = "INSERT INTO stored_events (aggregate_uuid, aggregate_version, event_class, event_properties, "
                      "meta_data, created_at) VALUES";
    for (size_t i = at; i < std::min(rows.size(), at + 200); ++i) sql += (i > at ? ", " : " ") + rows[i];
    ASSERT_TRUE(c.Execute(sql).ok()) << sql.substr(0, 300);
  }
}

inline std::vector<std::string> Expected(const Bank& bank) {
  std::vector<std::string> out;
  for (const auto& [uuid, row] : bank.accounts) out.push_back(uuid + "|" + row);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace rw::testing
