import { Hono } from 'hono';

// A sub-app built as one chain, as Hono's RPC style writes it.
const orders = new Hono()
  .get('/', (c) => c.json([]))
  .post('/', (c) => c.json({ id: '1' }, 201))
  .get('/:id', (c) => c.json({ id: c.req.param('id') }));

// The statement form, chained.
orders.put('/:id/status', (c) => c.json({})).get('/:id/attachments', (c) => c.json([]));
orders.get('/:id/items', (c) => c.json([]));

export default orders;
