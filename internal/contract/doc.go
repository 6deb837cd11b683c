// Package contract is the one reader of API contracts (contracts/<name>.json,
// .yaml or .yml): the toolhost format {name, version, endpoints}
// and OpenAPI 3.0 and 3.1 documents, in JSON or YAML, all read into one
// Contract — routes with the line they are declared on, request and
// response schemas, shared schemas by $ref — and the canonical hash of a
// contract file (sha256 of the JSON with sorted keys, no insignificant
// whitespace and numbers as written; YAML as the JSON it stands for).
// hash_contract, contract_bridge, diff_contract_vs_impl,
// validate_sdd_consistency and category_classifier all read contracts
// through it, so they never disagree on what a contract says.
//
// An OpenAPI contract split over files (path items, bodies, responses,
// parameters, schemas in files of their own, refs relative to the file that
// holds them) is read as one by Load, and its hash covers every file it
// reaches; each route is read under the servers' base path.
//
// A document with neither a route nor a type is refused whatever its format.
//
// It reads only the bytes handed to it and the files its caller's Reader
// gives it (the tools hand it the sandbox's); it must never open a file or
// write one itself.
package contract
