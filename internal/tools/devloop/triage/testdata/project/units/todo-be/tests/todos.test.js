import { describe, it, expect } from 'vitest';
import { createTodo, completeTodo } from '../src/todos.js';

describe('todos', () => {
  it('creates a todo', () => {
    expect(createTodo('milk').title).toBe('milk');
  });
  it('marks a todo done', () => {
    const t = completeTodo(createTodo('milk'));
    expect(t.done).toBe(true);
  });
  it('loads fixtures', () => {
    const fixture = undefined;
    return fixture.items.length;
  });
  it('answers within budget', () => {
    const flip = process.env.FLAKY_PASS === '1';
    expect(flip).toBe(true);
  });
});
