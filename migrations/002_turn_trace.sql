-- The decisions made during a turn (classification, retry, breaker transition, timeout, abort,
-- fallback, skip, zombie, loop), in order, for GET /api/turns/:id/trace.

CREATE TABLE turn_trace (
  turn_id   TEXT NOT NULL REFERENCES turns(id),
  seq       INTEGER NOT NULL,
  at        INTEGER NOT NULL,
  kind      TEXT NOT NULL,
  call_id   TEXT,
  tool_name TEXT,
  detail    TEXT NOT NULL,
  PRIMARY KEY (turn_id, seq)
) WITHOUT ROWID;

-- child turns run inside a parent's tool call
ALTER TABLE turns ADD COLUMN parent_turn_id TEXT REFERENCES turns(id);
ALTER TABLE turns ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
