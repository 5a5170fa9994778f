-- A tool call a person rejected has a result with status 'rejected' (DESIGN.md §8.3). SQLite cannot
-- change a CHECK constraint in place, so history_blocks is rebuilt with the wider one.

CREATE TABLE history_blocks_new (
  session_id TEXT NOT NULL REFERENCES sessions(id),
  position   INTEGER NOT NULL,
  turn_id    TEXT NOT NULL REFERENCES turns(id),
  role       TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
  kind       TEXT NOT NULL CHECK (kind IN ('text', 'thinking', 'tool_call', 'tool_response')),
  call_id    TEXT,
  tool_name  TEXT,
  status     TEXT CHECK (status IS NULL OR status IN ('complete', 'error', 'cancelled', 'timeout', 'interrupted', 'rejected')),
  content    TEXT NOT NULL,
  response_position INTEGER,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, position)
) WITHOUT ROWID;
INSERT INTO history_blocks_new
  SELECT session_id, position, turn_id, role, kind, call_id, tool_name, status, content, response_position, created_at
  FROM history_blocks;
DROP TABLE history_blocks;
ALTER TABLE history_blocks_new RENAME TO history_blocks;
CREATE UNIQUE INDEX history_one_block_per_call ON history_blocks(session_id, kind, call_id)
  WHERE call_id IS NOT NULL;
CREATE INDEX history_by_turn ON history_blocks(turn_id, kind);
