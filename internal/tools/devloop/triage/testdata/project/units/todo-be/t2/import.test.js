import { it, expect } from 'vitest';
import { slugify } from 'slugify-lite';

it('slugifies titles', () => {
  expect(slugify('Buy Milk')).toBe('buy-milk');
});
