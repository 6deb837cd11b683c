// Package contract reads API contracts (contracts/<name>.json, SPEC §11) and
// computes their canonical hash: sha256 of the JSON with sorted keys, no
// insignificant whitespace and numbers as written. hash_contract,
// contract_bridge and validate_sdd_consistency all use this one function.
//
// It only reads; it must never write a file.
package contract
