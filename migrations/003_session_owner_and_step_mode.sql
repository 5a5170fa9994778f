-- The principal that owns a session (bearer-token auth; NULL when auth is off) and the session's
-- step-mode switch (turns of the session pause for debugging unless a turn says otherwise).

ALTER TABLE sessions ADD COLUMN principal TEXT;
ALTER TABLE sessions ADD COLUMN step_mode INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_by_principal ON sessions(principal);
