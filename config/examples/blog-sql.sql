-- The tables of config/examples/blog-sql.toml, as the blog's application made them (the
-- article's own tables; the names differ from the compiled read models', which a
-- declaration may not take). A read model of handlers writes the application's table:
-- rewind rebuilds a copy LIKE it and swaps it in, so the tables must exist first.
--   mariadb blog < config/examples/blog-sql.sql
CREATE TABLE IF NOT EXISTS sql_visits_per_minute (time DATETIME NOT NULL PRIMARY KEY, count BIGINT UNSIGNED NOT NULL);
CREATE TABLE IF NOT EXISTS sql_visits_per_hour (hour DATETIME NOT NULL PRIMARY KEY, count BIGINT UNSIGNED NOT NULL);
CREATE TABLE IF NOT EXISTS sql_visits_per_day (date DATE NOT NULL PRIMARY KEY, count BIGINT UNSIGNED NOT NULL);
CREATE TABLE IF NOT EXISTS sql_visits_per_month (date DATE NOT NULL PRIMARY KEY, count BIGINT UNSIGNED NOT NULL);
CREATE TABLE IF NOT EXISTS sql_visits_per_year (date DATE NOT NULL PRIMARY KEY, count BIGINT UNSIGNED NOT NULL);
CREATE TABLE IF NOT EXISTS sql_visits_per_post_per_day (
  uri TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, date DATE NOT NULL,
  uri_hash BINARY(32) NOT NULL DEFAULT (UNHEX(SHA2(uri, 256))), count BIGINT UNSIGNED NOT NULL,
  UNIQUE KEY date_uri (date, uri_hash));
CREATE TABLE IF NOT EXISTS sql_visits_per_post_per_week (
  uri TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, date DATE NOT NULL,
  uri_hash BINARY(32) NOT NULL DEFAULT (UNHEX(SHA2(uri, 256))), count BIGINT UNSIGNED NOT NULL,
  UNIQUE KEY date_uri (date, uri_hash));
