// Package persist holds the five persistence tools every agent has:
// write_todolist, update_todo_item, update_runtime_state, timeline_append and
// record_memory.
//
// State lives in agent-state/<agent>-*.json and memory/devloop/<agent>/;
// every read-modify-write holds the file's cross-process lock through the
// sandbox door, so several toolhost processes never lose an update. Tools
// here never check permissions or paths themselves: the engine and the
// sandbox do.
package persist
