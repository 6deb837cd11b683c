-- Which agent each session id of a project belongs to (confirm.Claim):
-- a confirmation is asked, decided and used inside one agent's session.
CREATE TABLE session_claims (
	pid        text        NOT NULL,
	session_id text        NOT NULL,
	agent      text        NOT NULL,
	since      timestamptz NOT NULL,
	seen       timestamptz NOT NULL,
	PRIMARY KEY (pid, session_id)
);
