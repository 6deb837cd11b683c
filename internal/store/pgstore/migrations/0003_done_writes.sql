-- The writes done, by the key each logical write carries, with what the
-- write answered, stored in the write's own transaction. A try whose
-- commit went out and whose answer was lost is tried again with its key:
-- it finds it here and answers the same instead of writing again, even
-- when others changed the row in between (the keys the rows kept, their
-- last writer's, could not tell that). Pruned after a day.
CREATE TABLE done_writes (
	pid    text        NOT NULL,
	key    text        NOT NULL,
	result text        NOT NULL,
	at     timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (pid, key)
);
CREATE INDEX done_writes_at ON done_writes (pid, at);

ALTER TABLE bugs DROP COLUMN open_key, DROP COLUMN last_key;
ALTER TABLE agent_state DROP COLUMN last_key;
