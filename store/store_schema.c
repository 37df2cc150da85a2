/*
 * store_schema.c: the schema as an ordered list of forward migrations.
 *
 * PRAGMA user_version holds the number of the last migration applied; store_open applies
 * each later one in its own transaction (see store.c). To change the schema, append a
 * migration with the next number: never edit or reorder one that has been released, since
 * databases in the field already ran it. docs/store.md documents the resulting tables.
 *
 * Times are INTEGER nanoseconds since the epoch; the *_v views show them as ISO 8601
 * text so that the log stays readable with the sqlite3 shell alone.
 */
#include "store.h"
#include "store_internal.h"

/* Version 1 (issue 4): probes and their settings, per-window summaries, the event log. */
static const char migration1[] =
    /* 'DQD1': marks the file as dqd's, so that store_open refuses other applications' files */
    "PRAGMA application_id = 1146176561;\n"
    "CREATE TABLE probes (\n"
    "  name       TEXT PRIMARY KEY NOT NULL CHECK (length(name) BETWEEN 1 AND 255),\n"
    "  dmax_ms    REAL CHECK (dmax_ms IS NULL OR dmax_ms > 0),\n"
    "  bins       INTEGER CHECK (bins IS NULL OR bins BETWEEN 1 AND 4096),\n"
    "  enabled    INTEGER NOT NULL DEFAULT 0 CHECK (enabled IN (0, 1)),\n"
    "  always_on  INTEGER NOT NULL DEFAULT 0 CHECK (always_on IN (0, 1)),\n"
    "  qta        TEXT CHECK (qta IS NULL OR json_valid(qta)),\n"
    "  created_ns INTEGER NOT NULL,\n"
    "  updated_ns INTEGER NOT NULL\n"
    ");\n"
    "CREATE TABLE windows (\n"
    "  probe    TEXT NOT NULL REFERENCES probes(name) ON DELETE CASCADE ON UPDATE CASCADE,\n"
    "  kind     TEXT NOT NULL CHECK (kind IN ('observed', 'calculated')),\n"
    "  start_ns INTEGER NOT NULL,\n"
    "  end_ns   INTEGER NOT NULL CHECK (end_ns >= start_ns),\n"
    "  n        INTEGER NOT NULL DEFAULT 0,\n"
    "  n_ok     INTEGER NOT NULL DEFAULT 0,\n"
    "  n_fa     INTEGER NOT NULL DEFAULT 0,\n"
    "  n_to     INTEGER NOT NULL DEFAULT 0,\n"
    "  mean     REAL,\n"
    "  p50      REAL,\n"
    "  p95      REAL,\n"
    "  p99      REAL,\n"
    "  lost     REAL\n"
    ");\n"
    /* Serves the per-probe time range queries and retention, and makes re-writing a
       window after a restart replace the row instead of duplicating it. */
    "CREATE UNIQUE INDEX windows_probe_start ON windows (probe, start_ns, kind);\n"
    "CREATE TABLE events (\n"
    "  id      INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  time_ns INTEGER NOT NULL,\n"
    "  kind    TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 64),\n"
    "  probe   TEXT,\n"
    "  detail  TEXT CHECK (detail IS NULL OR json_valid(detail))\n"
    ");\n"
    "CREATE INDEX events_time ON events (time_ns);\n"
    "CREATE INDEX events_probe ON events (probe, id);\n"
    "CREATE VIEW windows_v AS SELECT probe, kind,\n"
    "  strftime('%Y-%m-%dT%H:%M:%fZ', start_ns / 1e9, 'unixepoch') AS start,\n"
    "  (end_ns - start_ns) / 1e6 AS period_ms, n, n_ok, n_fa, n_to,\n"
    "  round(mean * 1e3, 3) AS mean_ms, round(p50 * 1e3, 3) AS p50_ms,\n"
    "  round(p95 * 1e3, 3) AS p95_ms, round(p99 * 1e3, 3) AS p99_ms, round(lost, 6) AS lost\n"
    "  FROM windows;\n"
    "CREATE VIEW events_v AS SELECT id,\n"
    "  strftime('%Y-%m-%dT%H:%M:%fZ', time_ns / 1e9, 'unixepoch') AS time, kind, probe, detail\n"
    "  FROM events;\n";

const struct store__migration store__migrations[] = {
    {1, "probes, windows, events", migration1},
};

const int store__migration_count = (int)(sizeof store__migrations / sizeof store__migrations[0]);
