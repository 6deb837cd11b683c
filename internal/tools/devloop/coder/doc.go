// Package coder holds the Coder's tools: contract_bridge
// generates TypeScript or Go types and route constants from an API contract
// (contracts/<name>.json) into the unit's source dir, and append_coder_log
// keeps the unit's coder-log.ndjson.
//
// The generator is a pure function of the contract bytes — same contract,
// same output bytes — so a regenerated file only changes when the contract
// does, and its header carries the contract's canonical sha256 from
// contract.Hash (the one hash hash_contract records). Tools here write only
// through the agent's door (c.Files), never with os directly, and never
// check permissions or paths themselves: the engine and the sandbox do.
package coder
