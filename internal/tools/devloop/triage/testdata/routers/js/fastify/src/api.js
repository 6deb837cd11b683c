import orders from './orders.js';

// Plugins registered inside plugins: each prefix adds to its parent's.
export default async function api(app) {
  app.register(async (v1) => {
    v1.register(orders, { prefix: '/orders' });
  }, { prefix: '/v1' });
}
