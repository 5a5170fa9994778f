-- History and events are stored in runs: a row of history_blocks holds the blocks of one turn that one
-- commit wrote, a row of turn_events the events of one turn that one commit wrote. A row cost about the
-- same whatever it held (its B-tree inserts, its index entries, its foreign-key lookups), and a tool call
-- wrote four (its call, its result, tool_start, tool_result): in-process, those inserts were about half
-- of a turn's time. A live session (src/history/live-session.ts) is what gives every call one result
-- slot and one result; the database keeps what it is given, run by run.
--
-- history_blocks: `position` is the lowest position in the run (a run need not be contiguous: a call's
-- result lands in the slot reserved for it when the call was stored), `tool_calls` how many of its
-- blocks are calls, `blocks` one JSON array a line:
--   [position, role, kind, call_id, tool_name, status, response_position, created_at, content]
-- turn_events: `seq` is the first event's, `last_seq` the last's, `payload` one JSON document a line
-- (JSON text never holds a raw line break). An event's type and time are inside it.
-- Existing rows become runs of one. A content that is not JSON (reins writes none; another program might)
-- is kept as a JSON string rather than stopping the migration, and with it start-up.

CREATE TABLE history_blocks_new (
  session_id TEXT NOT NULL REFERENCES sessions(id),
  position   INTEGER NOT NULL,
  turn_id    TEXT NOT NULL REFERENCES turns(id),
  tool_calls INTEGER NOT NULL CHECK (tool_calls >= 0),
  blocks     TEXT NOT NULL,
  PRIMARY KEY (session_id, position)
) WITHOUT ROWID;
INSERT INTO history_blocks_new (session_id, position, turn_id, tool_calls, blocks)
  SELECT session_id, position, turn_id, kind = 'tool_call',
         json_array(position, role, kind, call_id, tool_name, status, response_position, created_at,
                    CASE WHEN json_valid(content) THEN json(content) ELSE content END)
  FROM history_blocks;
DROP TABLE history_blocks;
ALTER TABLE history_blocks_new RENAME TO history_blocks;
CREATE INDEX history_by_turn ON history_blocks(turn_id, tool_calls);

CREATE TABLE turn_events_new (
  turn_id  TEXT NOT NULL REFERENCES turns(id),
  seq      INTEGER NOT NULL,
  last_seq INTEGER NOT NULL CHECK (last_seq >= seq),
  payload  TEXT NOT NULL,
  PRIMARY KEY (turn_id, seq)
) WITHOUT ROWID;
INSERT INTO turn_events_new (turn_id, seq, last_seq, payload)
  SELECT turn_id, seq, seq, payload FROM turn_events;
DROP TABLE turn_events;
ALTER TABLE turn_events_new RENAME TO turn_events;
-- An event's sequence number is written once: a run may not overlap one stored before it. Runs of a
-- turn never overlap, so the one to compare with is the last that starts at or before the new run's end.
CREATE TRIGGER turn_events_written_once BEFORE INSERT ON turn_events
  WHEN (SELECT last_seq FROM turn_events WHERE turn_id = NEW.turn_id AND seq <= NEW.last_seq
        ORDER BY seq DESC LIMIT 1) >= NEW.seq
BEGIN
  SELECT RAISE(ABORT, 'an event of this turn with one of these sequence numbers is stored already');
END;
