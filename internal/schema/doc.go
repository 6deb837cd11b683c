// Package schema compiles the JSON Schemas of tool inputs and checks
// documents against them, with messages that name each JSON path and the
// rule it broke. It is the one place that knows the validator library
// (santhosh-tekuri/jsonschema: JSON Schema 2020-12, the default dialect of
// MCP tool schemas, and drafts 4, 6, 7 and 2019-09 where a schema's $schema
// names one).
//
// It must never read a file or the network to resolve a reference, and
// never decide what a failed check means for a call (the engine does).
package schema
