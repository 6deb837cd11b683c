package vitesttest

import (
	"fmt"
	"strings"
)

// LargeSuite is a TypeScript unit whose run fails failures tests (a
// multiple of 100, spread over files of 100 tests each) with few causes, as
// a regression in shared code makes them: 80% the same assertion on
// different values, 15% one TypeError thrown in src/cart.ts, 5% one
// ReferenceError; plus a passing test per file. Its report is the size a
// large suite's is (a 5,000-failure run is about 800 KB of parse_vitest
// result), for the tests that the results of the tools stay bounded.
func LargeSuite(failures int) map[string]string {
	files := map[string]string{
		"package.json":      `{ "name": "cart", "private": true, "type": "module" }` + "\n",
		"vitest.config.mjs": "export default { test: { include: ['src/**/*.test.ts'] } };\n",
		"src/cart.ts": `export interface Line { sku: string; qty: number; price?: { cents: number } }

export function total(lines: Line[]): number {
  // Deliberately wrong: ignores the quantity.
  return lines.reduce((sum, l) => sum + (l.price as { cents: number }).cents, 0);
}
`,
	}
	for f := range failures / 100 {
		var b strings.Builder
		fmt.Fprintf(&b, "import { describe, it, expect } from 'vitest';\nimport { total } from './cart';\n\ndescribe('cart %d', () => {\n", f)
		b.WriteString("  it('totals an empty cart', () => { expect(total([])).toBe(0); });\n")
		for i := range 100 {
			n := f*100 + i
			switch {
			case i < 80:
				fmt.Fprintf(&b, "  it('totals %d items of sku-%d', () => { expect(total([{ sku: 'sku-%d', qty: %d, price: { cents: 100 } }])).toBe(%d); });\n", i+2, n, n, i+2, (i+2)*100)
			case i < 95:
				fmt.Fprintf(&b, "  it('totals sku-%d without a price', () => { expect(total([{ sku: 'sku-%d', qty: 1 }])).toBe(0); });\n", n, n)
			default:
				fmt.Fprintf(&b, "  it('applies discount %d', () => { expect(total([]) - discount%d).toBe(0); });\n", n, n)
			}
		}
		b.WriteString("});\n")
		files[fmt.Sprintf("src/cart%03d.test.ts", f)] = b.String()
	}
	return files
}
