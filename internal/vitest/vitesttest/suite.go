package vitesttest

import (
	"fmt"
	"strings"
	"testing"
)

// Suite is the TypeScript unit "todo-be" with one test (or file) per kind of
// failure real suites produce most, a passing test, a skipped one and a
// todo. Paths are relative to the unit directory. The orders test file's
// beforeAll connects to 127.0.0.1:$PGPORT, so run it with PGPORT set to a
// DeadPort: its file fails with "connect ECONNREFUSED".
var Suite = map[string]string{
	"package.json":      `{ "name": "todo-be", "private": true, "type": "module" }` + "\n",
	"vitest.config.mjs": "export default { test: { include: ['src/**/*.test.ts'], testTimeout: 5000 } };\n",
	"src/todos.ts": `export interface Todo { id: string; title: string; done: boolean }

export function countOpen(todos: Todo[]): number {
  // Deliberately wrong: counts every todo.
  return todos.length;
}

export function titleOf(todos: Todo[], id: string): string {
  const found = todos.find((t) => t.id === id);
  return (found as Todo).title.trim();
}

export function parseTodo(body: string): Todo {
  return JSON.parse(body) as Todo;
}

export function notify(cb?: () => void): void {
  (cb as () => void)();
}
`,
	"src/todos.test.ts": `import { describe, it, expect } from 'vitest';
import { countOpen, titleOf, parseTodo, notify } from './todos';

const todos = [{ id: '1', title: ' a ', done: false }, { id: '2', title: 'b', done: true }];

describe('todos', () => {
  it('counts only open todos', () => {
    expect(countOpen(todos)).toBe(1);
  });

  it('finds the title of a missing todo', () => {
    expect(titleOf(todos, '9')).toBe('');
  });

  it('parses the API answer', () => {
    expect(parseTodo('<!doctype html><html><body>Not Found</body></html>').id).toBe('1');
  });

  it('notifies the listener', () => {
    notify();
    expect(true).toBe(true);
  });

  it('formats a todo', () => {
    // @ts-expect-error the helper really does not exist
    expect(formatTodo(todos[0])).toBe('a');
  });

  it('keeps the list shape', () => {
    expect(todos.map((t) => t.id)).toMatchInlineSnapshot(` + "`" + `
      [
        "1",
        "3",
      ]
    ` + "`" + `);
  });

  it('keeps the first todo', () => {
    expect(todos[0]).toMatchInlineSnapshot(` + "`" + `
      {
        "done": true,
        "id": "1",
        "title": " a ",
      }
    ` + "`" + `);
  });

  it('trims nothing else', () => {
    expect('b').toBe('b');
  });

  it.skip('archives done todos', () => {
    expect(true).toBe(false);
  });

  it.todo('supports due dates');
});
`,
	"src/slow.test.ts": `import { it, expect } from 'vitest';

it('answers before the deadline', async () => {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  expect(1).toBe(1);
}, 100);
`,
	"src/orders.test.ts": `import { beforeAll, it, expect } from 'vitest';
import net from 'node:net';

function connect(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => { s.end(); resolve(); });
    s.on('error', reject);
  });
}

beforeAll(async () => {
  await connect(Number(process.env.PGPORT ?? 5432));
});

it('lists orders', () => {
  expect([]).toEqual([]);
});

it('creates an order', () => {
  expect(1).toBe(1);
});
`,
	"src/teardown.test.ts": `import { afterAll, it, expect } from 'vitest';

const pool = { close: undefined as unknown as () => void };

afterAll(() => {
  pool.close();
});

it('runs before the teardown', () => {
  expect(1).toBe(1);
});
`,
	"src/cache.test.ts": `import { beforeAll, describe, it, expect } from 'vitest';

describe('cache', () => {
  beforeAll(() => {
    throw new Error('REDIS_URL is not set');
  });

  it('hits', () => {
    expect(1).toBe(1);
  });
});
`,
	"src/broken-import.test.ts": `import { it, expect } from 'vitest';
import { missing } from './does-not-exist';

it('never runs because the import fails', () => {
  expect(missing).toBeDefined();
});
`,
	"src/syntax.test.ts": `import { it, expect } from 'vitest';

it('never runs because the file does not parse', () => {
  expect(1).toBe(1;
});
`,
}

// UnhandledSuite passes every test while a promise rejects outside any
// test's await: Vitest marks the run failed and prints the rejection.
var UnhandledSuite = map[string]string{
	"package.json":      Suite["package.json"],
	"vitest.config.mjs": Suite["vitest.config.mjs"],
	"src/save.test.ts": `import { it, expect } from 'vitest';

it('fires and forgets', () => {
  Promise.reject(new Error('write failed: disk quota exceeded'));
  expect(1).toBe(1);
});
`,
}

// LineOf returns the 1-based line of the first line of files[rel] that
// contains s.
func LineOf(t testing.TB, files map[string]string, rel, s string) int {
	t.Helper()
	for i, l := range strings.Split(files[rel], "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line with %q", rel, s)
	return 0
}

// Loc is "rel:line" of s in files[rel], for comparing with Failure.Thrown.
func Loc(t testing.TB, files map[string]string, rel, s string) string {
	t.Helper()
	return fmt.Sprintf("%s:%d", rel, LineOf(t, files, rel, s))
}
