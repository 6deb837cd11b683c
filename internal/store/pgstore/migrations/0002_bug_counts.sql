-- How many bugs each (status, severity, unit) holds, kept in the same
-- transaction as every change of a bug: bug_list's total is a sum over
-- these few rows, not a count over the matching bugs, so it costs the same
-- at any number of bugs.
CREATE TABLE bug_counts (
	pid      text    NOT NULL,
	status   text    NOT NULL,
	sev_rank integer NOT NULL,
	unit_id  text    NOT NULL,
	n        bigint  NOT NULL,
	PRIMARY KEY (pid, status, sev_rank, unit_id)
);
INSERT INTO bug_counts (pid, status, sev_rank, unit_id, n)
	SELECT pid, status, sev_rank, unit_id, count(*) FROM bugs GROUP BY pid, status, sev_rank, unit_id;
