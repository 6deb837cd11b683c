// Package agents loads the agent templates (configs/agents.json): each
// agent's tool policy, sandbox cwd template and write allow-list.
//
// It only parses and answers questions about the templates; it must never
// decide a call's fate (that is the engine's job).
package agents
