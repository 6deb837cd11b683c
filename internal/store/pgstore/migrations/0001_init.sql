-- The shared state of toolhost's projects, one tenant per project id (pid).
-- Every append takes its place from a head row locked FOR UPDATE, so the
-- numbers of a project's log are strictly increasing in commit order; every
-- write carries a key (idem, *_key) generated once per logical write, so a
-- retry after a lost answer finds its own row instead of writing another.

CREATE TABLE heads (
	pid   text   NOT NULL,
	log   text   NOT NULL,          -- timeline, events, audit, bugs
	n     bigint NOT NULL DEFAULT 0, -- last number given
	seq   bigint NOT NULL DEFAULT 0, -- audit: last chain seq
	hash  bytea,                     -- audit: sha256 of the last line
	chain text   NOT NULL DEFAULT '', -- audit: the chain id
	PRIMARY KEY (pid, log)
);

CREATE TABLE timeline (
	pid  text   NOT NULL,
	seq  bigint NOT NULL,
	idem text   NOT NULL,
	line text   NOT NULL, -- the entry as the file store writes it
	PRIMARY KEY (pid, seq),
	UNIQUE (pid, idem)
);

CREATE TABLE events (
	pid  text   NOT NULL,
	seq  bigint NOT NULL,
	idem text   NOT NULL,
	line text   NOT NULL,
	PRIMARY KEY (pid, seq),
	UNIQUE (pid, idem)
);

CREATE TABLE audit (
	pid    text   NOT NULL,
	n      bigint NOT NULL,  -- line number in the trail
	seq    bigint,           -- chain seq (NULL: a line outside the chain, imported)
	idem   text,
	file   text   NOT NULL,  -- the file of the line in the file layout
	line   text   NOT NULL,  -- the line as hashed
	ts     timestamptz,
	agent  text,
	tool   text,
	status text,
	PRIMARY KEY (pid, n),
	UNIQUE (pid, idem)
);
CREATE INDEX audit_ts ON audit (pid, ts);

CREATE TABLE bugs (
	pid         text    NOT NULL,
	num         integer NOT NULL,
	fingerprint text    NOT NULL,
	status      text    NOT NULL,
	sev_rank    integer NOT NULL,
	unit_id     text    NOT NULL,
	open_key    text,
	last_key    text,
	doc         text    NOT NULL, -- the bug as bugs/BUG-NNNN.json holds it
	PRIMARY KEY (pid, num),
	UNIQUE (pid, fingerprint)
);
CREATE INDEX bugs_list ON bugs (pid, status, sev_rank, num);
CREATE INDEX bugs_unit ON bugs (pid, unit_id, status, sev_rank, num);

CREATE TABLE agent_state (
	pid      text   NOT NULL,
	agent    text   NOT NULL,
	kind     text   NOT NULL, -- todo, runtime
	version  bigint NOT NULL,
	last_key text   NOT NULL,
	doc      text   NOT NULL,
	PRIMARY KEY (pid, agent, kind)
);

CREATE TABLE confirmations (
	pid        text        NOT NULL,
	id         text        NOT NULL,
	session_id text        NOT NULL,
	tool       text        NOT NULL,
	created_at timestamptz NOT NULL,
	last_key   text        NOT NULL,
	doc        text        NOT NULL,
	PRIMARY KEY (pid, id)
);
CREATE INDEX confirmations_call ON confirmations (pid, session_id, tool);

CREATE TABLE request_state_keys (
	pid text  PRIMARY KEY,
	key bytea NOT NULL
);

CREATE TABLE redeemed_states (
	pid   text        NOT NULL,
	nonce text        NOT NULL,
	exp   timestamptz NOT NULL,
	at    timestamptz NOT NULL,
	idem  text        NOT NULL,
	PRIMARY KEY (pid, nonce)
);
