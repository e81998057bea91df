<?php
// The blog's final PHP replay loop, as described: keyset pages of 30,000, json_decode,
// counts aggregated in memory per page, one multi-row
// INSERT ... ON DUPLICATE KEY UPDATE count = count + VALUES(count) per projector per page,
// one transaction per page. Writes into php_<table> (same DDL as rewind's tables).
//
//   php perf/php_replica.php SOCKET USER PASSWORD DATABASE day|seven
// Prints: events, seconds, events/s.
[$_, $socket, $user, $password, $database, $which] = $argv;
mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);
$db = new mysqli('localhost', $user, $password, $database, 0, $socket);
$db->set_charset('utf8mb4');

$time = ['visits_per_minute' => 'time', 'visits_per_hour' => 'hour', 'visits_per_day' => 'date',
         'visits_per_month' => 'date', 'visits_per_year' => 'date'];
$models = $which === 'day' ? ['visits_per_day']
    : ['visits_per_minute', 'visits_per_hour', 'visits_per_day', 'visits_per_month',
       'visits_per_year', 'visits_per_post_per_day', 'visits_per_post_per_week'];
foreach ($models as $m) {
    $db->query("DROP TABLE IF EXISTS php_$m");
    if (isset($time[$m])) {
        $type = $time[$m] === 'date' ? 'DATE' : 'DATETIME';
        $db->query("CREATE TABLE php_$m (`{$time[$m]}` $type NOT NULL, count BIGINT UNSIGNED NOT NULL, PRIMARY KEY (`{$time[$m]}`))");
    } else {
        $db->query("CREATE TABLE php_$m (uri TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, date DATE NOT NULL, uri_hash BINARY(32) NOT NULL DEFAULT (UNHEX(SHA2(uri, 256))), count BIGINT UNSIGNED NOT NULL, UNIQUE KEY date_uri (date, uri_hash))");
    }
}

$start = microtime(true);
$last = 0;
$events = 0;
for (;;) {
    $res = $db->query("SELECT id, payload FROM stored_events WHERE id > $last AND eventClass = 'App\\\\Analytics\\\\PageVisited' ORDER BY id LIMIT 30000");
    if ($res->num_rows === 0) break;
    $counts = array_fill_keys($models, []);
    while ($row = $res->fetch_row()) {
        $last = $row[0];
        $e = json_decode($row[1], true);
        if (!is_array($e) || !isset($e['visitedAt'])) continue;
        $v = $e['visitedAt'];
        $day = substr($v, 0, 10);
        ++$events;
        foreach ($models as $m) {
            switch ($m) {
                case 'visits_per_minute': $k = $day . ' ' . substr($v, 11, 5) . ':00'; break;
                case 'visits_per_hour': $k = $day . ' ' . substr($v, 11, 2) . ':00:00'; break;
                case 'visits_per_day': $k = $day; break;
                case 'visits_per_month': $k = substr($v, 0, 7) . '-01'; break;
                case 'visits_per_year': $k = substr($v, 0, 4) . '-01-01'; break;
                case 'visits_per_post_per_day': $k = $day . "\0" . $e['url']; break;
                case 'visits_per_post_per_week':
                    $d = intdiv(gmmktime(0, 0, 0, (int)substr($v, 5, 2), (int)substr($v, 8, 2), (int)substr($v, 0, 4)), 86400);
                    $k = gmdate('Y-m-d', ($d - (($d + 3) % 7)) * 86400) . "\0" . $e['url'];
                    break;
            }
            $counts[$m][$k] = ($counts[$m][$k] ?? 0) + 1;
        }
    }
    $res->free();
    $db->begin_transaction();
    foreach ($models as $m) {
        if (!$counts[$m]) continue;
        $values = [];
        foreach ($counts[$m] as $k => $n) {
            if (isset($time[$m])) {
                $values[] = "('$k',$n)";
            } else {
                [$date, $url] = explode("\0", $k, 2);
                $values[] = "('" . $db->real_escape_string($url) . "','$date',$n)";
            }
        }
        $cols = isset($time[$m]) ? "`{$time[$m]}`, count" : "uri, date, count";
        $db->query("INSERT INTO php_$m ($cols) VALUES " . implode(',', $values) .
                   " ON DUPLICATE KEY UPDATE count = count + VALUES(count)");
    }
    $db->commit();
}
$s = microtime(true) - $start;
printf("events %d seconds %.3f events_per_second %.0f\n", $events, $s, $events / $s);
