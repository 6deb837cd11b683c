// Package secrets owns the per-user directory where toolhost keeps what only
// the human side may hold: the bearer token of `serve --http`, and any other
// credential a toolhost process needs but must not carry in its argv or its
// environment (both are readable by any process of the same user through
// /proc/PID/cmdline and /proc/PID/environ).
//
// The directory is created 0700 and its files 0600, replaced atomically. It
// is outside every project, and the confinement of the commands an agent
// starts makes it unreadable to them, so a secret kept here is out of reach
// of a confined command even though that command runs as the same user.
//
// This package never prints, logs or returns a secret to anything but its
// caller, and never writes anywhere but Dir.
package secrets
