#!/usr/bin/env bash
# Regenerates the real Vitest JSON reports under testdata/vitest/ that the
# parse_vitest, hint_builder and triager tests (and the demo) read.
#
# It installs vitest@3 from npm into a throwaway directory, writes two small
# fixture suites there, runs `vitest run --reporter=json`, rewrites the
# absolute temp paths to the stable root /project/units/todo-be/ and
# pretty-prints the result so the committed files diff well.
#
#   bash scripts/gen-vitest-fixtures.sh            # writes testdata/vitest/*.json
#   VITEST_VERSION=3.2.4 bash scripts/gen-vitest-fixtures.sh
#
# Needs node and npm (Node 20 is fine for vitest 3). Vitest exits non-zero
# when tests fail; that is expected for the mixed suite and not an error here.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
out="$repo/testdata/vitest"
version="${VITEST_VERSION:-3}"
placeholder="/project/units/todo-be"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

npm install --silent --no-audit --no-fund --prefix "$tmp" "vitest@$version" >/dev/null
installed="$(node -p "require('$tmp/node_modules/vitest/package.json').version")"
echo "vitest $installed installed in $tmp"

# --- mixed suite: every outcome the parser and the hint builder must know ---
mixed="$tmp/mixed"
mkdir -p "$mixed/src"
cat >"$mixed/package.json" <<'JSON'
{ "name": "todo-be", "private": true, "type": "module" }
JSON
cat >"$mixed/vitest.config.mjs" <<'JS'
export default { test: { include: ['src/**/*.test.ts'], testTimeout: 5000 } };
JS
cat >"$mixed/src/todos.ts" <<'TS'
export interface Todo { id: string; title: string; done: boolean }

export function createTodo(id: string, title: string): Todo {
  return { id, title: title.trim(), done: false };
}

export function countOpen(todos: Todo[]): number {
  // Deliberately wrong: counts every todo, so the assertion below fails.
  return todos.length;
}
TS
cat >"$mixed/src/todos.test.ts" <<'TS'
import { describe, it, expect } from 'vitest';
import { createTodo, countOpen } from './todos';

describe('todos', () => {
  it('creates a todo with a trimmed title', () => {
    expect(createTodo('1', '  buy milk ').title).toBe('buy milk');
  });

  describe('countOpen', () => {
    it('counts only open todos', () => {
      const todos = [createTodo('1', 'a'), { ...createTodo('2', 'b'), done: true }];
      expect(countOpen(todos)).toBe(1);
    });

    it('returns zero for an empty list', () => {
      expect(countOpen([])).toBe(0);
    });

    describe('with nested filters', () => {
      it('matches the expected shape', () => {
        expect(createTodo('3', 'c')).toEqual({ id: '3', title: 'c', done: true });
      });
    });
  });

  it.skip('archives done todos', () => {
    expect(true).toBe(false);
  });

  it.todo('supports due dates');
});
TS
cat >"$mixed/src/errors.test.ts" <<'TS'
import { describe, it, expect } from 'vitest';

describe('error handling', () => {
  it('reads the title of a missing todo', () => {
    const todo = undefined as unknown as { title: { toUpperCase(): string } };
    expect(todo.title.toUpperCase()).toBe('X');
  });

  it('calls an undefined helper', () => {
    // @ts-expect-error the helper really does not exist
    expect(formatTodo('x')).toBe('x');
  });

  it('matches the stored snapshot', () => {
    expect({ id: '1', done: false }).toMatchInlineSnapshot(`
      {
        "done": true,
        "id": "1",
      }
    `);
  });
});
TS
cat >"$mixed/src/slow.test.ts" <<'TS'
import { it, expect } from 'vitest';

it('answers before the deadline', async () => {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  expect(1).toBe(1);
}, 100);

it('is fast enough', () => {
  expect(2 + 2).toBe(4);
});
TS
cat >"$mixed/src/broken-import.test.ts" <<'TS'
import { it, expect } from 'vitest';
import { missing } from './does-not-exist';

it('never runs because the import fails', () => {
  expect(missing).toBeDefined();
});
TS

# --- passing suite: a green run ---
passing="$tmp/passing"
mkdir -p "$passing/src"
cp "$mixed/package.json" "$mixed/vitest.config.mjs" "$mixed/src/todos.ts" "$passing/"
mv "$passing/todos.ts" "$passing/src/todos.ts"
cat >"$passing/src/todos.test.ts" <<'TS'
import { describe, it, expect } from 'vitest';
import { createTodo } from './todos';

describe('createTodo', () => {
  it('trims the title', () => {
    expect(createTodo('1', ' a ').title).toBe('a');
  });

  it('starts open', () => {
    expect(createTodo('1', 'a').done).toBe(false);
  });

  describe('ids', () => {
    it('keeps the id', () => {
      expect(createTodo('42', 'a').id).toBe('42');
    });
  });
});
TS
cat >"$passing/src/math.test.ts" <<'TS'
import { it, expect } from 'vitest';

it('adds', () => {
  expect(1 + 2).toBe(3);
});
TS

ln -s "$tmp/node_modules" "$mixed/node_modules"
ln -s "$tmp/node_modules" "$passing/node_modules"

run() { # run <suite dir> <report file> [extra vitest flags]
  # CI=true keeps Vitest from writing the mismatched inline snapshot back
  # into the test file, so the snapshot failure stays a failure.
  local dir="$1" report="$2"
  shift 2
  (cd "$dir" && CI=true "$tmp/node_modules/.bin/vitest" run --reporter=json --outputFile="$report" "$@" >/dev/null 2>&1) || true
  [ -s "$report" ] || { echo "vitest wrote no report for $dir" >&2; exit 1; }
}

run "$mixed" "$tmp/mixed.json"
# Same suite with per-test `location` ({line, column} of the test's
# declaration), which Vitest only records when asked.
run "$mixed" "$tmp/mixed-located.json" --includeTaskLocation
run "$passing" "$tmp/passing.json"

# Stable paths + pretty JSON. The placeholder replaces each suite's own root so
# both reports look like they came from units/todo-be.
# Stack frames inside vitest itself point into $tmp/node_modules; they become
# <placeholder>/node_modules so no temp name survives.
normalise() { # normalise <report> <suite dir> <dest>
  node - "$1" "$2" "$3" "$placeholder" "$tmp" <<'JS'
const fs = require('fs');
const [report, root, dest, placeholder, tmp] = process.argv.slice(2);
let text = fs.readFileSync(report, 'utf8');
for (const r of new Set([fs.realpathSync(root), root])) text = text.split(r).join(placeholder);
for (const t of new Set([fs.realpathSync(tmp), tmp])) text = text.split(t + '/node_modules').join(placeholder + '/node_modules');
if (text.includes(tmp)) throw new Error('temp path left in ' + report);
fs.writeFileSync(dest, JSON.stringify(JSON.parse(text), null, 2) + '\n');
JS
}

mkdir -p "$out"
for name in mixed mixed-located passing; do
  suite="$mixed"
  [ "$name" = passing ] && suite="$passing"
  normalise "$tmp/$name.json" "$suite" "$out/$name.json"
done
echo "wrote $out/{mixed,mixed-located,passing}.json (vitest $installed)"
