-- Sessions, turns, canonical history blocks and the per-turn event log.

CREATE TABLE sessions (
  id            TEXT PRIMARY KEY,
  agent_id      TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  -- next free history position; tool results have positions reserved when their calls are written
  next_position INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE turns (
  id              TEXT PRIMARY KEY,
  session_id      TEXT NOT NULL REFERENCES sessions(id),
  agent_id        TEXT NOT NULL,
  provider        TEXT NOT NULL,
  model           TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('running', 'completed', 'aborted', 'interrupted')),
  stop_reason     TEXT,
  abort_reason    TEXT,
  started_at      INTEGER NOT NULL,
  ended_at        INTEGER,
  tool_call_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX turns_by_session ON turns(session_id, started_at);
CREATE INDEX turns_by_status ON turns(status);

CREATE TABLE history_blocks (
  session_id TEXT NOT NULL REFERENCES sessions(id),
  position   INTEGER NOT NULL,
  turn_id    TEXT NOT NULL REFERENCES turns(id),
  role       TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
  kind       TEXT NOT NULL CHECK (kind IN ('text', 'thinking', 'tool_call', 'tool_response')),
  call_id    TEXT,
  tool_name  TEXT,
  status     TEXT CHECK (status IS NULL OR status IN ('complete', 'error', 'cancelled', 'timeout', 'interrupted')),
  content    TEXT NOT NULL,
  -- on tool_call rows: the position reserved for its response, so results read back in call order
  response_position INTEGER,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, position)
) WITHOUT ROWID;
-- one call and one response per canonical call id: the store is idempotent per id
CREATE UNIQUE INDEX history_one_block_per_call ON history_blocks(session_id, kind, call_id)
  WHERE call_id IS NOT NULL;
CREATE INDEX history_by_turn ON history_blocks(turn_id, kind);

CREATE TABLE turn_events (
  turn_id TEXT NOT NULL REFERENCES turns(id),
  seq     INTEGER NOT NULL,
  type    TEXT NOT NULL,
  at      INTEGER NOT NULL,
  payload TEXT NOT NULL,
  PRIMARY KEY (turn_id, seq)
) WITHOUT ROWID;
