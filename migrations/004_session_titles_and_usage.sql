-- Sessions get a title (given, or the first user message cut to 80 characters) and are listed by
-- their owner, newest activity first; turns keep the token usage their provider reported.

ALTER TABLE sessions ADD COLUMN title TEXT;
CREATE INDEX sessions_by_owner_and_activity ON sessions(principal, updated_at, id);
ALTER TABLE turns ADD COLUMN input_tokens INTEGER;
ALTER TABLE turns ADD COLUMN output_tokens INTEGER;
