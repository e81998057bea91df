<?php
// The blog's projectors as statements, replayed the article's way: keyset pages of 30,000,
// json_decode, and for each event each projector's own prepared statement
// (`INSERT ... VALUES (?, 1) ON DUPLICATE KEY UPDATE count = count + 1`), executed once per
// event (one round trip each), one transaction per page. The statements and tables are
// config/examples/blog-sql.{toml,sql}'s, written into phpsql_<table>.
//
//   php perf/php_statements.php SOCKET USER PASSWORD DATABASE day|seven
// Prints: events, seconds, events/s.
[$_, $socket, $user, $password, $database, $which] = $argv;
mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);
$db = new mysqli('localhost', $user, $password, $database, 0, $socket);
$db->set_charset('utf8mb4');
$db->query("SET time_zone = '+00:00'");

$ddl = file_get_contents(__DIR__ . '/../config/examples/blog-sql.sql');
$sql = [
  'sql_visits_per_minute' => "INSERT INTO T (time, count) VALUES (STR_TO_DATE(LEFT(?, 16), '%Y-%m-%dT%H:%i'), 1) ON DUPLICATE KEY UPDATE count = count + 1",
  'sql_visits_per_hour' => "INSERT INTO T (hour, count) VALUES (STR_TO_DATE(LEFT(?, 13), '%Y-%m-%dT%H'), 1) ON DUPLICATE KEY UPDATE count = count + 1",
  'sql_visits_per_day' => "INSERT INTO T (date, count) VALUES (STR_TO_DATE(LEFT(?, 10), '%Y-%m-%d'), 1) ON DUPLICATE KEY UPDATE count = count + 1",
  'sql_visits_per_month' => "INSERT INTO T (date, count) VALUES (STR_TO_DATE(CONCAT(LEFT(?, 7), '-01'), '%Y-%m-%d'), 1) ON DUPLICATE KEY UPDATE count = count + 1",
  'sql_visits_per_year' => "INSERT INTO T (date, count) VALUES (STR_TO_DATE(CONCAT(LEFT(?, 4), '-01-01'), '%Y-%m-%d'), 1) ON DUPLICATE KEY UPDATE count = count + 1",
  'sql_visits_per_post_per_day' => "INSERT INTO T (uri, date, count) VALUES (?, STR_TO_DATE(LEFT(?, 10), '%Y-%m-%d'), 1) ON DUPLICATE KEY UPDATE count = count + 1",
  'sql_visits_per_post_per_week' => "INSERT INTO T (uri, date, count) VALUES (?, STR_TO_DATE(LEFT(?, 10), '%Y-%m-%d') - INTERVAL WEEKDAY(STR_TO_DATE(LEFT(?, 10), '%Y-%m-%d')) DAY, 1) ON DUPLICATE KEY UPDATE count = count + 1",
];
$models = $which === 'day' ? ['sql_visits_per_day'] : array_keys($sql);
$stmts = [];
foreach ($models as $m) {
    $db->query("DROP TABLE IF EXISTS php$m");
    preg_match("/CREATE TABLE IF NOT EXISTS $m (\(.*?\));\n/s", $ddl, $found);
    $db->query("CREATE TABLE php$m " . $found[1]);
    $stmts[$m] = $db->prepare(str_replace('INTO T ', "INTO php$m ", $sql[$m]));
}

$start = microtime(true);
$last = 0;
$events = 0;
for (;;) {
    $res = $db->query("SELECT id, payload FROM stored_events WHERE id > $last AND eventClass = 'App\\\\Analytics\\\\PageVisited' ORDER BY id LIMIT 30000");
    if ($res->num_rows === 0) break;
    $db->begin_transaction();
    while ($row = $res->fetch_row()) {
        $last = $row[0];
        $e = json_decode($row[1], true);
        if (!is_array($e) || !isset($e['visitedAt'])) continue;
        $v = $e['visitedAt'];
        $url = $e['url'] ?? null;
        ++$events;
        foreach ($models as $m) {
            $st = $stmts[$m];
            if ($m === 'sql_visits_per_post_per_week') $st->bind_param('sss', $url, $v, $v);
            elseif ($m === 'sql_visits_per_post_per_day') $st->bind_param('ss', $url, $v);
            else $st->bind_param('s', $v);
            $st->execute();
        }
    }
    $res->free();
    $db->commit();
}
$s = microtime(true) - $start;
printf("events %d seconds %.3f events_per_second %.0f\n", $events, $s, $events / $s);
