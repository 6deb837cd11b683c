// Package triage holds the Bug Triager's tools:
// extract_evidence and its alias verify_evidence, category_classifier,
// diff_contract_vs_impl and find_similar_bug, and the running summary
// triage/triage.json they keep.
//
// The triager reads the whole project (bugs/, Vitest reports, integration
// logs and runs, contracts, unit sources) but writes only triage/**, and only
// through the agent's sandbox door (c.Files). Tools here must never write
// anywhere else, never run a program, and never trust a cited path: every
// read goes through the project root, so a hostile citation cannot leave the
// project dir. Policy, schema and sandbox checks belong to the engine and are
// not repeated here.
package triage
