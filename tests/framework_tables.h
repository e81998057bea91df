// The event tables other frameworks create, as their published migrations make them, for the
// tests that run rewind on them (frameworks_test, stress_test's own-table runs, hostile_test's
// rewind-gen ownership). Thread safety: constants only.
#pragma once

namespace rw::testing {

// spatie/laravel-event-sourcing's `stored_events`: the migration's table (Laravel's
// bigIncrements, uuid, string, json and timestamp columns on MariaDB).
inline constexpr const char* kLaravelStoredEventsDdl = R"sql(
    CREATE TABLE stored_events (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
      aggregate_uuid CHAR(36) NULL,
      aggregate_version BIGINT UNSIGNED NULL,
      event_class VARCHAR(255) NOT NULL,
      event_properties JSON NOT NULL,
      meta_data JSON NOT NULL,
      created_at TIMESTAMP NOT NULL,
      INDEX stored_events_event_class_index (event_class),
      INDEX stored_events_aggregate_uuid_index (aggregate_uuid)
    ) DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_unicode_ci)sql";

}  // namespace rw::testing
