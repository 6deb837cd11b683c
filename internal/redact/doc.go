// Package redact is toolhost's one redactor: what it writes about a call
// (audit rows, logs, the timeline and events, run records, runtime state,
// and later trace spans) passes through it, so that a credential an agent
// put in a command line, a header or a URL is not kept on disk.
//
// It redacts by key (the value under a secret-looking key, in JSON or as
// NAME=value, NAME: value, --name value: password, token, secret, api_key,
// cookie, credential, and the words pass, pwd, pin, auth in any case —
// DB_PASS, userPin, X-Api-Key) and by value (bearer and basic credentials,
// URL userinfo passwords, curl -u user:password, private key blocks, and
// the formats of GitHub, Anthropic, OpenAI, AWS, Slack, Google, Stripe,
// GitLab, npm and Hugging Face tokens and of JWTs).
//
// What a human decides on — the arguments of a call waiting for
// confirmation, the diff of what it would write — goes through
// PreviewJSON and PreviewString instead: they hide a secret only when it is
// plain text (letters, digits and a few inert symbols), which in no shell
// context can be more than a literal word piece, and show every other
// value as it is (`API_TOKEN="$(touch hidden)"` stays whole); the commands
// a call runs are shown exactly, never redacted. Hiding any part of what
// runs would have the human approve something they did not see.
//
// It must never change what a tool does or returns to the caller: it is
// applied only to what toolhost keeps and shows, and text without any
// trigger is returned unchanged without running a regular expression.
package redact
