// Package registry holds the tools a server offers: Add panics on a duplicate
// or invalid name and on a schema that does not compile (like
// database/sql.Register), Lookup finds a tool by name, List returns them in
// their stable binding order. Schemas are compiled once, here.
//
// The registry must never run a tool or decide permissions; that is the
// engine's job.
package registry
