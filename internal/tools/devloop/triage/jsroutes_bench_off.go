//go:build bench_no_routes

package triage

// Built with -tags bench_no_routes (only BenchmarkStartCost does) the
// JavaScript route reader and its parsers (esbuild, tdewolff/parse) are left
// out, so the benchmark can weigh what they cost a serve that never reads
// routes; diff_contract_vs_impl then reads Go units only.
func jsAnalyze(map[string][]byte, map[string][]byte) *analysis { return &analysis{} }
