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
static const char *const migration1[] = {
    /* 'DQD1': marks the file as dqd's, so that store_open refuses other applications' files */
    "PRAGMA application_id = 1146176561;\n",
    "CREATE TABLE probes (\n"
    "  name       TEXT PRIMARY KEY NOT NULL CHECK (length(name) BETWEEN 1 AND 255),\n"
    "  dmax_ms    REAL CHECK (dmax_ms IS NULL OR dmax_ms > 0),\n"
    "  bins       INTEGER CHECK (bins IS NULL OR bins BETWEEN 1 AND 4096),\n"
    "  enabled    INTEGER NOT NULL DEFAULT 0 CHECK (enabled IN (0, 1)),\n"
    "  always_on  INTEGER NOT NULL DEFAULT 0 CHECK (always_on IN (0, 1)),\n"
    "  qta        TEXT CHECK (qta IS NULL OR json_valid(qta)),\n"
    "  created_ns INTEGER NOT NULL,\n"
    "  updated_ns INTEGER NOT NULL\n"
    ");\n",
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
    ");\n",
    /* Serves the per-probe time range queries and retention, and makes re-writing a
       window after a restart replace the row instead of duplicating it. */
    "CREATE UNIQUE INDEX windows_probe_start ON windows (probe, start_ns, kind);\n",
    "CREATE TABLE events (\n"
    "  id      INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  time_ns INTEGER NOT NULL,\n"
    "  kind    TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 64),\n"
    "  probe   TEXT,\n"
    "  detail  TEXT CHECK (detail IS NULL OR json_valid(detail))\n"
    ");\n",
    "CREATE INDEX events_time ON events (time_ns);\n",
    "CREATE INDEX events_probe ON events (probe, id);\n",
    "CREATE VIEW windows_v AS SELECT probe, kind,\n"
    "  strftime('%Y-%m-%dT%H:%M:%fZ', start_ns / 1e9, 'unixepoch') AS start,\n"
    "  (end_ns - start_ns) / 1e6 AS period_ms, n, n_ok, n_fa, n_to,\n"
    "  round(mean * 1e3, 3) AS mean_ms, round(p50 * 1e3, 3) AS p50_ms,\n"
    "  round(p95 * 1e3, 3) AS p95_ms, round(p99 * 1e3, 3) AS p99_ms, round(lost, 6) AS lost\n"
    "  FROM windows;\n",
    "CREATE VIEW events_v AS SELECT id,\n"
    "  strftime('%Y-%m-%dT%H:%M:%fZ', time_ns / 1e9, 'unixepoch') AS time, kind, probe, detail\n"
    "  FROM events;\n",
    NULL,
};

/*
 * Version 2 (issue 6): the adaptive loop's log. An investigation is the root of a tree of
 * hypotheses (parent links); commands record what was sent to which wrapper for which
 * hypothesis; triggers hold their configuration and hysteresis state (so a restart resumes
 * mid-count); snapshots keep the ΔQs around a trigger. Node and probe names in this log
 * are plain text, not foreign keys: the history must survive a probe's deletion.
 */
static const char *const migration2[] = {
    "CREATE TABLE triggers (\n"
    "  id          INTEGER PRIMARY KEY,\n"
    "  probe       TEXT NOT NULL REFERENCES probes(name) ON DELETE CASCADE ON UPDATE CASCADE,\n"
    "  kind        TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 32),\n"
    "  threshold   REAL,\n"
    "  fire_after  INTEGER NOT NULL CHECK (fire_after >= 1),\n"
    "  clear_after INTEGER NOT NULL CHECK (clear_after >= 1),\n"
    "  params      TEXT CHECK (params IS NULL OR json_valid(params)),\n"
    "  enabled     INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),\n"
    "  state       TEXT NOT NULL DEFAULT 'clear' CHECK (state IN ('clear', 'fired')),\n"
    "  bad         INTEGER NOT NULL DEFAULT 0 CHECK (bad >= 0),\n"
    "  good        INTEGER NOT NULL DEFAULT 0 CHECK (good >= 0),\n"
    "  fired_ns    INTEGER,\n"
    "  cleared_ns  INTEGER,\n"
    "  created_ns  INTEGER NOT NULL,\n"
    "  updated_ns  INTEGER NOT NULL,\n"
    "  UNIQUE (probe, kind)\n"
    ");\n",
    "CREATE TABLE investigations (\n"
    "  id           INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  node         TEXT NOT NULL,\n"
    "  problem      TEXT NOT NULL CHECK (length(problem) BETWEEN 1 AND 32),\n"
    "  strategy     TEXT NOT NULL CHECK (length(strategy) BETWEEN 1 AND 32),\n"
    "  origin       TEXT NOT NULL CHECK (origin IN ('trigger', 'person')),\n"
    "  trigger_id   INTEGER REFERENCES triggers(id) ON DELETE SET NULL,\n"
    "  requested_by TEXT,\n"
    "  state        TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed')),\n"
    "  verdict      TEXT CHECK (verdict IS NULL OR\n"
    "                 verdict IN ('localized', 'diffuse', 'inconclusive', 'aborted')),\n"
    "  verdict_node TEXT,\n"
    "  summary      TEXT CHECK (summary IS NULL OR json_valid(summary)),\n"
    "  opened_ns    INTEGER NOT NULL,\n"
    "  closed_ns    INTEGER,\n"
    "  CHECK ((state = 'open') = (verdict IS NULL))\n"
    ");\n",
    "CREATE INDEX investigations_state ON investigations (state, id);\n",
    "CREATE TABLE hypotheses (\n"
    "  id            INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  investigation INTEGER NOT NULL REFERENCES investigations(id) ON DELETE CASCADE,\n"
    "  parent        INTEGER REFERENCES hypotheses(id) ON DELETE CASCADE,\n"
    "  node          TEXT NOT NULL,\n"
    "  kind          TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 32),\n"
    "  action        TEXT NOT NULL CHECK (length(action) BETWEEN 1 AND 32),\n"
    "  probes        TEXT NOT NULL DEFAULT '[]'\n"
    "                CHECK (json_valid(probes) AND json_type(probes) = 'array'),\n"
    "  stats         TEXT CHECK (stats IS NULL OR json_valid(stats)),\n"
    "  verdict       TEXT NOT NULL DEFAULT 'pending' CHECK (verdict IN ('pending', 'confirmed',\n"
    "                  'refuted', 'localized', 'diffuse', 'inconclusive')),\n"
    "  created_ns    INTEGER NOT NULL,\n"
    "  updated_ns    INTEGER NOT NULL\n"
    ");\n",
    "CREATE INDEX hypotheses_investigation ON hypotheses (investigation, id);\n",
    "CREATE INDEX hypotheses_parent ON hypotheses (parent);\n",
    /* A tree must not span investigations; enforced here so that shell edits obey it too. */
    "CREATE TRIGGER hypotheses_parent_same_investigation BEFORE INSERT ON hypotheses\n"
    "  WHEN NEW.parent IS NOT NULL AND EXISTS (SELECT 1 FROM hypotheses\n"
    "       WHERE id = NEW.parent AND investigation IS NOT NEW.investigation)\n"
    "  BEGIN SELECT RAISE(ABORT, 'parent hypothesis is not in this investigation'); END;\n",
    "CREATE TABLE commands (\n"
    "  id         INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  time_ns    INTEGER NOT NULL,\n"
    "  wrapper    TEXT NOT NULL CHECK (length(wrapper) >= 1),\n"
    "  command    TEXT NOT NULL CHECK (length(command) BETWEEN 1 AND 32),\n"
    "  probe      TEXT,\n"
    "  args       TEXT CHECK (args IS NULL OR json_valid(args)),\n"
    "  hypothesis INTEGER REFERENCES hypotheses(id) ON DELETE SET NULL,\n"
    "  status     TEXT NOT NULL DEFAULT 'sent'\n"
    "             CHECK (status IN ('sent', 'acked', 'failed', 'not_applied')),\n"
    "  status_ns  INTEGER,\n"
    "  detail     TEXT\n"
    ");\n",
    "CREATE INDEX commands_hypothesis ON commands (hypothesis);\n",
    "CREATE INDEX commands_wrapper ON commands (wrapper, id);\n",
    "CREATE TABLE snapshots (\n"
    "  id            INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  trigger_id    INTEGER REFERENCES triggers(id) ON DELETE SET NULL,\n"
    "  investigation INTEGER REFERENCES investigations(id) ON DELETE SET NULL,\n"
    "  probe         TEXT NOT NULL,\n"
    "  reason        TEXT,\n"
    "  time_ns       INTEGER NOT NULL,\n"
    "  windows       INTEGER NOT NULL CHECK (windows >= 1),\n"
    "  state         TEXT NOT NULL DEFAULT 'collecting'\n"
    "                CHECK (state IN ('collecting', 'complete')),\n"
    "  created_ns    INTEGER NOT NULL,\n"
    "  completed_ns  INTEGER\n"
    ");\n",
    /* One ΔQ per (snapshot, probe, kind, window): the grid, the counts, and the masses as
       a JSON array (trailing zero bins trimmed) so json_each can read it in the shell. */
    "CREATE TABLE snapshot_dqs (\n"
    "  snapshot INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,\n"
    "  probe    TEXT NOT NULL,\n"
    "  kind     TEXT NOT NULL CHECK (kind IN ('observed', 'calculated')),\n"
    "  start_ns INTEGER NOT NULL,\n"
    "  end_ns   INTEGER NOT NULL CHECK (end_ns >= start_ns),\n"
    "  k        INTEGER NOT NULL CHECK (k BETWEEN -10 AND 10),\n"
    "  bins     INTEGER NOT NULL CHECK (bins BETWEEN 1 AND 4096),\n"
    "  n_ok     INTEGER NOT NULL DEFAULT 0,\n"
    "  n_fa     INTEGER NOT NULL DEFAULT 0,\n"
    "  n_to     INTEGER NOT NULL DEFAULT 0,\n"
    "  n_out    INTEGER NOT NULL DEFAULT 0,\n"
    "  pdf      TEXT NOT NULL CHECK (json_valid(pdf) AND json_type(pdf) = 'array'\n"
    "                                AND json_array_length(pdf) <= bins),\n"
    "  PRIMARY KEY (snapshot, probe, kind, start_ns)\n"
    ") WITHOUT ROWID;\n",
    "CREATE VIEW hypotheses_v AS SELECT id, investigation, parent, node, kind, action, probes,\n"
    "  verdict, strftime('%Y-%m-%dT%H:%M:%fZ', created_ns / 1e9, 'unixepoch') AS created,\n"
    "  stats FROM hypotheses;\n",
    "CREATE VIEW investigations_v AS SELECT id, node, problem, strategy, origin, trigger_id,\n"
    "  requested_by, state, verdict, verdict_node,\n"
    "  strftime('%Y-%m-%dT%H:%M:%fZ', opened_ns / 1e9, 'unixepoch') AS opened,\n"
    "  strftime('%Y-%m-%dT%H:%M:%fZ', closed_ns / 1e9, 'unixepoch') AS closed, summary\n"
    "  FROM investigations;\n",
    "CREATE VIEW commands_v AS SELECT id,\n"
    "  strftime('%Y-%m-%dT%H:%M:%fZ', time_ns / 1e9, 'unixepoch') AS time, wrapper, command,\n"
    "  probe, args, hypothesis, status, detail FROM commands;\n",
    NULL,
};

/*
 * Version 3 (issue 11): the verdicts `healthy` (nothing abnormal at the node) and, for
 * hypotheses, `healthy` and `aborted`. SQLite cannot alter a CHECK constraint, and
 * rebuilding the tables would cascade through their foreign keys, so the constraints are
 * widened in sqlite_schema itself, as SQLite documents for CHECK changes ("Making Other
 * Kinds Of Table Schema Changes"): writable_schema on, the text replaced, the schema
 * version bumped so that other connections reload it. Only widening: rows stay valid.
 */
static const char *const migration3[] = {
    "PRAGMA writable_schema = ON;\n",
    "UPDATE sqlite_schema SET sql = replace(sql,\n"
    "  'verdict IN (''localized'', ''diffuse'', ''inconclusive'', ''aborted'')',\n"
    "  'verdict IN (''localized'', ''diffuse'', ''inconclusive'', ''aborted'', ''healthy'')')\n"
    "  WHERE type = 'table' AND name = 'investigations';\n",
    "UPDATE sqlite_schema SET sql = replace(sql,\n"
    "  '''refuted'', ''localized'', ''diffuse'', ''inconclusive'')',\n"
    "  '''refuted'', ''localized'', ''diffuse'', ''inconclusive'', ''healthy'', ''aborted'')')\n"
    "  WHERE type = 'table' AND name = 'hypotheses';\n",
    "PRAGMA schema_version = " STORE_SCHEMA_VERSION_NEXT ";\n",
    "PRAGMA writable_schema = OFF;\n",
    NULL,
};

/*
 * Version 4 (issue 12): a probe's number of servers (a station of a queueing model) and
 * its quiet windows (the low-load baseline of its service time, JSON), and the verdict
 * `overload`, widened as in version 3.
 */
static const char *const migration4[] = {
    "ALTER TABLE probes ADD COLUMN servers INTEGER\n"
    "  CHECK (servers IS NULL OR servers BETWEEN 1 AND 100000);\n",
    "ALTER TABLE probes ADD COLUMN quiet TEXT CHECK (quiet IS NULL OR json_valid(quiet));\n",
    "PRAGMA writable_schema = ON;\n",
    "UPDATE sqlite_schema SET sql = replace(sql,\n"
    "  '''inconclusive'', ''aborted'', ''healthy'')',\n"
    "  '''inconclusive'', ''aborted'', ''healthy'', ''overload'')')\n"
    "  WHERE type = 'table' AND name = 'investigations';\n",
    "UPDATE sqlite_schema SET sql = replace(sql,\n"
    "  '''inconclusive'', ''healthy'', ''aborted'')',\n"
    "  '''inconclusive'', ''healthy'', ''aborted'', ''overload'')')\n"
    "  WHERE type = 'table' AND name = 'hypotheses';\n",
    "PRAGMA schema_version = " STORE_SCHEMA_VERSION_NEXT ";\n",
    "PRAGMA writable_schema = OFF;\n",
    NULL,
};

/*
 * Version 5 (issue 13): the outcome diagrams dqd loaded (from --diagram or PUT
 * /api/v1/diagram), so that one sent through the API survives a restart: at start dqd
 * loads the latest unless --diagram names a file. A row per change, oldest first.
 */
static const char *const migration5[] = {
    "CREATE TABLE diagrams (\n"
    "  id        INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  text      TEXT NOT NULL,\n"
    "  path      TEXT CHECK (path IS NULL OR length(path) >= 1),\n"
    "  loaded_ns INTEGER NOT NULL\n"
    ");\n",
    "CREATE VIEW diagrams_v AS SELECT id,\n"
    "  strftime('%Y-%m-%dT%H:%M:%fZ', loaded_ns / 1e9, 'unixepoch') AS loaded,\n"
    "  coalesce(path, '(api)') AS source, length(text) AS bytes, text FROM diagrams;\n",
    NULL,
};

/*
 * Version 6 (issue 25): a stop keeps what it has. windows: `partial` (1: dqd ran for only
 * part of the window, [start_ns, end_ns] is that part: the windows open when it stopped,
 * closed early, and the one it started in) and `run_ns` (when the dqd that wrote the row
 * started): two runs that each saw part of one window keep a row each, where the upsert on
 * (probe, start_ns, kind) would have let the second overwrite the first. probes:
 * `last_instance_ns` (the END of its newest instance) and `last_origin` (JSON: the
 * connection that came from), written at the stop and whenever the origin changes, so that
 * a silence after a restart is dated and named. commands: the status `ambiguous` (a legacy
 * wrapper's own connection among several on one host: whether the command reached it cannot
 * be told), widened as in version 3.
 */
static const char *const migration6[] = {
    "ALTER TABLE windows ADD COLUMN partial INTEGER NOT NULL DEFAULT 0\n"
    "  CHECK (partial IN (0, 1));\n",
    "ALTER TABLE windows ADD COLUMN run_ns INTEGER;\n",
    "DROP INDEX windows_probe_start;\n",
    /* rows from before version 6 have no run_ns: NULLs are distinct, so they stay as they are */
    "CREATE UNIQUE INDEX windows_probe_start ON windows (probe, start_ns, kind, run_ns);\n",
    "DROP VIEW windows_v;\n",
    "CREATE VIEW windows_v AS SELECT probe, kind,\n"
    "  strftime('%Y-%m-%dT%H:%M:%fZ', start_ns / 1e9, 'unixepoch') AS start,\n"
    "  (end_ns - start_ns) / 1e6 AS period_ms, n, n_ok, n_fa, n_to,\n"
    "  round(mean * 1e3, 3) AS mean_ms, round(p50 * 1e3, 3) AS p50_ms,\n"
    "  round(p95 * 1e3, 3) AS p95_ms, round(p99 * 1e3, 3) AS p99_ms, round(lost, 6) AS lost,\n"
    "  partial FROM windows;\n",
    "ALTER TABLE probes ADD COLUMN last_instance_ns INTEGER;\n",
    "ALTER TABLE probes ADD COLUMN last_origin TEXT\n"
    "  CHECK (last_origin IS NULL OR json_valid(last_origin));\n",
    "PRAGMA writable_schema = ON;\n",
    "UPDATE sqlite_schema SET sql = replace(sql,\n"
    "  'status IN (''sent'', ''acked'', ''failed'', ''not_applied'')',\n"
    "  'status IN (''sent'', ''acked'', ''failed'', ''not_applied'', ''ambiguous'')')\n"
    "  WHERE type = 'table' AND name = 'commands';\n",
    "PRAGMA schema_version = " STORE_SCHEMA_VERSION_NEXT ";\n",
    "PRAGMA writable_schema = OFF;\n",
    NULL,
};

/*
 * Version 7 (issue 27): the history the dashboard shows beyond the ring. window_dqs: a
 * window's observed ΔQ as counts per bin, sparse (a JSON object "bin": count, only the bins
 * with instances), on the probe's grid coarsened to at most 256 bins (adjacent bins merged
 * in powers of two, exact), for the heatmap of the ΔQ over time; kept for its own retention
 * (dq_retention_hours), shorter than the summaries'. exemplars: per window the slowest
 * successful instances and a few failed ones with what identifies them (trace and instance
 * ids, node, attributes), for the way from a slow window to a slow request: one row per
 * window (a JSON array), with its slowest duration indexed.
 */
static const char *const migration7[] = {
    "CREATE TABLE window_dqs (\n"
    "  probe    TEXT NOT NULL REFERENCES probes(name) ON DELETE CASCADE ON UPDATE CASCADE,\n"
    "  start_ns INTEGER NOT NULL,\n"
    "  end_ns   INTEGER NOT NULL CHECK (end_ns >= start_ns),\n"
    "  k        INTEGER NOT NULL CHECK (k BETWEEN -10 AND 24),\n"
    "  bins     INTEGER NOT NULL CHECK (bins BETWEEN 1 AND 256),\n"
    "  n        INTEGER NOT NULL CHECK (n >= 0),\n"
    "  lost     REAL CHECK (lost IS NULL OR lost BETWEEN 0 AND 1),\n"
    "  counts   TEXT NOT NULL CHECK (json_valid(counts) AND json_type(counts) = 'object'),\n"
    "  PRIMARY KEY (probe, start_ns)\n"
    ");\n",
    /* one row per window: its exemplars as a JSON array (a window close writes one row per
       probe), with what the range queries look for: the slowest success, the failures */
    "CREATE TABLE exemplars (\n"
    "  probe    TEXT NOT NULL REFERENCES probes(name) ON DELETE CASCADE ON UPDATE CASCADE,\n"
    "  start_ns INTEGER NOT NULL,\n"
    "  slowest  REAL CHECK (slowest IS NULL OR slowest >= 0),\n"
    "  failed   INTEGER NOT NULL DEFAULT 0 CHECK (failed >= 0),\n"
    "  items    TEXT NOT NULL CHECK (json_valid(items) AND json_type(items) = 'array'),\n"
    "  PRIMARY KEY (probe, start_ns)\n"
    ");\n",
    /* the slowest of a range without reading every window of it */
    "CREATE INDEX exemplars_slowest ON exemplars (probe, slowest);\n",
    "CREATE VIEW window_dqs_v AS SELECT probe,\n"
    "  strftime('%Y-%m-%dT%H:%M:%fZ', start_ns / 1e9, 'unixepoch') AS start,\n"
    "  (end_ns - start_ns) / 1e6 AS period_ms, pow(2, k) AS width_ms, bins, n,\n"
    "  round(lost, 6) AS lost, counts FROM window_dqs;\n",
    "CREATE VIEW exemplars_v AS SELECT e.probe,\n"
    "  strftime('%Y-%m-%dT%H:%M:%fZ', e.start_ns / 1e9, 'unixepoch') AS window,\n"
    "  CAST(j.key AS INTEGER) AS rank, json_extract(j.value, '$.status') AS status,\n"
    "  round(json_extract(j.value, '$.duration') * 1e3, 3) AS duration_ms,\n"
    "  strftime('%Y-%m-%dT%H:%M:%fZ', json_extract(j.value, '$.end_ns') / 1e9, 'unixepoch')\n"
    "    AS ended, json_extract(j.value, '$.trace_id') AS trace_id,\n"
    "  json_extract(j.value, '$.instance_id') AS instance_id,\n"
    "  json_extract(j.value, '$.node') AS node, json_extract(j.value, '$.attrs') AS attrs\n"
    "  FROM exemplars e, json_each(e.items) j;\n",
    NULL,
};

const struct store__migration store__migrations[] = {
    {1, "probes, windows, events", migration1, false},
    {2, "triggers, investigations, hypotheses, commands, snapshots", migration2, false},
    {3, "verdicts healthy and aborted", migration3, true},
    {4, "probe servers and quiet windows, verdict overload", migration4, true},
    {5, "outcome diagrams", migration5, false},
    {6, "partial windows and runs, a probe's last instance and origin, commands ambiguous",
     migration6, true},
    {7, "window ΔQs and exemplars", migration7, false},
};

const int store__migration_count = (int)(sizeof store__migrations / sizeof store__migrations[0]);
