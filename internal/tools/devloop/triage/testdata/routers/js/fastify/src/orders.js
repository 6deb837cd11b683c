async function parts(app) {
  app.get('/attachments', async () => []);
  app.get('/items', async () => []);
}

export default async function orders(app) {
  app.get('/', async () => []);
  app.post('/', async (req, reply) => reply.code(201).send({ id: '1' }));
  // An inline plugin without a prefix: its routes sit at its parent's.
  app.register(async (one) => {
    one.get('/:id', async (req) => ({ id: req.params.id }));
    one.put('/:id/status', async (req) => ({ id: req.params.id }));
  });
  app.register(parts, { prefix: '/:id' });
}
